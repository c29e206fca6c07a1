package dev.retryagent.okhttp;

import dev.retryagent.engine.RequestInfo;
import dev.retryagent.engine.RetryCall;
import dev.retryagent.policy.RetryPolicy;
import java.util.Locale;
import okhttp3.HttpUrl;
import okhttp3.Request;
import okhttp3.RequestBody;

/**
 * A {@link RequestInfo} view of an OkHttp {@link Request}, and the maker of each attempt's request
 * (attempt header; the idempotency key of the first attempt kept; a one-shot body wrapped so we
 * know whether it was written).
 *
 * <p>Headers are read from the last request an attempt sent ({@link #forAttempt}): the request as
 * the application's interceptors left it, so the idempotency gate sees a key that one of them adds.
 * Until the first attempt, from the request the call was made with.
 *
 * <p>Not final: {@link SyncOkCall} is this view and the rest of a synchronous call in one object.
 */
class OkRequest implements RequestInfo {
  // Few fields: one of these is made for every call (issue 13). The method is upper-cased when
  // read, the attempt and key headers read from the call's policy.
  private final Request request;
  private final boolean oneShot;
  private volatile boolean bodyWritten;
  private volatile RetryCall decidedBy; // set once the engine made it; null: no headers to set
  // The first attempt's request, and the key it carried (null: none); set once.
  private volatile Request first;
  private volatile Request wire;

  /**
   * A view of {@code request} whose caller never gives up as far as it knows ({@link
   * #callerGaveUp}): the adapter tells the engine otherwise, or a subclass knows the call.
   */
  OkRequest(Request request) {
    this.request = request;
    this.oneShot = isOneShot(request.body());
  }

  /** OkHttp 3.14 introduced one-shot and duplex bodies; before that every body was repeatable. */
  private static boolean isOneShot(RequestBody body) {
    if (body == null) {
      return false;
    }
    try {
      return body.isOneShot() || body.isDuplex();
    } catch (LinkageError olderOkHttp) {
      return false;
    }
  }

  /**
   * The call that decides, whose policy names the attempt header (the attempt number) and the
   * idempotency key's header (a retry carries the first attempt's key).
   */
  void prepare(RetryCall call) {
    this.decidedBy = call;
  }

  /** The call {@link #prepare} was given, or null. */
  RetryCall decidedBy() {
    return decidedBy;
  }

  void markBodyWritten() {
    bodyWritten = true;
  }

  Request original() {
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
    Request attempt = base;
    if (attemptHeader != null || key != null || oneShot) {
      Request.Builder b = base.newBuilder();
      if (attemptHeader != null) {
        b.header(attemptHeader, Integer.toString(n));
      }
      if (key != null) {
        b.header(keyHeader, key);
      }
      if (oneShot && !(base.body() instanceof TrackingRequestBody)) {
        b.method(base.method(), new TrackingRequestBody(base.body(), this));
      }
      attempt = b.build();
    }
    if (firstSent == null) {
      first = attempt;
    }
    wire = attempt;
    return attempt;
  }

  @Override
  public String method() {
    String m = request.method();
    for (int i = 0; i < m.length(); i++) {
      // Every character toUpperCase could change is at or above 'a' (lower case, and beyond ASCII).
      if (m.charAt(i) >= 'a') {
        return m.toUpperCase(Locale.ROOT); // rare: OkHttp keeps the case it was given
      }
    }
    return m;
  }

  @Override
  public String scheme() {
    return url().scheme();
  }

  @Override
  public String host() {
    return url().host();
  }

  @Override
  public int port() {
    return url().port();
  }

  @Override
  public String path() {
    return url().encodedPath();
  }

  private HttpUrl url() {
    return request.url();
  }

  @Override
  public String header(String name) {
    Request sent = wire;
    return (sent != null ? sent : request).header(name);
  }

  /** False: see {@link SyncOkCall}, which asks its OkHttp call (a field fewer here, issue 13). */
  @Override
  public boolean callerGaveUp() {
    return false;
  }

  @Override
  public boolean bodyReplayable() {
    return !oneShot || !bodyWritten;
  }
}
