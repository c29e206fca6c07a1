package dev.retryagent.it.apps;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.net.SocketException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;

/**
 * Runs the calls of a scenario app: {@code NAME|API|METHOD|URL|HEADERS|BODY} each, where {@code
 * NAME} is {@code SCENARIO.CALL}. The calls of one scenario run one after the other; scenarios run
 * {@value #LANES} at a time (each has its own server). What a call prints is kept together.
 */
final class ScenarioCalls {
  static final int LANES = 4;

  /**
   * One call of the client: prints {@code NAME.status=}, {@code NAME.body=} or an error ({@code
   * NAME.error=}, {@code NAME.message=}, {@code NAME.cause=}: class names and the message).
   */
  @FunctionalInterface
  interface Caller {
    void call(String[] spec, StringBuilder out) throws Exception;
  }

  private ScenarioCalls() {}

  static void run(List<String> calls, Caller caller) throws InterruptedException {
    Map<String, List<String[]>> scenarios = new LinkedHashMap<>();
    for (String c : calls) {
      String[] spec = c.split("\\|", -1);
      String scenario = spec[0].substring(0, spec[0].indexOf('.'));
      scenarios.computeIfAbsent(scenario, k -> new ArrayList<>()).add(spec);
    }
    ExecutorService lanes = Executors.newFixedThreadPool(LANES);
    for (List<String[]> scenario : scenarios.values()) {
      lanes.execute(
          () -> {
            for (String[] spec : scenario) {
              StringBuilder out = new StringBuilder();
              long start = System.nanoTime();
              try {
                caller.call(spec, out);
              } catch (Exception e) {
                line(out, spec[0] + ".error", e.getClass().getName());
                line(out, spec[0] + ".message", String.valueOf(e.getMessage()).replace('\n', ' '));
                line(
                    out,
                    spec[0] + ".cause",
                    e.getCause() == null ? "" : e.getCause().getClass().getName());
              }
              line(out, spec[0] + ".millis", (System.nanoTime() - start) / 1_000_000);
              synchronized (System.out) {
                System.out.print(out);
                System.out.flush();
              }
            }
          });
    }
    lanes.shutdown();
    lanes.awaitTermination(5, TimeUnit.MINUTES);
  }

  /**
   * Runs the calls read from stdin, one a line, each once the previous is over, until the end of
   * input or {@code exit}; prints {@code ready=PID} first. For tests that act on the running JVM
   * between calls (a reload), with a client made before the first.
   */
  static void runFromStdin(Caller caller) throws IOException, InterruptedException {
    System.out.println("ready=" + ProcessHandle.current().pid());
    BufferedReader in =
        new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    for (String l = in.readLine(); l != null && !l.equals("exit"); l = in.readLine()) {
      run(List.of(l.trim()), caller);
    }
  }

  static void line(StringBuilder out, String key, Object value) {
    out.append(key).append('=').append(value).append(System.lineSeparator());
  }

  /**
   * The stream of a body {@code oneshot-reset:TEXT}: {@code TEXT}, then a reset, as an upload
   * relayed from a connection that broke (to the client, a failure while the entity is written).
   */
  static InputStream resetAfter(String text) {
    byte[] bytes = text.getBytes(StandardCharsets.UTF_8);
    return new InputStream() {
      private int next;

      @Override
      public int read() throws IOException {
        if (next == bytes.length) {
          throw new SocketException("Connection reset");
        }
        return bytes[next++] & 0xff;
      }
    };
  }

  /** {@code Name=value;Name2=value2} as pairs. */
  static List<String[]> headers(String spec) {
    List<String[]> h = new ArrayList<>();
    if (!spec.isEmpty()) {
      for (String header : spec.split(";")) {
        h.add(header.split("=", 2));
      }
    }
    return h;
  }
}
