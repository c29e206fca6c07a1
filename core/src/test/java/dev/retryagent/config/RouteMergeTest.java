package dev.retryagent.config;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retryagent.policy.BackoffPolicy;
import dev.retryagent.policy.CircuitBreakerPolicy.WindowType;
import dev.retryagent.policy.Jitter;
import dev.retryagent.policy.Policy;
import dev.retryagent.policy.RetryPolicy;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/** A route's sections override defaults key by key: maps merge, lists and values replace. */
class RouteMergeTest {

  @Test
  void aRouteGivingOneDeepKeyKeepsEveryOtherKeyOfDefaults() throws Exception {
    AgentConfig c =
        Yaml.load(
            "defaults:",
            "  retry:",
            "    maxAttempts: 5",
            "    backoff: {initial: 200ms, multiplier: 3, max: 10s, jitter: equal}",
            "    retryOn: {statuses: [503]}",
            "routes:",
            "  - name: r",
            "    match: {hosts: [a.com]}",
            "    retry:",
            "      backoff: {max: 20s}");
    RetryPolicy defaults = c.defaultPolicy().retry();
    RetryPolicy route = c.routes().get(0).policy().retry();
    assertThat(route.backoff().max()).isEqualTo(Duration.ofSeconds(20));
    assertThat(route.backoff().initial()).isEqualTo(Duration.ofMillis(200));
    assertThat(route.backoff().multiplier()).isEqualTo(3.0);
    assertThat(route.backoff().jitter()).isEqualTo(Jitter.EQUAL);
    assertThat(route.maxAttempts()).isEqualTo(5);
    assertThat(route.retryOnStatuses()).isEqualTo(defaults.retryOnStatuses());
    assertThat(defaults.backoff().max()).isEqualTo(Duration.ofSeconds(10));
  }

  @Test
  void aRouteListReplacesTheDefaultsList() throws Exception {
    AgentConfig c =
        Yaml.load(
            "defaults: {retry: {retryOn: {statuses: [429, 503]}, methods: [GET]}}",
            "routes:",
            "  - {name: r, match: {hosts: [a.com]}, retry: {retryOn: {statuses: [502]}}}");
    RetryPolicy route = c.routes().get(0).policy().retry();
    assertThat(route.retryOnStatuses().spec()).containsExactly("502");
    assertThat(route.methods()).containsExactly("GET");
  }

  @Test
  void sectionsARouteDoesNotMentionAreThoseOfDefaults() throws Exception {
    AgentConfig c =
        Yaml.load(
            "defaults:",
            "  budget: {ratio: 0.5}",
            "  circuitBreaker: {openFor: 1m}",
            "  rateLimit: {enabled: true, perSecond: 5}",
            "routes:",
            "  - {name: r, match: {hosts: [a.com]}, retry: {maxAttempts: 2}}");
    Policy d = c.defaultPolicy();
    Policy r = c.routes().get(0).policy();
    assertThat(r.budget()).isEqualTo(d.budget());
    assertThat(r.circuitBreaker()).isEqualTo(d.circuitBreaker());
    assertThat(r.rateLimit()).isEqualTo(d.rateLimit());
    assertThat(r.retry().maxAttempts()).isEqualTo(2);
    assertThat(r.routeName()).isEqualTo("r");
    assertThat(d.routeName()).isEqualTo("default");
  }

  @Test
  void aRouteWithNoSectionsHasTheDefaultPolicyUnderItsOwnName() throws Exception {
    AgentConfig c =
        Yaml.load(
            "defaults: {retry: {maxAttempts: 4}}", "routes: [{name: r, match: {hosts: [a.com]}}]");
    assertThat(c.routes().get(0).policy()).isEqualTo(c.defaultPolicy().withRouteName("r"));
  }

  @Test
  void aRouteCanTurnOffWhatDefaultsTurnedOn() throws Exception {
    AgentConfig c =
        Yaml.load(
            "defaults: {rateLimit: {enabled: true}, retry: {perAttemptTimeout: 2s}}",
            "routes:",
            "  - name: r",
            "    match: {hosts: [a.com]}",
            "    rateLimit: {enabled: false}",
            "    retry: {perAttemptTimeout: none}");
    Policy r = c.routes().get(0).policy();
    assertThat(r.rateLimit().enabled()).isFalse();
    assertThat(r.retry().perAttemptTimeout()).isNull();
    assertThat(c.defaultPolicy().retry().perAttemptTimeout()).isEqualTo(Duration.ofSeconds(2));
  }

  @Test
  void aRouteSwitchingTheWindowTypeGetsThatTypesDefaultSize() throws Exception {
    AgentConfig c =
        Yaml.load(
            "defaults: {circuitBreaker: {window: {type: count, size: 100}, minimumCalls: 10}}",
            "routes:",
            "  - {name: t, match: {hosts: [t.com]}, circuitBreaker: {window: {type: time}}}",
            "  - {name: s, match: {hosts: [s.com]}, circuitBreaker: {window: {size: 40}}}");
    assertThat(c.routes().get(0).policy().circuitBreaker().windowType()).isEqualTo(WindowType.TIME);
    assertThat(c.routes().get(0).policy().circuitBreaker().windowDuration())
        .isEqualTo(Duration.ofSeconds(30));
    assertThat(c.routes().get(1).policy().circuitBreaker().windowType())
        .isEqualTo(WindowType.COUNT);
    assertThat(c.routes().get(1).policy().circuitBreaker().windowSize()).isEqualTo(40);
  }

  @Test
  void routesShareNothingWithEachOther() throws Exception {
    AgentConfig c =
        Yaml.load(
            "routes:",
            "  - {name: a, match: {hosts: [a.com]}, retry: {maxAttempts: 7}}",
            "  - {name: b, match: {hosts: [b.com]}}");
    assertThat(c.routes().get(1).policy().retry().maxAttempts())
        .isEqualTo(RetryPolicy.DEFAULT_MAX_ATTEMPTS);
  }

  @Test
  void aBuiltInDefaultFollowsALoweredBoundDown() throws Exception {
    AgentConfig c =
        Yaml.load(
            "defaults: {retry: {deadline: 5s, backoff: {max: 50ms}}, circuitBreaker: {window: {size: 10}}}");
    Policy d = c.defaultPolicy();
    // Not retryAfter.max: it also bounds the pauseOn429 pause, which the deadline does not, so it
    // keeps the contract's default (CrossChecksTest).
    assertThat(d.retry().retryAfterMax()).isEqualTo(RetryPolicy.DEFAULT_RETRY_AFTER_MAX);
    assertThat(d.retry().backoff().initial()).isEqualTo(Duration.ofMillis(50));
    assertThat(d.circuitBreaker().minimumCalls()).isEqualTo(10);
  }

  @Test
  void aRouteLoweringABoundPullsTheBuiltInDefaultButKeepsAValueDefaultsSet() throws Exception {
    AgentConfig c =
        Yaml.load(
            "defaults: {retry: {retryAfter: {max: 2s}}}",
            "routes:",
            "  - {name: short, match: {hosts: [a.com]}, retry: {deadline: 3s}}",
            "  - {name: tiny, match: {hosts: [b.com]}, retry: {backoff: {max: 10ms}}}");
    assertThat(c.routes().get(0).policy().retry().retryAfterMax()).isEqualTo(Duration.ofSeconds(2));
    assertThat(c.routes().get(1).policy().retry().backoff().initial())
        .isEqualTo(Duration.ofMillis(10));
    assertThat(c.defaultPolicy().retry().backoff().initial())
        .isEqualTo(BackoffPolicy.DEFAULT_INITIAL);
  }
}
