package dev.retryagent.engine;

import dev.retryagent.policy.RateLimitPolicy;
import java.time.Duration;
import java.util.List;

/**
 * Fleet mode as the engine sees it: the limits of routes whose {@code rateLimit.scope} is {@code
 * fleet}, shared by every JVM of a service. Core defines this seam and never implements it (the
 * {@code retry-agent-fleet} module does, on Redis), so the engine knows no Redis client. Given to
 * the engine with {@link RetryEngine#useFleet}.
 */
public interface FleetLimits {
  /**
   * The fleet limit of {@code route}: the same object for the same arguments, so the engine may
   * look it up once per call. Never blocks on the network.
   *
   * @param limit the route's {@code rateLimit}: {@code perSecond} and {@code burst} fleet-wide
   * @param retryAfterMax the longest pause a 429 may set
   */
  PermitLimiter limiter(String route, RateLimitPolicy limit, Duration retryAfterMax);

  /**
   * {@link #limiter(String, RateLimitPolicy, Duration)} asked under configuration {@code
   * generation} (larger is later): a call that read the settings before a reload may ask after a
   * call under the new ones did, with the old limit. A fleet that keeps one limiter per route must
   * not let that older limit replace the newer one (it would hold until the next reload); it may
   * give such a call the route's newer limiter. By default the generation is not looked at.
   */
  default PermitLimiter limiter(
      String route, RateLimitPolicy limit, Duration retryAfterMax, long generation) {
    return limiter(route, limit, retryAfterMax);
  }

  /** What the fleet limits of this JVM did so far, one entry per route, for metrics. */
  List<FleetRouteCounters> counters();

  /** True while the limits are shared (the store answers); false while each JVM limits itself. */
  boolean shared();

  /** Leaves the fleet (at exit, or when a reload names another fleet); limits decide locally. */
  default void close() {}
}
