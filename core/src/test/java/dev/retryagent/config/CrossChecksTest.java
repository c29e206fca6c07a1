package dev.retryagent.config;

import static dev.retryagent.config.Yaml.problem;
import static dev.retryagent.config.Yaml.problems;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.tuple;

import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** Keys that bound each other are checked after merging, and blamed where they were written. */
class CrossChecksTest {

  @Test
  void backoffInitialMayNotExceedBackoffMax() {
    ConfigProblem p = problem("defaults:", "  retry:", "    backoff: {initial: 2s, max: 1s}");
    assertThat(p.path()).isEqualTo("defaults.retry.backoff.initial");
    assertThat(p.line()).isEqualTo(3);
    assertThat(p.column()).isEqualTo(24);
    assertThat(p.message())
        .isEqualTo(
            "found 2s; allowed at most retry.backoff.max (1s): the first delay cannot exceed the"
                + " cap");
  }

  @Test
  void anExplicitInitialAboveTheBuiltInMaxIsReported() {
    assertThat(problem("defaults: {retry: {backoff: {initial: 6s}}}").message())
        .isEqualTo(
            "found 6s; allowed at most retry.backoff.max (5s, the built-in default): the first"
                + " delay cannot exceed the cap");
  }

  @Test
  void aConflictShowsTheValueAsTheFileWroteIt() {
    // It showed "found 1m" for 60s: a search of the file for what the problem found found nothing.
    assertThat(problem("defaults: {retry: {retryAfter: {max: 60s}}}").message())
        .isEqualTo(
            "found 60s; allowed at most retry.deadline (30s, the built-in default): a wait longer"
                + " than the deadline could never end in a retry");
    assertThat(problem("defaults: {retry: {backoff: {initial: PT6S}}}").message())
        .startsWith("found PT6S; allowed at most retry.backoff.max (5s, the built-in default)");
    assertThat(problem("defaults: {circuitBreaker: {minimumCalls: 1_000}}").message())
        .startsWith("found 1_000; allowed at most circuitBreaker.window.size (50,");
    assertThat(problem("defaults: {circuitBreaker: {window: {type: time, size: 7200s}}}").message())
        .startsWith("found 7200s; a time window's size is a duration 1ms..1h");
    // A value from the environment is shown as the loader read it, as the walker shows it.
    assertThat(
            Yaml.problemWithEnv(
                    Map.of("M", "60s"), "defaults: {retry: {retryAfter: {max: '${M}'}}}")
                .message())
        .startsWith("found 1m; allowed at most retry.deadline");
  }

  @Test
  void retryAfterMaxMayNotExceedTheDeadline() {
    assertThat(problem("defaults: {retry: {deadline: 10s, retryAfter: {max: 20s}}}"))
        .satisfies(
            p -> {
              assertThat(p.path()).isEqualTo("defaults.retry.retryAfter.max");
              assertThat(p.message())
                  .isEqualTo(
                      "found 20s; allowed at most retry.deadline (10s): a wait longer than the"
                          + " deadline could never end in a retry");
            });
    assertThat(problem("defaults: {retry: {retryAfter: {max: 1m}}}").message())
        .startsWith("found 1m; allowed at most retry.deadline (30s, the built-in default)");
  }

  @Test
  void perAttemptTimeoutMayNotExceedTheDeadline() {
    ConfigProblem p = problem("defaults: {retry: {perAttemptTimeout: 31s}}");
    assertThat(p.path()).isEqualTo("defaults.retry.perAttemptTimeout");
    assertThat(p.message())
        .isEqualTo(
            "found 31s; allowed at most retry.deadline (30s, the built-in default): no attempt can"
                + " outlast the whole call");
  }

  @Test
  void aCountWindowSmallerThanMinimumCallsCouldNeverOpen() {
    ConfigProblem p =
        problem("defaults: {circuitBreaker: {window: {type: count, size: 10}, minimumCalls: 20}}");
    assertThat(p.path()).isEqualTo("defaults.circuitBreaker.minimumCalls");
    assertThat(p.message())
        .isEqualTo(
            "found 20; allowed at most circuitBreaker.window.size (10): the breaker could never"
                + " see enough calls to open");
    assertThat(problem("defaults: {circuitBreaker: {minimumCalls: 51}}").message())
        .startsWith(
            "found 51; allowed at most circuitBreaker.window.size (50, the built-in default)");
  }

