package dev.retryagent.engine;

import dev.retryagent.policy.RetryPolicy;
import java.util.ArrayList;
import java.util.List;

/**
 * The exceptions of a call's earlier attempts, kept until the call ends with an exception, which
 * then carries them, in attempt order, as {@linkplain Throwable#getSuppressed() suppressed}
 * exceptions: a call that failed three times shows all three failures, and the exception itself is
 * still the last attempt's (its type and message unchanged). Not thread-safe: {@link RetryCall}
 * guards it.
 */
final class EarlierFailures {
  /**
   * An exception that already carries this many suppressed ones is left alone: a client that threw
   * one shared instance for every failure would otherwise collect every call's failures in it.
   */
  private static final int MAX_SUPPRESSED = 2 * RetryPolicy.MAX_ATTEMPTS_LIMIT;

  private List<Throwable> failures;

  /**
   * An attempt failed with {@code error} and the call decided {@code d}: the failure is kept when
   * the call goes on; when it ends with it, it gets the earlier ones. (When it ends with an
   * exception of the engine's, that one got them, and the adapter adds {@code error} to it.)
   */
  void attempted(Throwable error, Decision d) {
    if (!d.retry()) {
      if (d.error() == null) {
        attachTo(error);
      }
      return;
    }
    if (failures == null) {
      failures = new ArrayList<>(2);
    }
    failures.add(error);
  }

  /** The failure of the latest attempt kept (one the call went on after), or null. */
  Throwable latest() {
    return failures == null ? null : failures.get(failures.size() - 1);
  }

  /**
   * Adds the earlier failures to {@code last}, the exception the call ends with, as suppressed
   * exceptions; never {@code last} itself, nor one it already carries. Returns {@code last}.
   */
  <T extends Throwable> T attachTo(T last) {
    if (failures == null || last == null) {
      return last;
    }
    for (Throwable earlier : failures) {
      Throwable[] carried = last.getSuppressed();
      if (earlier == last || carried.length >= MAX_SUPPRESSED || contains(carried, earlier)) {
        continue;
      }
      last.addSuppressed(earlier);
    }
    return last;
  }

  private static boolean contains(Throwable[] all, Throwable one) {
    for (Throwable t : all) {
      if (t == one) {
        return true;
      }
    }
    return false;
  }
}
