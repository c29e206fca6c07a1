package dev.retryagent.fleet;

import dev.retryagent.config.FleetConfig;
import dev.retryagent.engine.Clock;
import dev.retryagent.engine.FleetLimits;
import dev.retryagent.engine.FleetRouteCounters;
import dev.retryagent.engine.PermitLimiter;
import dev.retryagent.policy.RateLimitPolicy;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;

/**
 * Fleet mode for the engine: the configuration's {@code fleet} section made a {@link
 * FleetConnection}, behind core's {@link FleetLimits} seam. The agent creates one only when the
 * file has a {@code fleet} section, so an agent without one never loads this module or its Redis
 * client. Thread-safe.
 */
public final class FleetMode implements FleetLimits, AutoCloseable {
  private final FleetConfig config;
  private final FleetConnection connection;

  private FleetMode(FleetConfig config, FleetConnection connection) {
    this.config = config;
    this.connection = connection;
  }

  /**
   * Joins the fleet of {@code config}; returns at once (the connection is made on the fleet's own
   * daemon thread, and limits use the local share until it is).
   *
   * @param log where the once-per-outage lines go; never given the URL's user-info
   */
  public static FleetMode start(FleetConfig config, Consumer<String> log) {
    return start(config, log, null);
  }

  /**
   * Joins the fleet of {@code config} as {@link #start(FleetConfig, Consumer)} does, in place of
   * {@code previous} (the fleet a reload leaves, maybe closed already; null: none): its routes'
   * counters go on here (a reload resets none), and the 429 pauses this JVM holds there hold here
   * too, written to this fleet's Redis once it answers.
   */
  public static FleetMode start(FleetConfig config, Consumer<String> log, FleetLimits previous) {
    FleetSettings settings =
        FleetSettings.builder(config.redis())
            .connectTimeout(config.connectTimeout())
            .commandTimeout(config.commandTimeout())
            .keyPrefix(config.keyPrefix())
            .fallbackShare(config.fallbackShare())
            .build();
    FleetConnection before =
        previous instanceof FleetMode ? ((FleetMode) previous).connection : null;
    return new FleetMode(config, FleetConnection.start(settings, Clock.SYSTEM, log, before));
  }

  /** The section this fleet was started from: a reload with another one starts another fleet. */
  public FleetConfig config() {
    return config;
  }

  public FleetConnection connection() {
    return connection;
  }

  @Override
  public PermitLimiter limiter(String route, RateLimitPolicy limit, Duration retryAfterMax) {
    return connection.limiter(route, limit, retryAfterMax);
  }

  @Override
  public PermitLimiter limiter(
      String route, RateLimitPolicy limit, Duration retryAfterMax, long generation) {
    return connection.limiter(route, limit, retryAfterMax, generation);
  }

  @Override
  public List<FleetRouteCounters> counters() {
    List<FleetRouteCounters> out = new ArrayList<>();
    for (FleetRateLimiter l : connection.limiters()) {
      FleetMetrics m = l.metrics();
      out.add(
          new FleetRouteCounters(
              l.route(),
              m.granted(),
              m.waited(),
              m.refused(),
              m.fallbacks(),
              m.pausesSet(),
              m.pausesHonoured()));
    }
    return out;
  }

  @Override
  public boolean shared() {
    return connection.isShared();
  }

  /** Leaves the fleet: the live count drops this JVM, the connections close. */
  @Override
  public void close() {
    connection.close();
  }
}
