package dev.retryagent.internal.jdk;

import dev.retryagent.engine.CallBounds;
import dev.retryagent.engine.RequestInfo;
import java.net.URI;
import java.net.http.HttpRequest;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * A {@link RequestInfo} view of an {@link HttpRequest}, and the maker of each attempt's request:
 * the same request, with the body produced again when needed, the attempt header and the attempt
 * timeout. Requests are immutable, so an attempt that changes nothing sends the original object.
 */
final class JdkRequest implements RequestInfo {
  private final HttpRequest request;
  private final String method;
  private final String scheme;
  private final String host;
  private final int port;
  private final String path;
  private ReplayableBody body;
  private String attemptHeader;

  JdkRequest(HttpRequest request) {
    this.request = request;
    this.method = request.method().toUpperCase(Locale.ROOT);
    URI uri = request.uri();
    this.scheme = uri.getScheme() == null ? "http" : uri.getScheme().toLowerCase(Locale.ROOT);
    this.host = uri.getHost() == null ? "" : uri.getHost();
    this.port = uri.getPort() >= 0 ? uri.getPort() : ("https".equals(scheme) ? 443 : 80);
    String p = uri.getRawPath();
    this.path = p == null || p.isEmpty() ? "/" : p;
  }

  /** Called once the policy is known: how much of a streamed body may be kept. */
  void prepare(long replayBodyLimit, String attemptHeader) {
    this.body = ReplayableBody.of(request.bodyPublisher().orElse(null), replayBodyLimit);
    this.attemptHeader = attemptHeader;
  }

  @Override
  public String method() {
    return method;
  }

  @Override
  public String scheme() {
    return scheme;
  }

  @Override
  public String host() {
    return host;
  }

  @Override
  public int port() {
    return port;
  }

  @Override
  public String path() {
    return path;
  }

  @Override
  public String header(String name) {
    return request.headers().firstValue(name).orElse(null);
  }

  @Override
  public boolean bodyReplayable() {
    return body == null || body.canSendAgain();
  }

  /**
   * The request for attempt {@code n}.
   *
   * @param limitNanos the policy's bound on the attempt, or -1 for none: the request's own timeout
   *     is kept when it is shorter ({@link CallBounds#shorterTimeout})
   */
  HttpRequest forAttempt(int n, long limitNanos) {
    long own = request.timeout().map(Duration::toNanos).orElse(-1L);
    long timeoutNanos = CallBounds.shorterTimeout(limitNanos, own);
    boolean sameBody = body == null || !body.isTeed();
    if (sameBody && attemptHeader == null && timeoutNanos < 0) {
      return request;
    }
    try {
      return copy(n, timeoutNanos);
    } catch (IllegalArgumentException e) {
      // A header the builder refuses (only possible with jdk.httpclient.allowRestrictedHeaders):
      // fall back to the original request rather than fail the call.
      return sameBody ? request : copyBodyOnly();
    }
  }

  private HttpRequest copy(int n, long timeoutNanos) {
    HttpRequest.Builder b = HttpRequest.newBuilder(request.uri());
    b.expectContinue(request.expectContinue());
    request.version().ifPresent(b::version);
    if (timeoutNanos >= 0) {
      b.timeout(Duration.ofNanos(Math.max(1_000_000, timeoutNanos)));
    } else {
      request.timeout().ifPresent(b::timeout);
    }
    for (Map.Entry<String, List<String>> h : request.headers().map().entrySet()) {
      if (attemptHeader != null && h.getKey().equalsIgnoreCase(attemptHeader)) {
        continue;
      }
      for (String v : h.getValue()) {
        b.header(h.getKey(), v);
      }
    }
    if (attemptHeader != null) {
      b.setHeader(attemptHeader, Integer.toString(n));
    }
    setMethod(b);
    return b.build();
  }

  private HttpRequest copyBodyOnly() {
    HttpRequest.Builder b = HttpRequest.newBuilder(request.uri());
    b.expectContinue(request.expectContinue());
    request.version().ifPresent(b::version);
    request.timeout().ifPresent(b::timeout);
    request.headers().map().forEach((k, vs) -> vs.forEach(v -> b.header(k, v)));
    setMethod(b);
    return b.build();
  }

  private void setMethod(HttpRequest.Builder b) {
    HttpRequest.BodyPublisher publisher = body == null ? null : body.next();
    if (publisher == null) {
      // Keep a body-less request body-less: GET() and DELETE() send no Content-Length.
      if ("GET".equals(request.method())) {
        b.GET();
        return;
      }
      if ("DELETE".equals(request.method())) {
        b.DELETE();
        return;
      }
      publisher = HttpRequest.BodyPublishers.noBody();
    }
    b.method(request.method(), publisher);
  }
}
