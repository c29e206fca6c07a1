package dev.retryagent.engine;

/**
 * The counters of one route's fleet limit in this JVM, as {@link FleetLimits#counters()} reports
 * them: monotonic totals since start. Immutable.
 */
public final class FleetRouteCounters {
  private final String route;
  private final long granted;
  private final long waited;
  private final long refused;
  private final long fallbacks;
  private final long pausesSet;
  private final long pausesHonoured;

  public FleetRouteCounters(
      String route,
      long granted,
      long waited,
      long refused,
      long fallbacks,
      long pausesSet,
      long pausesHonoured) {
    this.route = route;
    this.granted = granted;
    this.waited = waited;
    this.refused = refused;
    this.fallbacks = fallbacks;
    this.pausesSet = pausesSet;
    this.pausesHonoured = pausesHonoured;
  }

  public String route() {
    return route;
  }

  /** Permits the fleet limit gave (at once or after a wait); the local share's are fallbacks. */
  public long granted() {
    return granted;
  }

  /** Of those, permits given after a wait. */
  public long waited() {
    return waited;
  }

  /** Acquisitions refused: the wait would have passed {@code maxWait} or the deadline. */
  public long refused() {
    return refused;
  }

  /** Acquisitions decided by the local share because the store did not answer in time. */
  public long fallbacks() {
    return fallbacks;
  }

  /** 429 pauses this JVM set or extended. */
  public long pausesSet() {
    return pausesSet;
  }

  /** Acquisitions that waited for (or were refused by) a pause, whichever JVM set it. */
  public long pausesHonoured() {
    return pausesHonoured;
  }
}
