package dev.retryagent.cli;

import dev.retryagent.config.FleetConfig;
import dev.retryagent.fleet.FleetSettings;
import dev.retryagent.internal.Units;
import dev.retryagent.policy.BackoffPolicy;
import dev.retryagent.policy.BudgetPolicy;
import dev.retryagent.policy.CircuitBreakerPolicy;
import dev.retryagent.policy.Policy;
import dev.retryagent.policy.RateLimitPolicy;
import dev.retryagent.policy.RetryPolicy;
import dev.retryagent.policy.TransportFailure;
import dev.retryagent.policy.UnsafeMethods;
import java.util.ArrayList;
import java.util.List;

/** An effective policy as a readable block, one section per line group, in the file's words. */
final class PolicyText {
  private static final String INDENT = "  ";
  private static final String CONTINUED = "             ";

  private PolicyText() {}

  /**
   * @param fleet the file's {@code fleet} section, or null
   */
  static List<String> lines(Policy p, FleetConfig fleet) {
    List<String> out = new ArrayList<>();
    retry(p.retry(), out);
    budget(p.budget(), p.retry(), out);
    breaker(p.circuitBreaker(), out);
    rateLimit(p, fleet, out);
    return out;
  }

  private static void retry(RetryPolicy r, List<String> out) {
    if (!r.enabled()) {
      out.add(INDENT + "retry      off (retry.enabled: false): calls pass through untouched");
      return;
    }
    BackoffPolicy b = r.backoff();
    out.add(
        INDENT
            + "retry      up to "
            + r.maxAttempts()
            + (r.maxAttempts() == 1 ? " attempt" : " attempts")
            + " within a deadline of "
            + Units.formatDuration(r.deadline())
            + "; backoff "
            + Units.formatDuration(b.initial())
            + " x"
            + Units.formatNumber(b.multiplier())
            + " up to "
            + Units.formatDuration(b.max())
            + ", jitter "
            + b.jitter().configName()
            + (b.jitter().configName().equals("proportional")
                ? " (factor " + Units.formatNumber(b.jitterFactor()) + ")"
                : ""));
    List<String> transport = new ArrayList<>();
    for (TransportFailure t : r.retryOnTransport()) {
      transport.add(t.configName());
    }
    out.add(
        CONTINUED
            + "retryOn statuses "
            + Units.formatList(r.retryOnStatuses().spec())
            + "; transport "
            + Units.formatList(transport)
            + "; exceptions "
            + Units.formatList(r.retryOnExceptions()));
    out.add(
        CONTINUED
            + "idempotent methods "
            + Units.formatList(r.methods())
            + "; other methods: "
            + unsafe(r));
    out.add(
        CONTINUED
            + "Retry-After "
            + (r.retryAfterEnabled()
                ? "waited for up to " + Units.formatDuration(r.retryAfterMax())
                : "ignored (retryAfter.enabled: false)")
            + "; perAttemptTimeout "
            + Units.formatDuration(r.perAttemptTimeout())
            + "; attemptHeader "
            + (r.attemptHeader() == null ? "none" : r.attemptHeader())
            + "; replayBodyLimit "
            + Units.formatSize(r.replayBodyLimit()));
  }

  private static String unsafe(RetryPolicy r) {
    UnsafeMethods u = r.unsafeMethods();
    switch (u) {
      case NEVER:
        return "never retried (unsafeMethods: never)";
      case IF_NOT_SENT:
        return "retried only when never sent (unsafeMethods: if-not-sent)";
      case IF_IDEMPOTENCY_KEY:
        return "retried when never sent, or on any retryable outcome with the "
            + r.idempotencyKeyHeader()
            + " header (unsafeMethods: if-idempotency-key)";
      default:
        return "retried like idempotent ones (unsafeMethods: always)";
    }
  }

  private static void budget(BudgetPolicy b, RetryPolicy r, List<String> out) {
    if (!b.enabled() || !r.enabled()) {
      out.add(INDENT + "budget     off");
      return;
    }
    out.add(
        INDENT
            + "budget     per host: retries may add "
            + Units.formatRatio(b.ratio())
            + " of the calls in "
            + Units.formatDuration(b.window())
            + ", and "
            + b.minPerSecond()
            + " per second whatever the ratio");
  }

  private static void breaker(CircuitBreakerPolicy c, List<String> out) {
    if (!c.enabled()) {
      out.add(INDENT + "breaker    off");
      return;
    }
    String window =
        c.windowType() == CircuitBreakerPolicy.WindowType.COUNT
            ? "the last " + c.windowSize() + " calls"
            : "the last " + Units.formatDuration(c.windowDuration());
    out.add(
        INDENT
            + "breaker    per "
            + c.scope().configName()
            + ": opens at "
            + Units.formatRatio(c.failureRateThreshold())
            + " failures over "
            + window
            + " (from "
            + c.minimumCalls()
            + " calls on); open for "
            + Units.formatDuration(c.openFor())
            + ", then "
            + c.halfOpenCalls()
            + (c.halfOpenCalls() == 1 ? " trial call" : " trial calls"));
    out.add(
        CONTINUED
            + "failures: statuses "
            + Units.formatList(c.failOnStatuses().spec())
            + (c.failOnTransport() ? ", transport errors" : "; transport errors do not count")
            + (c.slowCallDuration() == null
                ? ""
                : "; slow calls: over "
                    + Units.formatDuration(c.slowCallDuration())
                    + ", opens at "
                    + Units.formatRatio(c.slowCallRateThreshold())
                    + " slow"));
  }

  private static void rateLimit(Policy p, FleetConfig fleet, List<String> out) {
    RateLimitPolicy r = p.rateLimit();
    if (!r.enabled()) {
      out.add(INDENT + "rateLimit  off");
      return;
    }
    boolean fleetWide = r.scope() == RateLimitPolicy.Scope.FLEET && fleet != null;
    out.add(
        INDENT
            + (fleetWide ? "rateLimit  fleet-wide (every JVM together): " : "rateLimit  per host: ")
            + Units.formatNumber(r.perSecond())
            + " per second, burst "
            + r.burst()
            + ", wait up to "
            + Units.formatDuration(r.maxWait())
            + " for a permit"
            + (r.pauseOn429()
                ? fleetWide
                    ? "; a 429 with Retry-After pauses the route in every JVM"
                    : "; a 429 with Retry-After pauses the host"
                : ""));
    if (fleetWide) {
      out.add(
          CONTINUED
              + "shared in "
              + fleet.redis()
              + " under "
              + fleet.keyPrefix()
              + ":"
              + FleetSettings.routeKeyPart(p.routeName())
              + "; while Redis does not answer within "
              + Units.formatDuration(fleet.commandTimeout())
              + ", this JVM keeps to "
              + Units.formatRatio(fleet.fallbackShare())
              + " of it ("
              + Units.formatNumber(r.perSecond() * fleet.fallbackShare())
              + " per second)");
    }
  }
}
