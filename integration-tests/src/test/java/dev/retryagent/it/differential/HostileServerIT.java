package dev.retryagent.it.differential;

import static dev.retryagent.it.harness.Reply.ok;
import static dev.retryagent.it.harness.Reply.raw;
import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.DynamicContainer.dynamicContainer;
import static org.junit.jupiter.api.DynamicTest.dynamicTest;

import dev.retryagent.it.harness.Jdks;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.DynamicNode;
import org.junit.jupiter.api.TestFactory;

/**
 * Hostile and broken server input (issue 14), through the real agent jar, every client the agent
 * hooks (the newest variant of each), every API, on JDK 17 and 25: 10,000 headers, a 1 MB header, a
 * 1 MB {@code Retry-After}, terminal escape sequences, BEL, C1 controls and CR in a status line, a
 * reason phrase and a header, and percent-encoded CR/LF and escapes in the URL, which also carries
 * a query token and an {@code Authorization} header.
 *
 * <ul>
 *   <li>Each call: what the application sees with the agent is what it sees without it, except that
 *       a failure the policy retries may become a later success ({@link Expect#retried}), and the
 *       server sees no more requests than {@code maxAttempts}.
 *   <li>Stderr: no escape (ESC, CSI, BEL, OSC), no carriage return, no forged {@code retry-agent:}
 *       line; every agent line stays short (no 1 MB header in it); no query, token or credential.
 *   <li>Dead letters: one JSON object a line, no raw control character, nothing secret.
 * </ul>
 */
class HostileServerIT {
  /** What a forged log line would start with, if the agent wrote a CR or LF from the server. */
  private static final String FORGED = "retry-agent: FORGED";

  private static final String ESCAPES = "\u001b[2J\u001b]0;pwned\u0007\u009b31m";

  private static final String POLICY =
      "retry: { maxAttempts: 2, backoff: { initial: 10ms, multiplier: 1.0, jitter: none } }";

  private static final long BOUND_MILLIS = 2_000 + Expect.SLACK_MILLIS;

  /** No agent line is longer: the longest real ones (a give-up with an exception) are ~400. */
  private static final int LONGEST_AGENT_LINE = 1_000;

  private static String head(String statusLine, String... headerLines) {
    StringBuilder b = new StringBuilder(statusLine).append("\r\n");
    for (String h : headerLines) {
      b.append(h).append("\r\n");
    }
    return b.append("Content-Length: 0\r\nConnection: close\r\n\r\n").toString();
  }

  static List<Case> cases() {
    List<Case> c = new ArrayList<>();
    StringBuilder many = new StringBuilder("HTTP/1.1 503 Service Unavailable\r\n");
    for (int i = 0; i < 10_000; i++) {
      many.append("X-Header-").append(i).append(": v\r\n");
    }
    many.append("Content-Length: 0\r\nConnection: close\r\n\r\n");
    String tenThousand = many.toString();
    c.add(
        hostile("ten-thousand-headers", "a 503 with 10,000 headers, then a 200")
            .server(s -> s.enqueue(raw(tenThousand), ok("after"))));
    String megabyte = "a".repeat(1 << 20);
    c.add(
        hostile("megabyte-header", "a 503 with a 1 MB header, then a 200")
            .server(
                s ->
                    s.enqueue(
                        raw(head("HTTP/1.1 503 Service Unavailable", "X-Filler: " + megabyte)),
                        ok("after"))));
    String digits = "9".repeat(1 << 20);
    c.add(
        hostile("megabyte-retry-after", "a 503 with a 1 MB Retry-After, then a 200")
            .server(
                s ->
                    s.enqueue(
                        raw(head("HTTP/1.1 503 Service Unavailable", "Retry-After: " + digits)),
                        ok("after"))));
    c.add(
        hostile("reason-phrase-controls", "a 503 whose reason phrase holds escapes, then a 200")
            .server(
                s ->
                    s.enqueue(
                        raw(head("HTTP/1.1 503 Busy" + ESCAPES + " " + FORGED)), ok("after"))));
    c.add(
        hostile("status-line-controls", "a status line with CR and escapes, every time")
            .server(
                s -> s.setDefaultReply(raw("HTTP/1.1 5x3 Bad\r" + FORGED + ESCAPES + "\r\n\r\n"))));
    c.add(
        hostile("header-controls", "a 503 whose headers hold escapes and a bare CR, every time")
            .server(
                s ->
                    s.setDefaultReply(
                        raw(
                            head(
                                "HTTP/1.1 503 Service Unavailable",
                                "Retry-After: 1" + ESCAPES,
                                "X-Evil: \u001b]8;;http://evil.example/\u0007click" + ESCAPES,
                                "X-Cr: a\r" + FORGED)))));
    c.add(
        hostile("url-controls", "a URL with encoded CR/LF and escapes, a query token: 503, 200")
            .server(s -> s.enqueue(raw(head("HTTP/1.1 503 Service Unavailable")), ok("after")))
            .action(
                Action.get("/h/%1B%5B2J%0D%0Aretry-agent:%20FORGED%07/x?token=secret-query-token")
                    .header("Authorization", "Bearer secret-bearer-token")));
    return c;
  }

  private static Case hostile(String id, String title) {
    return Case.of(id, title).policy(POLICY).expect(Expect.retried(2, BOUND_MILLIS));
  }

  private record Runs(
      Driver driver,
      Driver.Variant variant,
      Path jdk,
      Path dir,
      Future<DiffRun.Outcome> without,
      Future<DiffRun.Outcome> with) {}

