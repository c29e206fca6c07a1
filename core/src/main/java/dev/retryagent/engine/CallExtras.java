package dev.retryagent.engine;

import java.util.function.BooleanSupplier;

/**
 * The part of a call's state that the common case never needs: a call whose first attempt ends it,
 * without a cancel signal, a deadline of the caller's or a client that resends on its own. A {@link
 * RetryCall} makes it on first use (its first retry, or the adapter's first such setting), so that
 * a call that succeeds at once is one object (issue 13). Not thread-safe: {@link RetryCall} guards
 * it.
 */
final class CallExtras {
  final CallBounds bounds;
  final ClientResends resends = new ClientResends();

  /** The caller's cancel signal ({@link RetryCall#cancelledWhen}), or null. */
  BooleanSupplier cancelled;

  /** The delay before the previous retry, 0 before the first: the base of decorrelated jitter. */
  long previousDelayNanos;

  /** When the pending retry was taken from the budget. */
  long retryTakenNanos;

  /**
   * @param attempt attempts started so far: the resends are those of the current one
   */
  CallExtras(HostState state, long startNanos, int attempt) {
    this.bounds = new CallBounds(state.perAttemptNanos, startNanos + state.deadlineNanos);
    resends.attemptStarted(attempt > 1);
  }
}
