package dev.retryagent.config;

import static dev.retryagent.config.Yaml.problem;
import static dev.retryagent.config.Yaml.problems;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.tuple;
import static org.assertj.core.api.InstanceOfAssertFactories.STRING;

import dev.retryagent.policy.BackoffPolicy;
import dev.retryagent.policy.Policy;
import dev.retryagent.policy.RetryPolicy;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * Keys that bound each other are compared after merging, and a conflict is warned where it was
 * written; the file loads with each key's meaning.
 */
class CrossChecksTest {

  /** The only warning of a file that loads. */
  private static ConfigProblem warning(String... lines) throws ConfigException {
    return only(Yaml.load(lines).warnings());
  }

  private static ConfigProblem only(List<ConfigProblem> warnings) {
    assertThat(warnings).hasSize(1);
    return warnings.get(0);
  }

  // The version-1 contract (CONFIG.md) sets no limit between these keys: a file that writes one
  // above the other loads, with each key's meaning, and says so in a warning. They were refused.

  @Test
  void aBackoffInitialAboveBackoffMaxLoadsCappedAtTheMax() throws Exception {
    AgentConfig c = Yaml.load("defaults:", "  retry:", "    backoff: {initial: 2s, max: 1s}");
    // "max: cap on the computed delay": the first delay too.
    assertThat(c.defaultPolicy().retry().backoff().initial()).isEqualTo(Duration.ofSeconds(1));
    assertThat(c.defaultPolicy().retry().backoff().max()).isEqualTo(Duration.ofSeconds(1));
    ConfigProblem p = c.warnings().get(0);
    assertThat(c.warnings()).hasSize(1);
    assertThat(p.path()).isEqualTo("defaults.retry.backoff.initial");
    assertThat(p.line()).isEqualTo(3);
    assertThat(p.column()).isEqualTo(24);
    assertThat(p.message())
        .isEqualTo(
            "found 2s; above retry.backoff.max (1s): every delay is capped at the max, so the first"
                + " delay is 1s (before jitter)");
  }

  @Test
  void anInitialAboveTheBuiltInMaxLoadsCappedAtIt() throws Exception {
    AgentConfig c = Yaml.load("defaults: {retry: {backoff: {initial: 10s}}}");
    assertThat(c.defaultPolicy().retry().backoff().initial()).isEqualTo(BackoffPolicy.DEFAULT_MAX);
    assertThat(c.warnings())
        .extracting(ConfigProblem::message)
        .containsExactly(
            "found 10s; above retry.backoff.max (5s, the built-in default): every delay is capped"
                + " at the max, so the first delay is 5s (before jitter)");
  }

  @Test
  void aWarningShowsTheValueAsTheFileWroteIt() throws Exception {
    // "found 1m" for 60s: a search of the file for what the warning found would find nothing.
    assertThat(warning("defaults: {retry: {retryAfter: {max: 60s}}}").message())
        .isEqualTo(
            "found 60s; above retry.deadline (30s, the built-in default): a longer Retry-After"
                + " still gives the response back at once, since a retry that could not start"
                + " before the deadline is not made; 1m still bounds a pauseOn429 pause");
    assertThat(warning("defaults: {retry: {backoff: {initial: PT6S}}}").message())
        .startsWith("found PT6S; above retry.backoff.max (5s, the built-in default)");
    assertThat(warning("defaults: {circuitBreaker: {minimumCalls: 1_000}}").message())
        .startsWith("found 1_000; above circuitBreaker.window.size (50,");
    assertThat(problem("defaults: {circuitBreaker: {window: {type: time, size: 7200s}}}").message())
        .startsWith("found 7200s; a time window's size is a duration 1ms..1h");
    // A value from the environment is shown as the loader read it, as the walker shows it.
    assertThat(
            Yaml.loadWithEnv(Map.of("M", "60s"), "defaults: {retry: {retryAfter: {max: '${M}'}}}")
                .warnings())
        .extracting(ConfigProblem::message)
        .singleElement(STRING)
        .startsWith("found 1m; above retry.deadline");
  }

  @Test
  void aRetryAfterMaxAboveTheDeadlineIsKeptAsWritten() throws Exception {
    // Kept: for the retry it is the same as the deadline (a Retry-After past it is not waited
    // for), and it still bounds a pauseOn429 pause, which the deadline does not.
    AgentConfig c = Yaml.load("defaults: {retry: {deadline: 10s, retryAfter: {max: 20s}}}");
    assertThat(c.defaultPolicy().retry().retryAfterMax()).isEqualTo(Duration.ofSeconds(20));
    assertThat(c.defaultPolicy().retry().deadline()).isEqualTo(Duration.ofSeconds(10));
    assertThat(only(c.warnings()))
        .extracting(ConfigProblem::path, ConfigProblem::message)
        .containsExactly(
            "defaults.retry.retryAfter.max",
            "found 20s; above retry.deadline (10s): a longer Retry-After still gives the"
                + " response back at once, since a retry that could not start before the"
                + " deadline is not made; 20s still bounds a pauseOn429 pause");
  }

