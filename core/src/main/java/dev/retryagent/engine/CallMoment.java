package dev.retryagent.engine;

/**
 * The ladder's questions ({@link RetryRules.Moment}), answered from a {@link RetryCall}'s live
 * state at one moment ({@code now}), while the call holds its lock (its {@code decide} runs). One
 * per decision; the JIT keeps it off the heap when the decision is inlined.
 */
final class CallMoment implements RetryRules.Moment {
  private final RetryCall call;
  private final HostState state;
  private final CallExtras extras;
  private final long startNanos;
  private final long now;
  private final long retryAfterNanos;

  /**
   * @param extras the call's extras, or null while it has none
   * @param startNanos when the call started (an attempt has)
   */
  CallMoment(RetryCall call, CallExtras extras, long startNanos, long now, long retryAfterNanos) {
    this.call = call;
    this.state = call.state;
    this.extras = extras;
    this.startNanos = startNanos;
    this.now = now;
    this.retryAfterNanos = retryAfterNanos;
  }

  private CallBounds bounds() {
    return extras == null ? null : extras.boundsIfAny();
  }

  @Override
  public boolean callerGaveUp() {
    return call.cancelledByCaller();
  }

  @Override
  public boolean callerTimedOut() {
    return extras != null && extras.callerTimedOut(now);
  }

  @Override
  public int clientResendsExpected() {
    ClientResends r = extras == null ? null : extras.resendsIfAny();
    return r == null ? 0 : r.expected();
  }

  @Override
  public boolean pastCallerTimeout(long delayNanos) {
    CallBounds b = bounds();
    return b != null && b.pastCallerTimeout(retryStart(delayNanos));
  }

  /**
   * When a retry after {@code delayNanos} could start: not before the host's 429 pause ends, which
   * the rate limit makes it wait for after the delay ({@code pauseOn429}, even on a route that does
   * not wait for {@code Retry-After} itself). A retry the pause holds past the deadline would be
   * refused its permit after the delay, the response released by then (given back only from a copy:
   * {@link RetryCall#permitRefusedRetry}); known now, it is not made, and the response goes back as
   * it came.
   */
  private long retryStart(long delayNanos) {
    long at = now + delayNanos;
    PermitLimiter limiter = state.limiter;
    if (limiter != null && !state.observe) {
      long pauseEnds = now + limiter.pauseRemainingNanos(now);
      if (pauseEnds - at > 0) {
        at = pauseEnds;
      }
    }
    return at;
  }

  @Override
  public long retryAfterNanos() {
    return retryAfterNanos;
  }

  @Override
  public long previousDelayNanos() {
    return extras == null ? 0 : extras.previousDelayNanos;
  }

  @Override
  public double nextRandom() {
    return state.engine.random().nextDouble();
  }

  @Override
  public boolean pastDeadline(long delayNanos) {
    CallBounds b = bounds();
    long at = retryStart(delayNanos);
    // Without bounds of their own, the policy's deadline from the call's start.
    return b != null ? b.pastDeadline(at) : at - (startNanos + state.deadlineNanos) >= 0;
  }

  @Override
  public boolean breakerOpenAfter(long delayNanos) {
    // Observe mode never fails a call, so it never fails one early either.
    CircuitBreaker breaker = state.breaker;
    return breaker != null && !state.observe && breaker.isOpenAt(now + delayNanos);
  }

  @Override
  public boolean takeFromBudget() {
    return call.takeFromBudget(now);
  }
}