  @TestFactory
  List<DynamicNode> hostileServerInputNeverReachesTheOutputRawAndChangesNoCall() throws Exception {
    List<Case> cases = cases();
    ExecutorService pool = Executors.newFixedThreadPool(Integer.getInteger("diff.jvms", 2));
    try {
      List<Runs> runs = new ArrayList<>();
      for (Path jdk : jdks()) {
        for (Driver driver : DifferentialIT.DRIVERS) {
          List<Driver.Variant> variants = driver.variants();
          Driver.Variant variant = variants.get(variants.size() - 1);
          Path base =
              Path.of("target/hostile-server", variant.name() + "-jdk" + Jdks.featureOf(jdk));
          Path withDir = base.resolve("with");
          runs.add(
              new Runs(
                  driver,
                  variant,
                  jdk,
                  withDir,
                  pool.submit(
                      () ->
                          DiffRun.run(driver, variant, jdk, false, cases, base.resolve("without"))),
                  pool.submit(() -> DiffRun.run(driver, variant, jdk, true, cases, withDir))));
        }
      }
      List<DynamicNode> nodes = new ArrayList<>();
      for (Runs r : runs) {
        nodes.add(
            dynamicContainer(
                r.variant().name() + " on JDK " + Jdks.featureOf(r.jdk()),
                checks(r.driver(), cases, r.without().get(), r.with().get(), r.dir())));
      }
      return nodes;
    } finally {
      pool.shutdownNow();
    }
  }

  /** Every JDK, or those {@code -Ddiff.jdks=17,25} names. */
  private static List<Path> jdks() {
    String only = System.getProperty("diff.jdks", "");
    List<Path> jdks = new ArrayList<>();
    for (Path jdk : Jdks.all()) {
      if (only.isBlank() || List.of(only.split(",")).contains("" + Jdks.featureOf(jdk))) {
        jdks.add(jdk);
      }
    }
    return jdks;
  }

  private static List<DynamicNode> checks(
      Driver driver, List<Case> cases, DiffRun.Outcome without, DiffRun.Outcome with, Path dir) {
    List<DynamicNode> tests = new ArrayList<>();
    String stderr = with.jvm().stderr();
    tests.add(
        dynamicTest(
            "both JVMs made every call and exited",
            () -> {
              assertThat(without.jvm().value("done"))
                  .as(without.jvm().describe())
                  .isEqualTo("true");
              assertThat(with.jvm().value("done")).as(with.jvm().describe()).isEqualTo("true");
            }));
    tests.add(
        dynamicTest(
            "stderr: no escape, BEL, C1 control or CR from the server, no forged line",
            () -> {
              assertThat(controls(stderr)).as(with.jvm().describe()).isEmpty();
              assertThat(stderr.lines()).noneMatch(l -> l.startsWith(FORGED));
              assertThat(with.jvm().stderrLines("retry-agent: "))
                  .as("the agent said something about the hostile servers")
                  .anyMatch(l -> l.contains("attempt 1 failed"))
                  .allSatisfy(l -> assertThat(l.length()).isLessThan(LONGEST_AGENT_LINE));
            }));
    tests.add(dynamicTest("stderr: no query, token or credential", () -> assertNoSecrets(stderr)));
    tests.add(
        dynamicTest(
            "dead letters: one JSON object a line, no raw control character, nothing secret",
            () -> {
              List<String> letters =
                  Files.readAllLines(dir.resolve("dead-letters.jsonl"), StandardCharsets.UTF_8);
              assertThat(letters).as("some calls gave up").isNotEmpty();
              for (String l : letters) {
                assertThat(l).startsWith("{\"time\":\"").endsWith("}");
                assertThat(controls(l)).as(l).isEmpty();
              }
              assertNoSecrets(String.join("\n", letters));
            }));
    for (String api : driver.apis()) {
      for (Case c : cases) {
        if (!DiffRun.runs(driver, api, c)) {
          continue;
        }
        String key = c.id() + "/" + api;
        Map<String, String> racy = driver.racyOutcomes(api);
        Observation w0 = without.calls().get(key).canonical(racy);
        Observation w1 = with.calls().get(key).canonical(racy);
        if (driver.ownResendLog() != null) {
          // as in DifferentialIT: the agent's retry took the place of the client's own resend
          w0 = w0.withoutLogged(driver.ownResendLog());
          w1 = w1.withoutLogged(driver.ownResendLog());
        }
        Observation before = w0;
        Observation after = w1;
        tests.add(
            dynamicTest(
                key + ": " + c.title(),
                () ->
                    assertThat(
                            c.expect()
                                .differences(
                                    before,
                                    after,
                                    ref -> {
                                      Observation o = without.calls().get(ref + "/" + api);
                                      return o == null ? null : o.canonical(racy);
                                    }))
                        .as(
                            "without the agent: %s%nwith it: %s",
                            before.describe(), after.describe())
                        .isEmpty()));
      }
    }
    return tests;
  }

  /** The control characters of {@code text} other than LF and TAB, as code points. */
  static List<Integer> controls(String text) {
    List<Integer> found = new ArrayList<>();
    text.chars()
        .filter(ch -> ch != '\n' && ch != '\t' && (Character.isISOControl(ch) || ch == '\u2028'))
        .forEach(found::add);
    return found;
  }

  private static void assertNoSecrets(String text) {
    assertThat(text).doesNotContain("secret").doesNotContain("token=").doesNotContain("Bearer");
  }
}