  @Test
  void aTimeWindowHasNoCountToCheckMinimumCallsAgainst() throws Exception {
    AgentConfig c =
        Yaml.load(
            "defaults: {circuitBreaker: {window: {type: time, size: 10s}, minimumCalls: 500}}");
    assertThat(c.defaultPolicy().circuitBreaker().minimumCalls()).isEqualTo(500);
  }

  @Test
  void aWindowSizeMustFitTheWindowType() {
    assertThat(problem("defaults: {circuitBreaker: {window: {type: count, size: 30s}}}").message())
        .isEqualTo(
            "found 30s; a count window's size is a number of attempts, 1..10000 (for a duration"
                + " set type: time)");
    assertThat(problem("defaults: {circuitBreaker: {window: {type: time, size: 30}}}").message())
        .isEqualTo(
            "found 30; a time window's size is a duration 1ms..1h such as 30s (a bare number"
                + " needs a unit)");
    assertThat(problem("defaults: {circuitBreaker: {window: {size: 0}}}").path())
        .isEqualTo("defaults.circuitBreaker.window.size");
    assertThat(problem("defaults: {circuitBreaker: {window: {type: time, size: 2h}}}").message())
        .startsWith("found 2h; a time window's size is a duration 1ms..1h");
    assertThat(problem("defaults: {circuitBreaker: {window: {size: soon}}}").message())
        .isEqualTo(
            "found soon; allowed a number of calls (type: count) or a duration such as 30s (type:"
                + " time)");
  }

  @Test
  void aRouteIsBlamedForWhatItWroteAndDefaultsForWhatTheyWrote() {
    List<ConfigProblem> all =
        problems(
            "defaults:",
            "  retry: {deadline: 10s}",
            "routes:",
            "  - name: r",
            "    match: {hosts: [a.com]}",
            "    retry: {retryAfter: {max: 15s}}");
    assertThat(all)
        .extracting(ConfigProblem::line, ConfigProblem::path, ConfigProblem::message)
        .containsExactly(
            tuple(
                6,
                "routes[0].retry.retryAfter.max",
                "found 15s; allowed at most retry.deadline (10s, from defaults): a wait longer"
                    + " than the deadline could never end in a retry"));
  }

  @Test
  void aRouteLoweringABoundBelowAValueDefaultsWroteIsBlamedAtTheBound() {
    List<ConfigProblem> all =
        problems(
            "defaults:",
            "  retry: {retryAfter: {max: 20s}}",
            "routes:",
            "  - name: r",
            "    match: {hosts: [a.com]}",
            "    retry: {deadline: 5s}");
    assertThat(all)
        .extracting(ConfigProblem::path, ConfigProblem::message)
        .containsExactly(
            tuple(
                "routes[0].retry.deadline",
                "found 5s; allowed at least retry.retryAfter.max (20s, from defaults): a wait"
                    + " longer than the deadline could never end in a retry"));
  }

  @Test
  void aRouteSwitchingToACountWindowBelowTheMinimumCallsOfDefaultsIsBlamedAtTheType() {
    // The route's window gets the count type's default size (50), below what defaults wrote for
    // their time window: a located problem, not "the configuration could not be built" at 1:1.
    List<ConfigProblem> all =
        problems(
            "defaults: {circuitBreaker: {window: {type: time, size: 10s}, minimumCalls: 100}}",
            "routes:",
            "  - name: r",
            "    match: {hosts: [a.com]}",
            "    circuitBreaker: {window: {type: count}}");
    assertThat(all)
        .extracting(ConfigProblem::line, ConfigProblem::path, ConfigProblem::message)
        .containsExactly(
            tuple(
                5,
                "routes[0].circuitBreaker.window.type",
                "found count, whose size is 50 by default; allowed at least"
                    + " circuitBreaker.minimumCalls (100, from defaults): the breaker could never"
                    + " see enough calls to open (write window.size)"));
  }

  @Test
  void aConflictInDefaultsIsReportedOnceNotOncePerRoute() {
    List<ConfigProblem> all =
        problems(
            "defaults: {retry: {backoff: {initial: 1s, max: 500ms}}}",
            "routes:",
            "  - {name: a, match: {hosts: [a.com]}}",
            "  - {name: b, match: {hosts: [b.com]}}");
    assertThat(all)
        .extracting(ConfigProblem::path)
        .containsExactly("defaults.retry.backoff.initial");
  }

  @Test
  void anInvalidValueIsNotCrossCheckedAgain() {
    List<ConfigProblem> all = problems("defaults: {retry: {deadline: 5, retryAfter: {max: 10s}}}");
    assertThat(all).extracting(ConfigProblem::path).containsExactly("defaults.retry.deadline");
  }
}
