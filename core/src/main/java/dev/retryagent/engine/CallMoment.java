package dev.retryagent.engine;

/**
 * The ladder's questions ({@link RetryRules.Moment}), answered from a {@link RetryCall}'s live
 * state at one moment ({@code now}), while the call holds its lock. One per decision.
 */
final class CallMoment implements RetryRules.Moment {
  private final RetryCall call;
  private final long now;
  private final long retryAfterNanos;

  CallMoment(RetryCall call, long now, long retryAfterNanos) {
    this.call = call;
    this.now = now;
    this.retryAfterNanos = retryAfterNanos;
  }

  @Override
  public boolean callerGaveUp() {
    return call.callerGaveUp();
  }

  @Override
  public boolean callerTimedOut() {
    return call.callerTimedOut(now);
  }

  @Override
  public int clientResendsExpected() {
    return call.clientResendsExpected();
  }

  @Override
  public boolean pastCallerTimeout(long delayNanos) {
    return call.pastCallerTimeout(now + delayNanos);
  }

  @Override
  public long retryAfterNanos() {
    return retryAfterNanos;
  }

  @Override
  public long previousDelayNanos() {
    return call.previousDelayNanos();
  }

  @Override
  public double nextRandom() {
    return call.nextRandom();
  }

  @Override
  public boolean pastDeadline(long delayNanos) {
    return call.pastDeadline(now + delayNanos);
  }

  @Override
  public boolean breakerOpenAfter(long delayNanos) {
    return call.breakerOpenAt(now + delayNanos);
  }

  @Override
  public boolean takeFromBudget() {
    return call.takeRetry(now);
  }
}
