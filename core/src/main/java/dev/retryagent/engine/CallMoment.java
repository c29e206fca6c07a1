package dev.retryagent.engine;

import java.util.function.BooleanSupplier;

/**
 * The retry ladder's questions ({@link RetryRules.Moment}), answered from one call's state at one
 * moment, {@code now}. Made by {@link RetryCall} under its lock, used only while it decides.
 */
final class CallMoment implements RetryRules.Moment {
  private final long now;
  private final long retryAfterNanos;
  private final long previousDelayNanos;
  private final CallBounds bounds;
  private final ClientResends resends;
  private final HostHold host;
  private final boolean observe;
  private final RandomSource random;
  private final BooleanSupplier callerGaveUp;

  CallMoment(
      long now,
      long retryAfterNanos,
      long previousDelayNanos,
      CallBounds bounds,
      ClientResends resends,
      HostHold host,
      boolean observe,
      RandomSource random,
      BooleanSupplier callerGaveUp) {
    this.now = now;
    this.retryAfterNanos = retryAfterNanos;
    this.previousDelayNanos = previousDelayNanos;
    this.bounds = bounds;
    this.resends = resends;
    this.host = host;
    this.observe = observe;
    this.random = random;
    this.callerGaveUp = callerGaveUp;
  }

  @Override
  public boolean callerGaveUp() {
    return callerGaveUp.getAsBoolean();
  }

  @Override
  public boolean callerTimedOut() {
    return bounds.callerTimedOut(now);
  }

  @Override
  public int clientResendsExpected() {
    return resends.expected();
  }

  @Override
  public boolean pastCallerTimeout(long delayNanos) {
    return bounds.pastCallerTimeout(now + delayNanos);
  }

  @Override
  public long retryAfterNanos() {
    return retryAfterNanos;
  }

  @Override
  public long previousDelayNanos() {
    return previousDelayNanos;
  }

  @Override
  public double nextRandom() {
    return random.nextDouble();
  }

  @Override
  public boolean pastDeadline(long delayNanos) {
    return bounds.pastDeadline(now + delayNanos);
  }

  @Override
  public boolean breakerOpenAfter(long delayNanos) {
    // Observe mode never fails a call, so it never fails one early either.
    return host.breaker() != null && !observe && host.breaker().isOpenAt(now + delayNanos);
  }

  @Override
  public boolean takeFromBudget() {
    return host.takeRetry(now);
  }
}
