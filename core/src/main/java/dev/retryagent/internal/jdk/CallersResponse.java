package dev.retryagent.internal.jdk;

import dev.retryagent.engine.SyncRetryLoop;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpHeaders;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;

/**
 * The response of an attempt whose request was the agent's copy of the application's (with the
 * policy's attempt header, the policy's attempt timeout, or the agent's copy of a streamed body:
 * {@link JdkRequest#forAttempt}), as the application gets it: everything is the JDK's response, but
 * its {@link #request()} (and that of each {@link #previousResponse()}, a redirect's) shows the
 * request as the JDK shows it without the agent.
 *
 * <p>Why: the JDK's {@code response.request()} is its own copy of the request it sent (after a
 * redirect, of the request it followed with): without the agent, the application's headers, timeout
 * and body publisher. With the agent it showed the attempt header, the attempt's timeout and the
 * agent's publisher (a tee of a streamed body, or the copy it kept), which an application that
 * sends {@code response.request()} again then sent. An attempt that sends the application's own
 * request is not wrapped: the plain call makes no object more.
 */
final class CallersResponse<T> extends AttemptsResponse<T> {
  private final HttpRequest callers; // the request the application sent
  private final String attemptHeader; // the policy's, or null
  // Made when first asked, then the same object every time, as the JDK's response answers.
  private volatile HttpRequest request;
  private volatile Optional<HttpResponse<T>> previous;

  private CallersResponse(HttpResponse<T> attempts, HttpRequest callers, String attemptHeader) {
    super(attempts);
    this.callers = callers;
    this.attemptHeader = attemptHeader;
  }

  /**
   * {@code response}, the JDK's to {@code sent}, as the application gets it: itself when {@code
   * sent} is the application's own request {@code callers}.
   */
  static <T> HttpResponse<T> of(
      HttpResponse<T> response, HttpRequest sent, HttpRequest callers, String attemptHeader) {
    return response == null || sent == callers
        ? response
        : new CallersResponse<>(response, callers, attemptHeader);
  }

  /**
   * {@code jdks}, the JDK's future of a response to the agent's copy of {@code call}'s request,
   * completing with that response as the application gets it. A future of the JDK's own kind
   * ({@code newIncompleteFuture}: since JDK 16 cancelling it cancels the exchange, as cancelling
   * the JDK's does), completed by hand rather than by a {@code thenApply}, which would wrap a
   * failure the JDK's future holds as it is (its "closed") in a {@code CompletionException}.
   */
  static <T> CompletableFuture<HttpResponse<T>> of(
      CompletableFuture<HttpResponse<T>> jdks, JdkRequest<?> call, String attemptHeader) {
    CompletableFuture<HttpResponse<T>> mine = jdks.newIncompleteFuture();
    jdks.whenComplete(
        (r, e) -> {
          if (e != null) {
            mine.completeExceptionally(e);
          } else if (!mine.complete(new CallersResponse<>(r, call.callers(), attemptHeader))) {
            // Cancelled as it completed: released here, as the retry loop releases one it
            // cancelled too late (its cancel of the JDK's future then failed: it had the response).
            // What the release throws (a body's close() may throw an Error) is said once: thrown
            // here it failed the stage whenComplete returns, which nobody reads.
            SyncRetryLoop.discardUnwanted(call, JdkRetrying.access(), r);
          }
        });
    return mine;
  }

  @Override
  public HttpRequest request() {
    HttpRequest r = request;
    if (r == null) {
      synchronized (this) {
        r = request;
        if (r == null) {
          request = r = new CallersRequest(attempts.request(), callers, attemptHeader);
        }
      }
    }
    return r;
  }

  @Override
  public Optional<HttpResponse<T>> previousResponse() {
    Optional<HttpResponse<T>> p = previous;
    if (p == null) {
      synchronized (this) {
        p = previous;
        if (p == null) {
          // A redirect's response: its request was made from the attempt's too.
          Optional<HttpResponse<T>> jdks = attempts.previousResponse();
          previous =
              p =
                  jdks.isPresent()
                      ? Optional.of(new CallersResponse<>(jdks.get(), callers, attemptHeader))
                      : jdks;
        }
      }
    }
    return p;
  }

  @Override
  public T body() {
    return attempts.body();
  }

  /**
   * The JDK's request of an attempt (the copy it made of the agent's, or the one it followed a
   * redirect with), as the JDK would show it had it been sent the application's request: the JDK
   * copies the application's headers, timeout and publisher into its own, and into the request of
   * each redirect it follows (a publisher only where the method is kept). Method, URI, version and
   * {@code expectContinue} are the JDK's own, the same either way.
   */
  static final class CallersRequest extends HttpRequest {
    private final HttpRequest jdks;
    private final HttpRequest callers;
    private final HttpHeaders headers;

    CallersRequest(HttpRequest jdks, HttpRequest callers, String attemptHeader) {
      this.jdks = jdks;
      this.callers = callers;
      this.headers = withoutAttemptHeader(jdks.headers(), callers.headers(), attemptHeader);
    }

    /**
     * {@code sent}, the headers of the JDK's request, with the attempt header's value replaced by
     * the application's own for that name (none, usually). A redirect the JDK followed without that
     * header (a filter of its own) would have dropped the application's too: then unchanged.
     */
    private static HttpHeaders withoutAttemptHeader(
        HttpHeaders sent, HttpHeaders callers, String attemptHeader) {
      if (attemptHeader == null || JdkRequest.firstValue(sent, attemptHeader) == null) {
        return sent;
      }
      Map<String, List<String>> map = new TreeMap<>(String.CASE_INSENSITIVE_ORDER);
      map.putAll(sent.map());
      map.remove(attemptHeader);
      for (Map.Entry<String, List<String>> own : callers.map().entrySet()) {
        if (own.getKey().equalsIgnoreCase(attemptHeader)) {
          map.put(own.getKey(), own.getValue()); // as the application spelt its name
        }
      }
      return HttpHeaders.of(map, (name, value) -> true);
    }

    @Override
    public Optional<BodyPublisher> bodyPublisher() {
      // The JDK keeps the publisher across a redirect that keeps the method, and drops it else.
      return jdks.bodyPublisher().isPresent() ? callers.bodyPublisher() : Optional.empty();
    }

    @Override
    public String method() {
      return jdks.method();
    }

    @Override
    public Optional<Duration> timeout() {
      return callers.timeout(); // the JDK copies the request's own into a redirect's too
    }

    @Override
    public boolean expectContinue() {
      return jdks.expectContinue();
    }

    @Override
    public URI uri() {
      return jdks.uri();
    }

    @Override
    public Optional<HttpClient.Version> version() {
      return jdks.version();
    }

    @Override
    public HttpHeaders headers() {
      return headers;
    }

    @Override
    public String toString() {
      return jdks.toString();
    }
  }
}
