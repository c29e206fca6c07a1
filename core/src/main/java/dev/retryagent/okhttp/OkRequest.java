package dev.retryagent.okhttp;

import dev.retryagent.engine.RequestInfo;
import java.util.Locale;
import okhttp3.HttpUrl;
import okhttp3.Request;
import okhttp3.RequestBody;

/**
 * A {@link RequestInfo} view of an OkHttp {@link Request}, and the maker of each attempt's request
 * (attempt header; a one-shot body wrapped so we know whether it was written).
 */
final class OkRequest implements RequestInfo {
  private final Request request;
  private final String method;
  private final boolean oneShot;
  private volatile boolean bodyWritten;
  private String attemptHeader;

  OkRequest(Request request) {
    this.request = request;
    this.method = request.method().toUpperCase(Locale.ROOT);
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

  void prepare(String attemptHeader) {
    this.attemptHeader = attemptHeader;
  }

  void markBodyWritten() {
    bodyWritten = true;
  }

  Request original() {
    return request;
  }

  /** The request for attempt {@code n}; the original when nothing needs to change. */
  Request forAttempt(Request base, int n) {
    if (attemptHeader == null && !oneShot) {
      return base;
    }
    Request.Builder b = base.newBuilder();
    if (attemptHeader != null) {
      b.header(attemptHeader, Integer.toString(n));
    }
    if (oneShot && !(base.body() instanceof TrackingRequestBody)) {
      b.method(base.method(), new TrackingRequestBody(base.body(), this));
    }
    return b.build();
  }

  @Override
  public String method() {
    return method;
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
    return request.header(name);
  }

  @Override
  public boolean bodyReplayable() {
    return !oneShot || !bodyWritten;
  }
}