  @Test
  void aPerAttemptTimeoutAboveTheDeadlineIsKeptAsWritten() throws Exception {
    // Kept: the deadline does not bound the first attempt (CallBounds), so clamping would cut it.
    AgentConfig c = Yaml.load("defaults: {retry: {perAttemptTimeout: 60s}}");
    assertThat(c.defaultPolicy().retry().perAttemptTimeout()).isEqualTo(Duration.ofSeconds(60));
    assertThat(only(c.warnings()))
        .extracting(ConfigProblem::path, ConfigProblem::message)
        .containsExactly(
            "defaults.retry.perAttemptTimeout",
            "found 60s; above retry.deadline (30s, the built-in default): the first attempt"
                + " gets 1m; a retry gets at most what is left of the deadline");
  }

  @Test
  void aMinimumCallsAboveACountWindowIsKeptSoTheBreakerNeverOpens() throws Exception {
    AgentConfig c =
        Yaml.load(
            "defaults: {circuitBreaker: {window: {type: count, size: 10}, minimumCalls: 20}}");
    assertThat(c.defaultPolicy().circuitBreaker().minimumCalls()).isEqualTo(20);
    assertThat(c.defaultPolicy().circuitBreaker().windowSize()).isEqualTo(10);
    assertThat(only(c.warnings()))
        .extracting(ConfigProblem::path, ConfigProblem::message)
        .containsExactly(
            "defaults.circuitBreaker.minimumCalls",
            "found 20; above circuitBreaker.window.size (10): a count window of 10 never holds"
                + " 20 calls, so the breaker never opens on rates");
    AgentConfig builtIn = Yaml.load("defaults: {circuitBreaker: {minimumCalls: 100}}");
    assertThat(builtIn.defaultPolicy().circuitBreaker().minimumCalls()).isEqualTo(100);
    assertThat(builtIn.warnings())
        .extracting(ConfigProblem::message)
        .singleElement(STRING)
        .startsWith("found 100; above circuitBreaker.window.size (50, the built-in default)");
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
  void aRouteIsWarnedForWhatItWroteAndDefaultsForWhatTheyWrote() throws Exception {
    AgentConfig c =
        Yaml.load(
            "defaults:",
            "  retry: {deadline: 10s}",
            "routes:",
            "  - name: r",
            "    match: {hosts: [a.com]}",
            "    retry: {retryAfter: {max: 15s}}");
    assertThat(c.warnings())
        .extracting(ConfigProblem::line, ConfigProblem::path, ConfigProblem::message)
        .containsExactly(
            tuple(
                6,
                "routes[0].retry.retryAfter.max",
                "found 15s; above retry.deadline (10s, from defaults): a longer Retry-After still"
                    + " gives the response back at once, since a retry that could not start before"
                    + " the deadline is not made; 15s still bounds a pauseOn429 pause"));
    assertThat(c.routes().get(0).policy().retry().retryAfterMax())
        .isEqualTo(Duration.ofSeconds(15));
    assertThat(c.defaultPolicy().retry().retryAfterMax())
        .isEqualTo(RetryPolicy.DEFAULT_RETRY_AFTER_MAX);
  }

  @Test
  void aRouteLoweringABoundBelowAValueDefaultsWroteIsWarnedAtTheBound() throws Exception {
    AgentConfig c =
        Yaml.load(
            "defaults:",
            "  retry: {retryAfter: {max: 20s}}",
            "routes:",
            "  - name: r",
            "    match: {hosts: [a.com]}",
            "    retry: {deadline: 5s}");
    assertThat(only(c.warnings()))
        .extracting(ConfigProblem::path, ConfigProblem::message)
        .containsExactly(
            "routes[0].retry.deadline",
            "found 5s; below retry.retryAfter.max (20s, from defaults): a longer Retry-After"
                + " still gives the response back at once, since a retry that could not start"
                + " before the deadline is not made; 20s still bounds a pauseOn429 pause");
    Policy r = c.routes().get(0).policy();
    assertThat(r.retry().deadline()).isEqualTo(Duration.ofSeconds(5));
    assertThat(r.retry().retryAfterMax()).isEqualTo(Duration.ofSeconds(20));
  }

  @Test
  void aRouteSwitchingToACountWindowBelowTheMinimumCallsOfDefaultsIsWarnedAtTheType()
      throws Exception {
    // The route's window gets the count type's default size (50), below what defaults wrote for
    // their time window: neither key was written in the route, so its type is named.
    AgentConfig c =
        Yaml.load(
            "defaults: {circuitBreaker: {window: {type: time, size: 10s}, minimumCalls: 100}}",
            "routes:",
            "  - name: r",
            "    match: {hosts: [a.com]}",
            "    circuitBreaker: {window: {type: count}}");
    assertThat(c.warnings())
        .extracting(ConfigProblem::line, ConfigProblem::path, ConfigProblem::message)
        .containsExactly(
            tuple(
                5,
                "routes[0].circuitBreaker.window.type",
                "found count, whose size is 50 by default; above it is circuitBreaker.minimumCalls"
                    + " (100, from defaults): a count window of 50 never holds 100 calls, so the"
                    + " breaker never opens on rates (write window.size)"));
    assertThat(c.routes().get(0).policy().circuitBreaker().minimumCalls()).isEqualTo(100);
  }

  @Test
  void aConflictInDefaultsIsWarnedOnceNotOncePerRoute() throws Exception {
    AgentConfig c =
        Yaml.load(
            "defaults: {retry: {backoff: {initial: 1s, max: 500ms}}}",
            "routes:",
            "  - {name: a, match: {hosts: [a.com]}}",
            "  - {name: b, match: {hosts: [b.com]}}");
    assertThat(c.warnings())
        .extracting(ConfigProblem::path)
        .containsExactly("defaults.retry.backoff.initial");
    for (Route r : c.routes()) {
      assertThat(r.policy().retry().backoff().initial()).isEqualTo(Duration.ofMillis(500));
    }
  }

  @Test
  void aBoundOnlyLoweredKeepsTheContractsDefaultOfRetryAfterMax() throws Exception {
    // CONFIG.md: retryAfter.max defaults to 30s, and bounds the pauseOn429 pause. Following a
    // deadline of 5s down would shorten that pause; for the retry it changes nothing (a longer
    // Retry-After could not start before the deadline), so the default stays, without a warning.
    AgentConfig c = Yaml.load("defaults: {retry: {deadline: 5s}}");
    assertThat(c.defaultPolicy().retry().retryAfterMax())
        .isEqualTo(RetryPolicy.DEFAULT_RETRY_AFTER_MAX);
    assertThat(c.warnings()).isEmpty();
  }

  @Test
  void filesOfTheContractsFormLoadThroughThePublicLoaderWithTheirWarnings() throws Exception {
    // The review's examples, as a file of CONFIG.md's layout: each refused before, so the
    // application ran without retries (or, strict, did not start).
    String yaml =
        Yaml.lines(
            "version: 1",
            "agent:",
            "  mode: enforce",
            "  strict: true",
            "defaults:",
            "  retry:",
            "    backoff: { initial: 10s }",
            "    retryAfter: { enabled: true, max: 60s }",
            "    perAttemptTimeout: 60s",
            "  circuitBreaker:",
            "    minimumCalls: 100",
            "routes:",
            "  - name: payments",
            "    match:",
            "      hosts: [\"api.payments.example.com\"]",
            "      methods: [POST]",
            "    retry: { maxAttempts: 5, unsafeMethods: if-idempotency-key, deadline: 20s }",
            "  - name: auth",
            "    match: { hosts: [\"auth.internal\"] }",
            "    retry: { enabled: false }");
    AgentConfig c = ConfigLoader.parse(yaml, "config.yml", Map.of());
    assertThat(c.warnings())
        .extracting(ConfigProblem::line, ConfigProblem::path)
        .containsExactly(
            tuple(7, "defaults.retry.backoff.initial"),
            tuple(8, "defaults.retry.retryAfter.max"),
            tuple(9, "defaults.retry.perAttemptTimeout"),
            tuple(11, "defaults.circuitBreaker.minimumCalls"),
            tuple(17, "routes[0].retry.deadline"),
            tuple(17, "routes[0].retry.deadline"));
    assertThat(c.warnings().get(4).message())
        .startsWith("found 20s; below retry.retryAfter.max (1m, from defaults)");
    assertThat(c.warnings().get(5).message())
        .startsWith("found 20s; below retry.perAttemptTimeout (1m, from defaults)");
    Policy payments = c.routes().get(0).policy();
    assertThat(payments.retry().backoff().initial()).isEqualTo(BackoffPolicy.DEFAULT_MAX);
    assertThat(payments.retry().retryAfterMax()).isEqualTo(Duration.ofSeconds(60));
    assertThat(payments.retry().perAttemptTimeout()).isEqualTo(Duration.ofSeconds(60));
    assertThat(payments.retry().deadline()).isEqualTo(Duration.ofSeconds(20));
    assertThat(payments.circuitBreaker().minimumCalls()).isEqualTo(100);
    assertThat(c.defaultPolicy().retry().deadline()).isEqualTo(RetryPolicy.DEFAULT_DEADLINE);
  }

  @Test
  void anInvalidValueIsNotCrossCheckedAgain() {
    List<ConfigProblem> all = problems("defaults: {retry: {deadline: 5, retryAfter: {max: 10s}}}");
    assertThat(all).extracting(ConfigProblem::path).containsExactly("defaults.retry.deadline");
  }
}
