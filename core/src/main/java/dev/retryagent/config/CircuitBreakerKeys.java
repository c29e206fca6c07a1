package dev.retryagent.config;

import static dev.retryagent.config.ValueType.BOOLEAN;
import static dev.retryagent.config.ValueType.duration;
import static dev.retryagent.config.ValueType.enumOf;
import static dev.retryagent.config.ValueType.integer;
import static dev.retryagent.config.ValueType.listOf;
import static dev.retryagent.config.ValueType.ratio;

import dev.retryagent.config.ConfigSchema.KeyRef;
import dev.retryagent.policy.CircuitBreakerPolicy;
import java.time.Duration;

/**
 * The {@code circuitBreaker} section of a policy, with its {@code window}, {@code slowCall} and
 * {@code failOn} maps. Each key is written once, with where its value goes ({@link KeyVisitor});
 * bounds are {@link CircuitBreakerPolicy}'s, defaults and meanings are in docs/configuration.md.
 */
final class CircuitBreakerKeys {
  private CircuitBreakerKeys() {}

  /** Read by the cross-key checks ({@link CrossChecks}): a window's size depends on its type. */
  static final KeyRef WINDOW_TYPE = new KeyRef();

  static final KeyRef WINDOW_SIZE = new KeyRef();
  static final KeyRef MINIMUM_CALLS = new KeyRef();

  static void visit(KeyVisitor parent, ConfigDraft d) {
    KeyVisitor k =
        parent.section(
            "circuitBreaker", "Circuit breaker per target host (scheme://host:port) or per route.");
    if (k.key("enabled", BOOLEAN)) {
      d.circuitBreaker.enabled(k.bool());
    }
    if (k.key("scope", enumOf(CircuitBreakerPolicy.Scope.class))) {
      d.circuitBreaker.scope((CircuitBreakerPolicy.Scope) k.value());
    }
    KeyVisitor window =
        k.section(
            "window", "{type: count, size: 50} (last N attempts) or {type: time, size: 30s}.");
    if (window.key("type", enumOf(CircuitBreakerPolicy.WindowType.class), WINDOW_TYPE)) {
      d.windowType = (CircuitBreakerPolicy.WindowType) window.value();
    }
    // No setter: CrossChecks.window() reads the size with the type, which says what it is.
    window.key("size", ValueType.COUNT_OR_DURATION, WINDOW_SIZE);
    if (k.key("minimumCalls", integer(1, CircuitBreakerPolicy.MAX_MINIMUM_CALLS), MINIMUM_CALLS)) {
      d.circuitBreaker.minimumCalls(k.intValue());
    }
    if (k.key("failureRateThreshold", ratio(0, 1, true))) {
      d.circuitBreaker.failureRateThreshold(k.number());
    }
    KeyVisitor slowCall = k.section("slowCall", "Slow attempts count towards a second rate.");
    Duration slowLimit = CircuitBreakerPolicy.MAX_SLOW_CALL_DURATION;
    if (slowCall.noneOr("duration", duration(Duration.ZERO, true, slowLimit))) {
      d.circuitBreaker.slowCallDuration(slowCall.duration());
    }
    if (slowCall.key("rateThreshold", ratio(0, 1, true))) {
      d.circuitBreaker.slowCallRateThreshold(slowCall.number());
    }
    if (k.key("openFor", duration(Duration.ZERO, true, CircuitBreakerPolicy.MAX_OPEN_FOR))) {
      d.circuitBreaker.openFor(k.duration());
    }
    if (k.key("halfOpenCalls", integer(1, CircuitBreakerPolicy.MAX_HALF_OPEN_CALLS))) {
      d.circuitBreaker.halfOpenCalls(k.intValue());
    }
    KeyVisitor failOn = k.section("failOn", "Outcomes that count as failures.");
    if (failOn.key("statuses", listOf(ValueType.STATUS))) {
      d.circuitBreaker.failOnStatuses(failOn.statuses());
    }
    if (failOn.key("transport", BOOLEAN)) {
      d.circuitBreaker.failOnTransport(failOn.bool());
    }
    if (k.key("maxHosts", integer(1, CircuitBreakerPolicy.MAX_HOSTS_LIMIT))) {
      d.circuitBreaker.maxHosts(k.intValue());
    }
  }
}
