package dev.retryagent.it.differential;

import static org.junit.jupiter.api.DynamicContainer.dynamicContainer;
import static org.junit.jupiter.api.DynamicTest.dynamicTest;

import dev.retryagent.it.harness.Jdks;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Assertions;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.DynamicNode;
import org.junit.jupiter.api.TestFactory;
import org.opentest4j.AssertionFailedError;

/**
 * The differential suite of issue 11: every {@link Cases case} on every API of every {@link
 * #DRIVERS client}, on JDK 17 and 25, run by the same application in two forked JVMs, without the
 * agent and with it, and compared by the case's {@link Expect rule}. One JVM per client variant,
 * JDK and agent runs every case at once; two JVMs run at a time.
 *
 * <p>Where today's code is known to differ, the case carries a {@link Known marker} per bug: a test
 * whose differences markers explain is skipped with their reasons; a difference no marker explains
 * fails it, and so does a marker that explains nothing any more (remove it with the fix). {@code
 * -Ddiff.known=ignore} ignores the markers: every difference fails. {@code -Ddiff.cases=GLOB,...},
 * {@code -Ddiff.clients=GLOB,...} (variant names) and {@code -Ddiff.jdks=17,25} run a part. Every
 * run writes {@code target/differential-results.md}.
 */
class DifferentialIT {
  /**
   * The clients under test. Adding one: a class that implements {@link Driver}, and a line here.
   */
  static final List<Driver> DRIVERS =
      List.of(
          new JdkHttpDriver(),
          new OkHttpDriver(),
          new Apache4Driver(),
          new Apache5Driver(),
          new Apache5AsyncDriver(),
          new UrlConnectionDriver());

  private static final int JVMS = Integer.getInteger("diff.jvms", 2);
  private static final boolean IGNORE_KNOWN = "ignore".equals(System.getProperty("diff.known"));

  /** The runs of one variant on one JDK. */
  private record Pair(
      Driver driver,
      Driver.Variant variant,
      int jdk,
      Future<DiffRun.Outcome> without,
      Future<DiffRun.Outcome> with) {}

  @TestFactory
  List<DynamicNode> theApplicationSeesTheSameWithTheAgentExceptItsRetries() throws Exception {
    Instant started = Instant.now();
    List<Case> cases = selectedCases();
    ExecutorService pool = Executors.newFixedThreadPool(JVMS);
    List<Pair> pairs = new ArrayList<>();
    try {
      for (Driver driver : DRIVERS) {
        for (Driver.Variant variant : driver.variants()) {
          for (Path jdk : Jdks.all()) {
            int feature = Jdks.featureOf(jdk);
            if (selected("diff.clients", variant.name())
                && selected("diff.jdks", String.valueOf(feature))) {
              pairs.add(
                  new Pair(
                      driver,
                      variant,
                      feature,
                      pool.submit(() -> run(driver, variant, jdk, false, cases)),
                      pool.submit(() -> run(driver, variant, jdk, true, cases))));
            }
          }
        }
      }
      List<DynamicNode> nodes = new ArrayList<>();
      List<Verdict> all = new ArrayList<>();
      StringBuilder times = new StringBuilder();
      for (Pair p : pairs) {
        times.append(
            String.format(
                "%n- %s on JDK %d: %.1f s without the agent, %.1f s with it",
                p.variant().name(),
                p.jdk(),
                p.without().get().millis() / 1000.0,
                p.with().get().millis() / 1000.0));
        List<Verdict> verdicts = verdicts(p, cases, p.without().get(), p.with().get());
        all.addAll(verdicts);
        nodes.add(container(p, verdicts, p.without().get(), p.with().get()));
      }
      ResultsTable.write(
          Path.of("target/differential-results.md"),
          all,
          "# Differential suite: with and without the agent\n\nRun "
              + started
              + ", "
              + Duration.between(started, Instant.now()).toSeconds()
              + " s for "
              + 2 * pairs.size()
              + " JVMs, "
              + JVMS
              + " at a time:"
              + times
              + "\n\nA cell says how the run with the agent compares with the run without it,"
              + " and which known difference (a marker in Cases) explains it.");
      FaultMatrixTable.write(Path.of("target/fault-matrix.md"), all);
      return nodes;
    } finally {
      pool.shutdownNow();
    }
  }

  /** One forked run; it leaves its plan, configuration and output in target/differential/NAME. */
  private static DiffRun.Outcome run(
      Driver driver, Driver.Variant variant, Path jdk, boolean agent, List<Case> cases) {
    String name =
        variant.name() + "-jdk" + Jdks.featureOf(jdk) + (agent ? "-with" : "-without") + "-agent";
    return DiffRun.run(driver, variant, jdk, agent, cases, Path.of("target/differential", name));
  }

