package dev.retryagent.it.differential;

import dev.retryagent.it.harness.ForkedJvm;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Pattern;

/**
 * What the application observed in one call of one forked run, and what its server saw: the outcome
 * ({@code status 200}, {@code exception CLASS: MESSAGE}, or {@code none within N ms}), the kind of
 * thread that delivered it ({@link ThreadKinds}), the elapsed time, further reports, what was
 * logged about its server, the server's request count and (with the agent) the agent's log lines
 * that name the server. The server's port is replaced by {@code PORT} everywhere, so runs compare.
 *
 * @param suppressed how many suppressed exceptions the failure the application got carried
 * @param followUp what the application's follow-up call got, empty for none
 * @param shapes each request the server recorded, as {@code METHOD key=KEY body=HASH} (the attempt
 *     header left out): what must not change from one attempt to the next
 */
record Observation(
    String outcome,
    String thread,
    long millis,
    String more,
    String log,
    int requests,
    List<String> agentLog,
    int suppressed,
    String followUp,
    List<String> shapes) {

  /** The outcome is a response with a 2xx status, or an open WebSocket. */
  boolean succeeded() {
    return outcome.matches("status 2\\d\\d") || outcome.equals("websocket open");
  }

  String threadKind() {
    return ThreadKinds.kind(thread);
  }

  /** Reads call {@code key} of {@code result}; {@code port} is its server's. */
  static Observation read(
      ForkedJvm.Result result,
      String key,
      int port,
      int requests,
      List<dev.retryagent.it.harness.RecordedRequest> recorded) {
    Pattern p = Pattern.compile(":" + port + "(?!\\d)");
    String millis = result.value(key + ".millis");
    String suppressed = result.value(key + ".suppressed");
    List<String> shapes = new ArrayList<>();
    for (dev.retryagent.it.harness.RecordedRequest r : recorded) {
      shapes.add(
          r.method()
              + " key="
              + r.header("Idempotency-Key")
              + " body="
              + java.util.Arrays.hashCode(r.body()));
    }
    List<String> agentLog = new ArrayList<>();
    for (String line : result.stderrLines("retry-agent: ")) {
      if (p.matcher(line).find()) {
        agentLog.add(p.matcher(line).replaceAll(":PORT"));
      }
    }
    return new Observation(
        normal(p, result.value(key + ".outcome"), "no outcome printed"),
        normal(p, result.value(key + ".thread"), "-"),
        millis == null ? -1 : Long.parseLong(millis),
        normal(p, result.value(key + ".more"), ""),
        normal(p, result.value(key + ".log"), ""),
        requests,
        agentLog,
        suppressed == null ? 0 : Integer.parseInt(suppressed),
        normal(p, result.value(key + ".followup"), ""),
        shapes);
  }

  private static String normal(Pattern port, String value, String otherwise) {
    return value == null ? otherwise : port.matcher(value).replaceAll(":PORT");
  }

  /**
   * This observation with an outcome that the client delivers either way at random replaced by the
   * one it stands for ({@link Driver#racyOutcomes}), and its thread by {@code (either)}.
   */
  Observation canonical(java.util.Map<String, String> racy) {
    for (java.util.Map.Entry<String, String> e : racy.entrySet()) {
      if (outcome.matches(e.getKey())) {
        return new Observation(
            e.getValue(),
            "(either)",
            millis,
            more,
            log,
            requests,
            agentLog,
            suppressed,
            followUp,
            shapes);
      }
    }
    return this;
  }

  /**
   * This observation without the logged entries that match {@code entry} (entries are joined with
   * {@code " | "}).
   */
  Observation withoutLogged(String entry) {
    List<String> kept = new ArrayList<>();
    for (String e : log.split(" \\| ", -1)) {
      if (!e.isEmpty() && !e.matches(entry)) {
        kept.add(e);
      }
    }
    return new Observation(
        outcome,
        thread,
        millis,
        more,
        String.join(" | ", kept),
        requests,
        agentLog,
        suppressed,
        followUp,
        shapes);
  }

  /** One line for reports. */
  String describe() {
    return outcome
        + " on "
        + threadKind()
        + " after "
        + millis
        + " ms, "
        + requests
        + (requests == 1 ? " request" : " requests")
        + (more.isEmpty() ? "" : ", then " + more)
        + (suppressed == 0 ? "" : ", " + suppressed + " suppressed")
        + (followUp.isEmpty() ? "" : ", follow-up: " + followUp)
        + (log.isEmpty() ? "" : ", logged: " + log);
  }
}
