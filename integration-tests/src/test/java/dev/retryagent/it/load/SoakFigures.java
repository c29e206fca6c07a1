package dev.retryagent.it.load;

import dev.retryagent.it.load.Samples.Sample;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;

/**
 * The figures of one soak, for {@code docs/guarantees.md}: printed, and written to {@code
 * target/soak/NAME.txt}.
 */
final class SoakFigures {
  private SoakFigures() {}

  static void write(SoakRun.Outcome o) {
    String text = text(o);
    System.out.println(text);
    try {
      Path dir = Path.of("target", "soak");
      Files.createDirectories(dir);
      Files.writeString(dir.resolve(o.name() + ".txt"), text);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private static String text(SoakRun.Outcome o) {
    StringBuilder b = new StringBuilder();
    line(
        b,
        "soak %s: load %ds (ran %sms), %d configuration rewrites",
        o.name(),
        o.load().toSeconds(),
        o.result().value("elapsedMillis"),
        o.reloadsWritten());
    long calls = 0;
    long attempts = 0;
    for (String route : SoakConfig.ROUTES) {
      String j = "jmx." + route + ".";
      calls += o.app(j + "Calls");
      attempts += o.app(j + "Attempts");
      line(
          b,
          "  %-10s calls=%d attempts=%d retries=%d succeeded=%d failed=%d gave-up=%d"
              + " (attempts=%d budget=%d circuit-open=%d rate-limited=%d not-idempotent=%d"
              + " non-retryable=%d) breaker-opens=%d budget-rejections=%d rate-limit waits=%d"
              + " rejections=%d | server: requests=%d retries=%d client-resends=%d"
              + " 503=%d 500=%d 429=%d 200=%d",
          route,
          o.app(j + "Calls"),
          o.app(j + "Attempts"),
          o.app(j + "Retries"),
          o.app(j + "Succeeded"),
          o.app(j + "Failed"),
          o.app(j + "GaveUp"),
          o.app(j + "GaveUpAttempts"),
          o.app(j + "GaveUpBudget"),
          o.app(j + "GaveUpCircuitOpen"),
          o.app(j + "GaveUpRateLimited"),
          o.app(j + "GaveUpNotIdempotent"),
          o.app(j + "GaveUpNonRetryable"),
          o.app(j + "BreakerOpens"),
          o.app(j + "BudgetRejections"),
          o.app(j + "RateLimitWaits"),
          o.app(j + "RateLimitRejections"),
          o.server(route, SoakServer.REQUESTS),
          o.server(route, SoakServer.RETRIES),
          o.server(route, SoakServer.CLIENT_RESENDS),
          o.server(route, "status.503"),
          o.server(route, "status.500"),
          o.server(route, "status.429"),
          o.server(route, "status.200"));
      if (differs(o, route)) {
        differences(b, o, route);
      }
    }
    line(b, "  total calls=%d attempts=%d", calls, attempts);
    Samples s = Samples.parse(o.result().stdout());
    if (s.all().size() >= 3) {
      summary(b, "threads", s.middleThird(), s.lastThird(), Sample::threads, 1);
      summary(b, "agent threads", s.middleThird(), s.lastThird(), Sample::agentThreads, 1);
      summary(b, "heap MiB after GC", s.middleThird(), s.lastThird(), Sample::heapBytes, 1 << 20);
      line(
          b,
          "  slope after warm-up: %.2f threads/min, %.3f MiB/min (%d samples, every %ds)",
          Samples.slopePerMinute(s.afterWarmUp(), Sample::threads),
          Samples.slopePerMinute(s.afterWarmUp(), Sample::heapBytes) / (1 << 20),
          s.all().size(),
          s.all().size() > 1 ? (s.all().get(1).millis() - s.all().get(0).millis()) / 1000 : 0);
    }
    List<String> pools = o.result().stdout().lines().filter(l -> l.startsWith("pools=")).toList();
    if (pools.size() >= 3) {
      line(b, "  threads by pool after warm-up: %s", pools.get(pools.size() / 3).substring(6));
      line(b, "  threads by pool at the end:    %s", pools.get(pools.size() - 1).substring(6));
    }
    String pinned = o.result().value("pinned.total");
    if (pinned != null) {
      line(
          b,
          "  pinned virtual threads (JFR): %s, with an agent frame: %s, waiting in the agent: %s;"
              + " control (pinned on purpose): %s, classified as a wait in the agent: %s",
          pinned,
          o.result().value("pinned.agent"),
          o.result().value("pinned.agentWait"),
          o.result().value("pinned.control"),
          o.result().value("pinned.controlAsWait"));
      o.result()
          .stdout()
          .lines()
          .filter(l -> l.startsWith("pinned.event="))
          .limit(5)
          .forEach(l -> line(b, "    %s", l));
    }
    return b.toString();
  }

  /** A count SoakIT compares per route (calls, attempts) is not what the others counted. */
  private static boolean differs(SoakRun.Outcome o, String route) {
    long calls = o.app("jmx." + route + ".Calls");
    return calls != o.app("app." + route + ".calls")
        || o.app("jmx." + route + ".Attempts") != o.server(route, SoakServer.REQUESTS)
        || calls != o.server(route, SoakServer.FIRST) + o.deadLetters(route, "no-attempt");
  }

  /**
   * What is known of a route whose counts differ, to tell which call was counted apart: the calls
   * the app started and heard again, the server's first attempts, the agent's give-ups by reason,
   * the app's outcomes and the dead letters by kind.
   */
  private static void differences(StringBuilder b, SoakRun.Outcome o, String route) {
    line(
        b,
        "    COUNTS DIFFER: app calls=%d started=%d heard again=%d | server first=%d |"
            + " dead letters=%d (no attempt %d, refused later %d)",
        o.app("app." + route + ".calls"),
        o.app("app." + route + ".started"),
        o.app("app." + route + ".callbacksAgain"),
        o.server(route, SoakServer.FIRST),
        o.deadLetters(route, "total"),
        o.deadLetters(route, "no-attempt"),
        o.deadLetters(route, "refused-later"));
    List<String> out = o.result().stdout().lines().toList();
    line(b, "    agent give-ups: %s", joined(out, "jmx." + route + ".GaveUp"));
    line(b, "    app outcomes:   %s", joined(out, "app." + route + ".outcome."));
    StringBuilder letters = new StringBuilder();
    String prefix = route + ".letter.";
    o.deadLetters()
        .forEach(
            (k, n) -> {
              if (k.startsWith(prefix)) {
                letters.append(k.substring(prefix.length())).append('=').append(n).append("; ");
              }
            });
    line(b, "    dead letters:   %s", letters);
  }

  /** The {@code key=value} lines of {@code out} under {@code prefix}, not 0, prefix cut. */
  private static String joined(List<String> out, String prefix) {
    StringBuilder j = new StringBuilder();
    for (String l : out) {
      if (l.startsWith(prefix) && !l.endsWith("=0")) {
        j.append(l.substring(prefix.length())).append("; ");
      }
    }
    return j.toString();
  }

  private static void summary(
      StringBuilder b,
      String what,
      List<Sample> middle,
      List<Sample> last,
      java.util.function.ToDoubleFunction<Sample> f,
      double unit) {
    line(
        b,
        "  %s: middle third min/median/max %.1f/%.1f/%.1f, last third %.1f/%.1f/%.1f",
        what,
        Samples.min(middle, f) / unit,
        Samples.median(middle, f) / unit,
        Samples.max(middle, f) / unit,
        Samples.min(last, f) / unit,
        Samples.median(last, f) / unit,
        Samples.max(last, f) / unit);
  }

  private static void line(StringBuilder b, String format, Object... args) {
    b.append(String.format(Locale.ROOT, format, args)).append('\n');
  }
}
