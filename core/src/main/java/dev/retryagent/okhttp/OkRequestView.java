package dev.retryagent.okhttp;

import dev.retryagent.engine.RequestInfo;
import dev.retryagent.internal.observe.Sanitizer;
import okhttp3.Request;
import okhttp3.RequestBody;

/**
 * A {@link RequestInfo} over an OkHttp {@link Request}: what the enqueued call's view ({@link
 * OkRequest}) and the synchronous call ({@link SyncOkCall}, its own view) share, and the making of
 * an attempt's request (attempt header, the first attempt's idempotency key, a one-shot body
 * wrapped so we know whether it was written).
 */
interface OkRequestView extends RequestInfo {
  /** The request the call was made with. */
  Request viewed();

  /** A one-shot body of this call was written: it cannot be sent again. */
  void markBodyWritten();

  @Override
  default String method() {
    // As OkHttp sends it, case and all (RequestInfo#method).
    return viewed().method();
  }

  @Override
  default String scheme() {
    return viewed().url().scheme();
  }

  @Override
  default String host() {
    return viewed().url().host();
  }

  @Override
  default int port() {
    return viewed().url().port();
  }

  @Override
  default String path() {
    return viewed().url().encodedPath();
  }

  @Override
  default boolean atPastPath() {
    return Sanitizer.atPastPath(viewed().url().encodedQuery(), viewed().url().encodedFragment());
  }

  /**
   * Whether {@code body} may not be sent twice. OkHttp 3.14 introduced one-shot and duplex bodies;
   * before that every body was repeatable. A body whose {@code isOneShot()} or {@code isDuplex()}
   * throws (an application's bug, or a body over something that fails) is taken for one-shot: we
   * ask before the first attempt, where OkHttp asks only to resend or follow up, so the exception
   * must not end a call that OkHttp would have sent; and whether it can be sent twice is unknown.
   */
  static boolean isOneShot(RequestBody body) {
    if (body == null) {
      return false;
    }
    try {
      return body.isOneShot() || body.isDuplex();
    } catch (LinkageError olderOkHttp) {
      return false;
    } catch (Exception broken) {
      // Exception, not RuntimeException: a Kotlin body may throw a checked one undeclared.
      return true;
    }
  }

  /**
   * {@code base} with the attempt header set to {@code n} (when {@code attemptHeader} is not null),
   * {@code key} in {@code keyHeader} (when {@code key} is not null), and a one-shot body tracked
   * for {@code owner}; {@code base} itself when nothing needs to change.
   */
  static Request attemptOf(
      Request base,
      int n,
      String attemptHeader,
      String keyHeader,
      String key,
      boolean oneShot,
      OkRequestView owner) {
    if (attemptHeader == null && key == null && !oneShot) {
      return base;
    }
    Request.Builder b = base.newBuilder();
    if (attemptHeader != null) {
      b.header(attemptHeader, Integer.toString(n));
    }
    if (key != null) {
      b.header(keyHeader, key);
    }
    if (oneShot && !(base.body() instanceof TrackingRequestBody)) {
      b.method(base.method(), new TrackingRequestBody(base.body(), owner));
    }
    return b.build();
  }
}
