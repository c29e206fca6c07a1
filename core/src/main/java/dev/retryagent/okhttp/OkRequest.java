package dev.retryagent.okhttp;

import dev.retryagent.engine.RetryCall;
import dev.retryagent.policy.RetryPolicy;
import okhttp3.Request;

/**
 * The view of an enqueued OkHttp call's {@link Request}, and the maker of each attempt's request
 * (attempt header; the idempotency key of the first attempt kept; a one-shot body wrapped so we
 * know whether it was written).
 *
 * <p>Headers are read from the last request an attempt sent ({@link #forAttempt}): the request as
 * the application's interceptors left it (each retry runs them again), so the idempotency gate sees
 * a key that one of them adds. Until the first attempt, from the request the call was made with.
 */
final class OkRequest implements OkRequestView {
  // Few fields: one of these is made for every call (issue 13). The method is upper-cased when
  // read, the attempt and key headers read from the call's policy.
  private final Request request;
  private final boolean oneShot;
  private volatile boolean bodyWritten;
  private volatile RetryCall decidedBy; // set once the engine made it; null: no headers to set
  // The first attempt's request, and the key it carried (null: none); set once.
  private volatile Request first;
  private volatile Request wire;

  OkRequest(Request request) {
    this.request = request;
    this.oneShot = OkRequestView.isOneShot(request.body());
  }

  /**
   * The call that decides, whose policy names the attempt header (the attempt number) and the
   * idempotency key's header (a retry carries the first attempt's key).
   */
  void prepare(RetryCall call) {
    this.decidedBy = call;
  }

  @Override
  public void markBodyWritten() {
    bodyWritten = true;
  }

  @Override
  public Request viewed() {
    return request;
  }

  /**
   * The request for attempt {@code n}, made from {@code base} (the request as the application's
   * interceptors pass it on); {@code base} itself when nothing needs to change. A retry carries the
   * idempotency key the first attempt carried, even when an application interceptor makes a new one
   * each time (an enqueued call's retries run the application's interceptors again): the server
   * must see the same key, or the key protects nothing.
   */
  Request forAttempt(Request base, int n) {
    RetryCall decider = decidedBy;
    RetryPolicy retry = decider == null ? null : decider.policy().retry();
    String attemptHeader = retry == null ? null : retry.attemptHeader();
    String keyHeader = retry == null ? null : retry.idempotencyKeyHeader();
    Request firstSent = first;
    String key = null;
    if (firstSent != null && keyHeader != null) {
      key = firstSent.header(keyHeader);
      if (key != null && key.equals(base.header(keyHeader))) {
        key = null;
      }
    }
    Request attempt =
        OkRequestView.attemptOf(base, n, attemptHeader, keyHeader, key, oneShot, this);
    if (firstSent == null) {
      first = attempt;
    }
    wire = attempt;
    return attempt;
  }

  @Override
  public String header(String name) {
    Request sent = wire;
    return (sent != null ? sent : request).header(name);
  }

  @Override
  public boolean bodyReplayable() {
    return !oneShot || !bodyWritten;
  }
}