  private static List<Verdict> verdicts(
      Pair p, List<Case> cases, DiffRun.Outcome without, DiffRun.Outcome with) {
    List<Verdict> verdicts = new ArrayList<>();
    for (String api : p.driver().apis()) {
      for (Case c : cases) {
        if (!DiffRun.runs(p.driver(), api, c)) {
          continue;
        }
        String key = c.id() + "/" + api;
        java.util.Map<String, String> racy = p.driver().racyOutcomes(api);
        Observation w0 = without.calls().get(key).canonical(racy);
        Observation w1 = with.calls().get(key).canonical(racy);
        String ownResends = p.driver().ownResendLog();
        if (ownResends != null && c.expect().retried()) {
          // the agent's retry took the place of the client's own resend, and of its log entry
          w0 = w0.withoutLogged(ownResends);
          w1 = w1.withoutLogged(ownResends);
        }
        List<String> diffs =
            c.expect()
                .differences(
                    w0,
                    w1,
                    ref -> {
                      Observation o = without.calls().get(ref + "/" + api);
                      return o == null ? null : o.canonical(racy);
                    });
        String combination = Verdict.combination(p.variant().name(), api, p.jdk());
        diffs.addAll(c.checks().differences(w0, w1, combination));
        for (String line : w1.agentLog()) {
          for (String never : c.agentLogNever()) {
            if (line.contains(never)) {
              diffs.add("the agent logged `" + line + "`");
            }
          }
        }
        verdicts.add(
            new Verdict(
                c.id(),
                c.title() + " (" + c.expect() + ")",
                p.variant().name(),
                api,
                p.jdk(),
                diffs,
                markers(c.knownFor(combination), Cases.everywhere(combination)),
                "without the agent: " + w0.describe() + "\nwith the agent:    " + w1.describe(),
                w0.requests() + "→" + w1.requests()));
      }
    }
    for (ThreadChecks.Check check : ThreadChecks.all()) {
      String combination = Verdict.combination(p.variant().name(), "jvm", p.jdk());
      verdicts.add(
          new Verdict(
              check.id(),
              check.title(),
              p.variant().name(),
              "jvm",
              p.jdk(),
              ThreadChecks.differences(check, without, with),
              markers(check.knownFor(combination), List.of()),
              "with the agent, threads at the end: " + with.threads("end"),
              ""));
    }
    return verdicts;
  }

  private static DynamicNode container(
      Pair p, List<Verdict> verdicts, DiffRun.Outcome without, DiffRun.Outcome with) {
    List<DynamicNode> tests = new ArrayList<>();
    tests.add(
        dynamicTest(
            "both JVMs made every call and exited",
            () -> {
              for (DiffRun.Outcome o : List.of(without, with)) {
                Assertions.assertEquals("true", o.jvm().value("done"), () -> o.jvm().describe());
              }
            }));
    for (Verdict v : verdicts) {
      tests.add(dynamicTest(v.check() + " [" + v.api() + "]: " + v.title(), () -> check(v)));
    }
    return dynamicContainer(p.variant().name() + " on JDK " + p.jdk(), tests);
  }

  private static List<Known> markers(List<Known> own, List<Known> everywhere) {
    if (IGNORE_KNOWN) {
      return List.of();
    }
    List<Known> all = new ArrayList<>(own);
    all.addAll(everywhere);
    return all;
  }

  private static void check(Verdict v) {
    String account = v.check() + " on " + v.combination() + ": " + v.cell() + "\n" + v.detail();
    if (!v.unexplained().isEmpty()) {
      throw new AssertionFailedError(account);
    }
    if (!v.stale().isEmpty()) {
      throw new AssertionFailedError(
          "fixed? remove the marker(s) that explain no difference any more: "
              + v.stale()
              + "\n"
              + account);
    }
    if (!v.agrees()) {
      List<String> reasons = new ArrayList<>();
      v.explaining().forEach(k -> reasons.add(k.reason()));
      Assumptions.abort("known difference: " + String.join("; ", reasons) + "\n" + account);
    }
  }

  /** The cases {@code diff.cases} selects, and those their rules compare with. */
  private static List<Case> selectedCases() {
    java.util.Set<String> ids = new java.util.HashSet<>();
    for (Case c : Cases.all()) {
      if (selected("diff.cases", c.id())) {
        ids.add(c.id());
        ids.addAll(c.expect().references());
      }
    }
    List<Case> cases = new ArrayList<>();
    for (Case c : Cases.all()) {
      if (ids.contains(c.id())) {
        cases.add(c);
      }
    }
    return cases;
  }

  /** Whether {@code value} matches one of the comma-separated globs of property {@code name}. */
  private static boolean selected(String name, String value) {
    String globs = System.getProperty(name, "");
    if (globs.isBlank()) {
      return true;
    }
    for (String glob : globs.split(",")) {
      if (Known.glob(glob.trim(), value)) {
        return true;
      }
    }
    return false;
  }
}
