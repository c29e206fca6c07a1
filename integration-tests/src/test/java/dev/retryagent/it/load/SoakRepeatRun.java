package dev.retryagent.it.load;

import dev.retryagent.it.harness.Jdks;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;

/**
 * Runs the soak again and again, for a rare difference in its counts: a {@code main}, not a test
 * (its name keeps it out of failsafe's). Each run's figures go to {@code target/soak/NAME.txt}
 * (with the counts of a route that differs, see {@link SoakFigures}); the first run whose counts
 * differ keeps its output and dead letters in {@code target/soak/differs-N/} and ends the loop.
 *
 * <p>Arguments: {@code jdk17|jdk25}, the seconds of each run, the number of runs at most. The
 * harness's system properties ({@code retryagent.jar}, {@code retryagent.version}, {@code
 * retryagent.okhttp.dir}, {@code retryagent.jdk25.home}) as failsafe sets them.
 */
public final class SoakRepeatRun {
  private SoakRepeatRun() {}

  public static void main(String[] args) throws Exception {
    boolean virtual = args[0].equals("jdk25");
    Duration load = Duration.ofSeconds(Long.parseLong(args[1]));
    int runs = Integer.parseInt(args[2]);
    for (int i = 1; i <= runs; i++) {
      Path dir = Files.createTempDirectory("soak-repeat-");
      String name = (virtual ? "jdk25-virtual-" : "jdk17-platform-") + i;
      SoakRun.Outcome o =
          virtual
              ? SoakRun.run(
                  name,
                  Jdks.jdk25(),
                  "virtual",
                  load,
                  dir,
                  "-XX:FlightRecorderOptions:stackdepth=256")
              : SoakRun.run(name, Jdks.jdk17(), "platform", load, dir);
      SoakFigures.write(o);
      String differs = null;
      for (String route : SoakConfig.ROUTES) {
        long calls = o.app("jmx." + route + ".Calls");
        if (calls != o.app("app." + route + ".calls")
            || o.app("jmx." + route + ".Attempts") != o.server(route, SoakServer.REQUESTS)
            || calls != o.server(route, SoakServer.FIRST) + o.deadLetters(route, "no-attempt")) {
          differs = route;
        }
      }
      System.out.println(
          "run " + i + ": " + (differs == null ? "counts equal" : differs + " differs"));
      if (differs != null) {
        Path keep = Path.of("target", "soak", "differs-" + i);
        Files.createDirectories(keep);
        Files.writeString(keep.resolve("stdout.txt"), o.result().stdout());
        Files.writeString(keep.resolve("stderr.txt"), o.result().stderr());
        Path letters = dir.resolve("dead-letters.jsonl");
        if (Files.exists(letters)) {
          Files.copy(
              letters, keep.resolve("dead-letters.jsonl"), StandardCopyOption.REPLACE_EXISTING);
        }
        Files.writeString(keep.resolve("server.txt"), o.server().toString());
        return;
      }
    }
  }
}
