package dev.retryagent.internal.jdk;

import dev.retryagent.engine.Decision;
import dev.retryagent.engine.RetryCall;
import java.net.http.HttpResponse;
import java.net.http.HttpResponse.BodyHandler;
import java.net.http.HttpResponse.BodySubscriber;
import java.net.http.HttpResponse.BodySubscribers;

/**
 * Wraps the caller's {@link BodyHandler}: it sees the status and headers before the body, so the
 * retry decision is made there. A response that will be retried gets a subscriber that reads and
 * drops its body (freeing the connection) and never reaches the caller's handler, which therefore
 * runs exactly once per call, for the response the caller receives.
 */
final class DecidingBodyHandler<T> implements BodyHandler<T> {
  private final BodyHandler<T> delegate;
  private final RetryCall call;

  DecidingBodyHandler(BodyHandler<T> delegate, RetryCall call) {
    this.delegate = delegate;
    this.call = call;
  }

  @Override
  public BodySubscriber<T> apply(HttpResponse.ResponseInfo info) {
    Decision d;
    try {
      d = call.onResponse(info.statusCode(), info.headers().firstValue("Retry-After").orElse(null));
    } catch (RuntimeException e) {
      // Our bug must not cost the caller its response.
      return delegate.apply(info);
    }
    if (d.retry() || d.error() != null) {
      return BodySubscribers.replacing(null);
    }
    return delegate.apply(info);
  }
}
