package dev.retryagent.it.differential;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.DynamicContainer.dynamicContainer;
import static org.junit.jupiter.api.DynamicTest.dynamicTest;

import dev.retryagent.it.harness.Jdks;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.DynamicNode;
import org.junit.jupiter.api.TestFactory;

/**
 * The agent failing (issue 14): with a fault injected into its engine through the test-only switch
 * {@code -Dretryagent.test.fault} (core's {@code TestFaults}), every client the agent hooks,
 * through the real agent jar, on every API of the differential suite:
 *
 * <ul>
 *   <li>{@code newCall} (starting a call throws) and {@code decide} (deciding after an attempt
 *       throws): the application sees exactly what it sees without the agent, case by case ({@link
 *       Expect#same()}: outcome, thread, reports, requests on the server, time);
 *   <li>{@code listener} (a listener throws at every event): the calls are retried as the policy
 *       says ({@link Case#expect()}), the failing listener changes nothing;
 *   <li>{@code hook} (the agent's {@code Bridge}: every hook's handler throws before it takes its
 *       call): exactly as without the agent, one line per hook.
 * </ul>
 *
 * and in each run, each cause is said in one line, once, however many calls it hit. One variant per
 * client (the newest), on JDK 17.
 */
class AgentFailureIT {
  private static final List<String> CASES =
      List.of(
          "ok", "not-found", "503-then-200", "post-503", "post-503-key", "closed-without-answer");

  /** A fault, and the line that must say it once. */
  private enum Fault {
    NEW_CALL("newCall", "internal error while starting a call (java.lang.IllegalStateException"),
    DECIDE(
        "decide",
        "internal error while deciding after an attempt (java.lang.IllegalStateException"),
    LISTENER(
        "listener",
        "internal error while telling dev.retryagent.engine.TestFaults$FailingListener about an"
            + " event (java.lang.IllegalStateException"),
    /** Every hook's handler fails before it takes its call: one line per hook, each once. */
    HOOK(
        "hook",
        "passed through without retries: java.lang.IllegalStateException: test fault injected"
            + " in a hook");

    final String option;
    final String line;

    Fault(String option, String line) {
      this.option = option;
      this.line = line;
    }
  }

  private record Runs(
      Driver driver,
      Driver.Variant variant,
      Future<DiffRun.Outcome> without,
      Map<Fault, Future<DiffRun.Outcome>> with) {}

  @TestFactory
  List<DynamicNode> aFailingEngineLeavesEveryCallAsItWouldBeWithoutTheAgent() throws Exception {
    List<Case> cases =
        Cases.all().stream().filter(c -> CASES.contains(c.id())).collect(Collectors.toList());
    assertThat(cases).hasSize(CASES.size());
    Path jdk = Jdks.jdk17();
    ExecutorService pool = Executors.newFixedThreadPool(Integer.getInteger("diff.jvms", 2));
    try {
      List<Runs> runs = new ArrayList<>();
      for (Driver driver : DifferentialIT.DRIVERS) {
        List<Driver.Variant> variants = driver.variants();
        Driver.Variant variant = variants.get(variants.size() - 1);
        Path base = Path.of("target/agent-failure", variant.name());
        Future<DiffRun.Outcome> without =
            pool.submit(
                () -> DiffRun.run(driver, variant, jdk, false, cases, base.resolve("without")));
        Map<Fault, Future<DiffRun.Outcome>> with = new LinkedHashMap<>();
        for (Fault f : Fault.values()) {
          with.put(
              f,
              pool.submit(
                  () ->
                      DiffRun.run(
                          driver,
                          variant,
                          jdk,
                          true,
                          cases,
                          base.resolve(f.option),
                          List.of("-Dretryagent.test.fault=" + f.option))));
        }
        runs.add(new Runs(driver, variant, without, with));
      }
      List<DynamicNode> nodes = new ArrayList<>();
      for (Runs r : runs) {
        List<DynamicNode> tests = new ArrayList<>();
        DiffRun.Outcome without = r.without().get();
        for (Map.Entry<Fault, Future<DiffRun.Outcome>> e : r.with().entrySet()) {
          tests.add(
              container(r.driver(), r.variant(), e.getKey(), cases, without, e.getValue().get()));
        }
        nodes.add(dynamicContainer(r.variant().name() + " on JDK 17", tests));
      }
      return nodes;
    } finally {
      pool.shutdownNow();
    }
  }

  private static DynamicNode container(
      Driver driver,
      Driver.Variant variant,
      Fault fault,
      List<Case> cases,
      DiffRun.Outcome without,
      DiffRun.Outcome with) {
    List<DynamicNode> tests = new ArrayList<>();
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
            "each cause is said in one line, once",
            () -> {
              List<String> lines = with.jvm().stderrLines("retry-agent: internal error");
              assertThat(lines).as(with.jvm().describe()).anyMatch(l -> l.contains(fault.line));
              Set<String> distinct = Set.copyOf(lines);
              assertThat(distinct).as("no cause said twice").hasSize(lines.size());
              if (fault == Fault.HOOK) {
                // One line per hook the calls went through, each naming the hook; the bridge
                // shows the bug's message, sanitised (BridgeTest).
                assertThat(lines).allMatch(l -> l.contains(fault.line));
              } else {
                assertThat(lines.stream().filter(l -> l.contains(fault.line)).count()).isEqualTo(1);
                assertThat(lines)
                    .as("never the injected message, nor any other")
                    .noneMatch(l -> l.contains("test fault injected"));
              }
            }));
    for (String api : driver.apis()) {
      for (Case c : cases) {
        if (!DiffRun.runs(driver, api, c)) {
          continue;
        }
        String key = c.id() + "/" + api;
        Map<String, String> racy = driver.racyOutcomes(api);
        Expect rule = fault == Fault.LISTENER ? c.expect() : Expect.same();
        // Under a failing listener the engine still decides, so a difference the case's markers
        // say the working agent makes by design (DifferentialIT) is made here too.
        List<Known> known =
            fault == Fault.LISTENER
                ? c.knownFor(Verdict.combination(variant.name(), api, 17))
                : List.of();
        Observation w0 = without.calls().get(key).canonical(racy);
        Observation w1 = with.calls().get(key).canonical(racy);
        if (driver.ownResendLog() != null && rule.retried()) {
          // as in DifferentialIT: the agent's retry took the place of the client's own resend
          w0 = w0.withoutLogged(driver.ownResendLog());
          w1 = w1.withoutLogged(driver.ownResendLog());
        }
        Observation before = w0;
        Observation after = w1;
        tests.add(
            dynamicTest(
                fault.option + " fault: " + key + " (" + rule + ")",
                () -> {
                  List<String> diffs =
                      rule.differences(
                          before,
                          after,
                          ref -> {
                            Observation o = without.calls().get(ref + "/" + api);
                            return o == null ? null : o.canonical(racy);
                          });
                  if (!diffs.isEmpty()
                      && !known.isEmpty()
                      && diffs.stream()
                          .allMatch(d -> known.stream().anyMatch(k -> k.explains(d)))) {
                    Assumptions.abort(
                        "known difference: "
                            + known.stream().map(Known::reason).collect(Collectors.joining("; ")));
                  }
                  assertThat(diffs)
                      .as(
                          "without the agent: %s%nwith it and the fault: %s",
                          before.describe(), after.describe())
                      .isEmpty();
                }));
      }
    }
    return dynamicContainer(fault.option + " fault", tests);
  }
}
