package dev.retryagent.engine;

import dev.retryagent.policy.RetryPolicy;
import java.net.UnknownHostException;
import java.nio.channels.UnresolvedAddressException;

/**
 * Decides whether an attempt's outcome is retryable under a {@link RetryPolicy}, before any
 * question of safety (idempotency), attempts, time or budget.
 */
final class Classifier {
  private static final int MAX_DEPTH = 8;

  private Classifier() {}

  /** True when a response with {@code status} is retryable. */
  public static boolean isRetryableStatus(RetryPolicy policy, int status) {
    return policy.retryOnStatuses().contains(status);
  }

  /** True when an exception of kind {@code outcome} is retryable. */
  public static boolean isRetryableException(RetryPolicy policy, Outcome outcome, Throwable error) {
    if (outcome == Outcome.CANCELLED
        || outcome == Outcome.APPLICATION_FAILED
        || outcome == Outcome.POOL_TIMEOUT
        || isProtocolFailure(error)) {
      return false;
    }
    if (outcome.transport() != null && policy.retryOnTransport().contains(outcome.transport())) {
      return true;
    }
    return matchesExceptionList(policy, error);
  }

  /**
   * Apache HttpClient 5's protocol failure (an {@code HttpException}: a redirect loop or too many
   * redirects, a response that breaks the protocol): a deterministic failure, never retried. The
   * classic handler carries it through its retry loop as a {@code RuntimeException} caused by it;
   * the async client's exchange fails with the {@code HttpException} itself. By name (the engine
   * does not see HttpClient's classes): a {@code retryOn.exceptions} naming {@code
   * ProtocolException}, {@code HttpException}, {@code RuntimeException} or {@code Exception}
   * matched it, and the request was sent maxAttempts times to fail alike. HttpClient 4.5's alike: a
   * {@code ClientProtocolException} caused by an {@code org.apache.http.HttpException}.
   */
  private static boolean isProtocolFailure(Throwable error) {
    if (error == null) {
      return false;
    }
    Class<?> c = error.getClass();
    if (c.getName().equals("dev.retryagent.apache5.RetryExecHandler$ChainFailure")) {
      return true;
    }
    if (extendsNamed(c, "org.apache.hc.core5.http.HttpException")) {
      return true;
    }
    // HttpClient 4.5's: its InternalHttpClient throws an org.apache.http.HttpException (a redirect
    // loop, too many redirects, a ProtocolException) as a ClientProtocolException caused by it,
    // an IOException that a retryOn.exceptions naming IOException matched. Not its
    // NonRepeatableRequestException: an I/O failure (its cause) of a request HttpClient could not
    // resend, which the call judges as that failure (its body not replayable).
    Throwable cause = error.getCause();
    return c.getName().equals("org.apache.http.client.ClientProtocolException")
        && cause != null
        && !cause
            .getClass()
            .getName()
            .equals("org.apache.http.client.NonRepeatableRequestException")
        && extendsNamed(cause.getClass(), "org.apache.http.HttpException");
  }

  /** Whether {@code c} is, or extends, the class named {@code name}. */
  private static boolean extendsNamed(Class<?> c, String name) {
    for (; c != null; c = c.getSuperclass()) {
      if (c.getName().equals(name)) {
        return true;
      }
    }
    return false;
  }

  /**
   * True when {@code error} or one of its causes is, or extends, a class named in {@code
   * retryOn.exceptions}, or implements an interface named there (the contract says "its
   * supertypes"; a client's marker interface for transient failures is one). Matched by name, so
   * the classes need not be visible to us.
   */
  static boolean matchesExceptionList(RetryPolicy policy, Throwable error) {
    if (policy.retryOnExceptions().isEmpty()) {
      return false;
    }
    int depth = 0;
    for (Throwable t = error; t != null && depth < MAX_DEPTH; t = t.getCause(), depth++) {
      for (Class<?> c = t.getClass(); c != null && c != Object.class; c = c.getSuperclass()) {
        if (policy.retryOnExceptions().contains(c.getName())
            || implementsNamed(c, policy.retryOnExceptions())) {
          return true;
        }
      }
      // The JDK client reports an unknown host as UnresolvedAddressException; users name the
      // documented java.net.UnknownHostException.
      if (t instanceof UnresolvedAddressException
          && policy.retryOnExceptions().contains(UnknownHostException.class.getName())) {
        return true;
      }
    }
    return false;
  }

  /**
   * True when {@code c} implements, directly or through another interface, one of {@code names}.
   */
  private static boolean implementsNamed(Class<?> c, java.util.Collection<String> names) {
    for (Class<?> i : c.getInterfaces()) {
      if (names.contains(i.getName()) || implementsNamed(i, names)) {
        return true;
      }
    }
    return false;
  }
}
