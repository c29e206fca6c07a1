package dev.retryagent.internal.jdk;

import dev.retryagent.engine.AsyncRetryLoop;
import dev.retryagent.engine.CallBounds;
import dev.retryagent.engine.Decision;
import dev.retryagent.engine.IdempotencyGate;
import dev.retryagent.engine.RequestInfo;
import dev.retryagent.engine.SelfViewCall;
import dev.retryagent.engine.SyncRetryLoop;
import dev.retryagent.internal.FieldLines;
import dev.retryagent.internal.observe.Sanitizer;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpHeaders;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpResponse.BodyHandler;
import java.net.http.HttpResponse.BodySubscriber;
import java.net.http.HttpResponse.PushPromiseHandler;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;

/**
 * A {@link RequestInfo} view of an {@link HttpRequest}, and the maker of each attempt's request:
 * the same request, with the body produced again when needed, the attempt header and the attempt
 * timeout. Requests are immutable, so an attempt that changes nothing sends the original object.
 *
 * <p>Once {@linkplain #sending sending}, it is also the call's attempt (for {@link SyncRetryLoop}
 * and {@link AsyncRetryLoop}) and the body handler that decides: it wraps the caller's {@link
 * BodyHandler}, which sees the status and headers before the body, so the retry decision is made
 * there. A response that will be retried gets a subscriber that reads and drops its body (freeing
 * the connection; past 64 KiB it closes it instead, {@link DiscardedBody}) and never reaches the
 * caller's handler, which therefore runs exactly once per call, for the response the caller
 * receives (a retried one whose wait ended past the deadline, at the call's end: {@link
 * GivenBack}). And it is the engine's call ({@link SelfViewCall}, begun by {@code
 * RetryEngine.begin}): one object for the four, a call makes nothing else of its own (issue 13: 80
 * B, where a view beside the engine's call made 120).
 */
final class JdkRequest<T> extends SelfViewCall
    implements BodyHandler<T>,
        SyncRetryLoop.Attempt<HttpResponse<T>>,
        AsyncRetryLoop.Attempt<HttpResponse<T>> {
  // The request's method, scheme, host and port are read from it when asked, not copied into
  // fields: the JDK's request and URI hold them already, and four fields made every call 16 bytes
  // larger (issue 13). Read that way they allocate nothing (a name already in the right case is
  // returned as it is).
  private final HttpRequest request;
  private ReplayableBody body; // null: the request's own body (or none) is sent again as it is
  // Set by sending(): the caller's handler, the client that sends, and for sendAsync the caller's
  // push-promise handler (or null).
  private BodyHandler<T> handler;
  private JdkTransport transport;
  private PushPromiseHandler<T> pushPromiseHandler;

  JdkRequest(HttpRequest request) {
    this.request = request;
  }

  /** Called once begun, with its policy: how much of a streamed body may be kept, and so on. */
  void prepare() {
    prepare(policy().retry().replayBodyLimit());
  }

  /** {@link #prepare()} with the policy's limit given. */
  void prepare(long replayBodyLimit) {
    HttpRequest.BodyPublisher own = request.bodyPublisher().orElse(null);
    // A body the JDK produces again itself from memory (or none) needs nothing of ours: no object
    // per call. A file is watched for its own failure, a stream teed (ReplayableBody.of).
    this.body =
        own == null || ReplayableBody.needsNothing(own)
            ? null
            : ReplayableBody.of(own, replayBodyLimit, this);
  }

  /**
   * The call is sent with {@code handler} (and, asynchronously, {@code pushPromiseHandler}, which
   * may be null) through {@code transport}.
   */
  JdkRequest<T> sending(
      JdkTransport transport, BodyHandler<T> handler, PushPromiseHandler<T> pushPromiseHandler) {
    this.transport = transport;
    this.handler = handler;
    this.pushPromiseHandler = pushPromiseHandler;
    return this;
  }

  /**
   * The call is over: it is no longer in progress at its client ({@link ClientCalls}), and it lets
   * go of the client. The caller's future (and every stage that depends on it) holds this call for
   * as long as the application keeps it; through the transport it held the client, so a client the
   * application dropped was never collected, and the JDK, which stops a client once its facade is
   * unreachable, never stopped it (its selector thread and connections stayed for good). The JDK's
   * own future does not hold the facade.
   *
   * <p>Nor does anything of the request's body keep the call, or its copy, from here (no attempt
   * sends it again): the JDK's response keeps the last attempt's request, and so its publisher (the
   * tee, a watch of ours), for as long as the application keeps the response, and the caller's
   * future keeps this call. The copy of a streamed body (up to {@code replayBodyLimit}) and the
   * call with its attempts' exceptions stayed reachable through them ({@link
   * ReplayableBody#callEnded}; a redirect's watch, {@link SendWatch}, still holds the call).
   */
  @Override
  protected void loopEnded() {
    ReplayableBody b = body;
    if (b != null) {
      b.callEnded();
    }
    JdkTransport t = transport;
    if (t != null) {
      transport = null;
      try {
        t.callEnded();
      } catch (RuntimeException e) {
        // The client's own shutdown, deferred until now, failed (a decorated client of the
        // application's): the call's outcome still reaches its caller, which a throw here stops.
      }
    }
  }

  /**
   * The application called the client's {@code shutdownNow()}: the JDK aborted the attempt in
   * flight, and the call ends with that, as without the agent, instead of retrying.
   */
  @Override
  public boolean callerGaveUp() {
    JdkTransport t = transport;
    return t != null && t.shutDownNow();
  }

  /**
   * A wait of this call: kept by the client's calls ({@link ClientCalls}), which end it when the
   * application calls {@code shutdownNow()}. Without that, a call waiting for its retry went on
   * waiting for its delay (up to {@code retryAfter.max}) after the JDK had aborted everything else.
   */
  @Override
  protected boolean waitStarts(Wait wait) {
    JdkTransport t = transport;
    return t != null && t.waitStarts(wait);
  }

  @Override
  protected void waitEnds(Wait wait) {
    JdkTransport t = transport;
    if (t != null) {
      t.waitEnds(wait);
    }
  }

  /**
   * One attempt of a synchronous call: this request's attempt, with this as its body handler. An
   * attempt after the application's {@code shutdownNow()} is the JDK's refusal, sent nowhere, even
   * in the moment before the JDK's own shutdown has run (a wait it ended goes on at once), and told
   * as a refused attempt ({@link #refusedAfterShutdownNow}).
   */
  @Override
  public HttpResponse<T> run(int n, long timeoutNanos) throws IOException, InterruptedException {
    if (transport.shutDownNow()) {
      refusedAfterShutdownNow();
      if (n > 1) {
        throw JdkRetrying.abortedByShutdownNow(); // a call in progress: see the method
      }
      return JdkRetrying.refuseSend();
    }
    String attemptHeader = attemptHeader();
    HttpRequest attempt = forAttempt(n, timeoutNanos, attemptHeader);
    // The JDK's send() refuses a thread already interrupted before it sends anything (read in
    // JDK 17 and 25): that attempt gives back the rate-limit permit and the retry it took, as one
    // the client refused, or the host's next calls are refused for a request never sent.
    boolean interrupted = Thread.currentThread().isInterrupted();
    try {
      return CallersResponse.of(transport.send(attempt, this), attempt, request, attemptHeader);
    } catch (InterruptedException e) {
      if (interrupted) {
        attemptRefused();
      }
      throw e;
    }
  }

  /**
   * The attempt starting now is refused: the application called {@code shutdownNow()}. A first
   * attempt too, not only a retry: {@code shutdownNow()} sets the flag and ends the permit's wait
   * before the JDK's own shutdown runs, and a first attempt the JDK sent in that moment went out,
   * then was aborted, and the loop, its caller having given up before it started, told it as a
   * refusal (0 attempts, its permit back) for a request the host got. Told as refused here, where
   * it is certain nothing went out: the permit and any retry go back, a first attempt not counted.
   */
  private void refusedAfterShutdownNow() {
    attemptRefused();
  }

  /** One attempt of an asynchronous call: this request's attempt, with this as its body handler. */
  @Override
  public CompletableFuture<HttpResponse<T>> start(int n, long timeoutNanos) {
    JdkTransport t = transport;
    if (t == null) {
      // The call ended (cancelled) as this retry was about to start: nothing is sent.
      return CompletableFuture.failedFuture(new CancellationException());
    }
    if (t.shutDownNow()) {
      refusedAfterShutdownNow();
      return n > 1
          ? CompletableFuture.failedFuture(
              new CompletionException(JdkRetrying.abortedByShutdownNowAsync()))
          : JdkRetrying.refuseSendAsync(); // as run()
    }
    String attemptHeader = attemptHeader();
    HttpRequest attempt = forAttempt(n, timeoutNanos, attemptHeader);
    PushPromiseHandler<T> application = pushPromiseHandler;
    if (application == null) {
      return callers(t.sendAsync(attempt, this, null), attempt, attemptHeader);
    }
    // The attempt's pushes reach the application's handler only if its response is the caller's.
    AttemptPushes<T> pushes =
        new AttemptPushes<>(application, attempt == request ? null : this, attemptHeader);
    CompletableFuture<HttpResponse<T>> f =
        t.sendAsync(attempt, info -> apply(info, pushes), pushes);
    f.whenComplete(
        (r, e) -> {
          if (e != null) {
            pushes.settle(false); // failed before its response: its pushes are refused
          }
        });
    return callers(f, attempt, attemptHeader);
  }

  /**
   * The JDK's future of an attempt that sent {@code attempt}, its response as the application gets
   * it ({@link CallersResponse}): the JDK's own future when {@code attempt} is the application's
   * request, so the plain call makes no stage more.
   */
  private CompletableFuture<HttpResponse<T>> callers(
      CompletableFuture<HttpResponse<T>> jdks, HttpRequest attempt, String attemptHeader) {
    return attempt == request ? jdks : CallersResponse.of(jdks, this, attemptHeader);
  }

  /** The application's own request (the call's), as the JDK shows it without the agent. */
  HttpRequest callers() {
    return request;
  }

  /**
   * The policy's attempt header, read per attempt from the policy rather than kept in a field: a
   * field would make every call 8 bytes larger (issue 13: 104 -> 96 B).
   */
  private String attemptHeader() {
    return policy().retry().attemptHeader();
  }

  /** Decides on the status and headers; the caller's handler gets only the final response. */
  @Override
  public BodySubscriber<T> apply(HttpResponse.ResponseInfo info) {
    return apply(info, null);
  }

  /** {@link #apply(HttpResponse.ResponseInfo)}, telling the attempt's {@code pushes} (or null). */
  private BodySubscriber<T> apply(HttpResponse.ResponseInfo info, AttemptPushes<T> pushes) {
    boolean callers;
    boolean retry = false;
    long delayNanos = 0;
    try {
      Decision d = onResponse(info.statusCode(), lines(info.headers(), "Retry-After"));
      retry = d.retry();
      if (retry) {
        // The retry's permit now, while the body is unread: refused, the response is the caller's,
        // as without the agent; once read away below, a refusal after the wait had nothing to give.
        delayNanos = reserveRetryPermit();
        retry = delayNanos >= 0;
      }
      if (retry
          && body != null
          && body.isTeed()
          && overGiveBackLimit(info.headers())
          && !body.fixEarly()) {
        // A response that can never be given back (DiscardedBody): the request's body is fixed for
        // the retry now, while the response is whole (ReplayableBody#fixEarly). A copy found not
        // whole, or whose completion is not settled (its source may be about to fail it), ends
        // the call here with this response, as without the agent, given up as the body
        // not replayable (RetryCall#retryTooLate asks bodyStillSendable); checked only after the
        // wait, it ended with the engine's IOException, the response read away.
        retry = !retryTooLate();
      }
      callers = !retry && d.error() == null;
    } catch (RuntimeException e) {
      callers = true; // our bug must not cost the caller its response
    }
    if (pushes != null) {
      pushes.settle(callers); // before the caller's handler, as the pushes came before
    }
    if (callers) {
      return handler.apply(info);
    }
    // A retried body is kept (at most 8 KiB) with its head, for a wait that ends late after all.
    return retry
        ? new DiscardedBody<>(info, handler, transport, delayNanos, body, this)
        : new DiscardedBody<>(null, null, null, 0);
  }

  /**
   * Whether a response's head declares a body longer than a retried response's copy keeps ({@link
   * dev.retryagent.engine.ResponseAccess#GIVE_BACK_LIMIT}): it cannot be given back.
   */
  static boolean overGiveBackLimit(HttpHeaders headers) {
    String length = firstValue(headers, "Content-Length");
    if (length == null) {
      return false; // its length is known once read (DiscardedBody fixes the body then)
    }
    try {
      return Long.parseLong(length.trim()) > dev.retryagent.engine.ResponseAccess.GIVE_BACK_LIMIT;
    } catch (NumberFormatException e) {
      return false;
    }
  }

  @Override
  public String method() {
    return request.method(); // as sent, case and all (RequestInfo#method)
  }

  @Override
  public String scheme() {
    String scheme = request.uri().getScheme();
    return scheme == null ? "http" : scheme.toLowerCase(Locale.ROOT);
  }

  @Override
  public String host() {
    String host = request.uri().getHost();
    return host == null ? "" : host;
  }

  @Override
  public int port() {
    int port = request.uri().getPort();
    return port >= 0 ? port : ("https".equals(scheme()) ? 443 : 80);
  }

  /** Read when asked (the engine asks only when a route matches paths): no field per call. */
  @Override
  public String path() {
    String p = request.uri().getRawPath();
    return p == null || p.isEmpty() ? "/" : p;
  }

  /** Read when asked: only a path written asks. */
  @Override
  public boolean atPastPath() {
    return Sanitizer.atPastPath(request.uri().getRawQuery(), request.uri().getRawFragment());
  }

  @Override
  public String header(String name) {
    return firstValue(request.headers(), name);
  }

  /**
   * {@code headers.firstValue(name).orElse(null)} without its allocations: the JDK's {@code
   * firstValue} streams the values into an {@code Optional} (~200 bytes per call, issue 13). The
   * map is the headers' own, case-insensitive.
   */
  static String firstValue(HttpHeaders headers, String name) {
    List<String> values = headers.map().get(name);
    return values == null || values.isEmpty() ? null : values.get(0);
  }

  /** Every line of header {@code name} ({@code ResponseAccess#header}), as {@link #firstValue}. */
  static String lines(HttpHeaders headers, String name) {
    return FieldLines.of(headers.map().get(name));
  }

  /**
   * {@link JdkResends#in}: the JDK's own resend of an idempotent request, read from the failure.
   */
  @Override
  public int clientResendsIn(Throwable failure) {
    return JdkResends.in(request, failure);
  }

  /**
   * The attempt failed with {@code error}: a failure of the JDK's for a body that delivered other
   * than its declared length ({@link ReplayableBody#wrongLength}) is the application's mistake, as
   * a publisher's own failure is ({@link #applicationFailed}), not the host's failure.
   */
  @Override
  public Decision onFailure(Throwable error) {
    // Not under the lock for the decision: the call tells its events as it lets go of its lock
    // (RetryCall's CallEvents), which a synchronized override would still hold.
    synchronized (this) {
      if (body == null && unwatchable()) {
        // Nothing of ours hears what the JDK sent of this request (no publisher): a redirect's
        // hop may have followed it, so a connect failure is judged as one after sending.
        requestReachedServer();
      }
      ReplayableBody b = body;
      if (b != null && error != null && b.sourceFailed()) {
        // The body's source failed in this attempt (it told the call: applicationFailed), and the
        // JDK cancelled the exchange for it; the attempt may still fail with another exception
        // than the source's (a source that completed and then threw: the JDK, which sent the cut
        // body whole, reads no answer on the connection it closed). That failure is the
        // application's too: neither the host's failure nor retried. The host may have got a
        // whole request if the source completed first, or reached its length before more.
        applicationFailed(error, b.sourceCompletedBeforeItFailed() || b.deliveredWholeThenMore());
      } else if (b != null && error != null && b.deliveredWrongLength()) {
        Throwable refusal = ReplayableBody.wrongLength(error);
        if (refusal != null) {
          // A body that reached its length before the bytes past it went out whole: the permit
          // stays spent (RetryCall.endedByApplication's rule).
          applicationFailed(refusal, b.deliveredWholeThenMore());
        }
      }
    }
    return super.onFailure(error);
  }

  @Override
  public boolean bodyReplayable() {
    return body == null || body.canSendAgain();
  }

  /** {@link ReplayableBody#fixForRetry}: a copy found cut since the retry was decided ends it. */
  @Override
  protected boolean bodyStillSendable() {
    ReplayableBody b = body;
    return b == null || b.fixForRetry();
  }

  /**
   * The request for attempt {@code n}.
   *
   * @param limitNanos the policy's bound on the attempt, or -1 for none: the request's own timeout
   *     is kept when it is shorter ({@link CallBounds#shorterTimeout})
   * @param attemptHeader the policy's attempt header, set to {@code n}; null for none
   */
  HttpRequest forAttempt(int n, long limitNanos, String attemptHeader) {
    Optional<Duration> timeout = request.timeout(); // the request's own: nothing allocated
    long own = timeout.isPresent() ? timeout.get().toNanos() : -1L;
    long timeoutNanos = CallBounds.shorterTimeout(limitNanos, own);
    boolean sameBody = body == null || !body.isTeed();
    boolean watch = watchesSends();
    if (sameBody && attemptHeader == null && timeoutNanos < 0 && !watch) {
      return request;
    }
    try {
      return copy(n, timeoutNanos, attemptHeader, watch);
    } catch (IllegalArgumentException e) {
      // A header the builder refuses (only possible with jdk.httpclient.allowRestrictedHeaders):
      // fall back to the original request rather than fail the call.
      return sameBody && !watch ? request : copyBodyOnly(watch);
    }
  }

  /**
   * Whether the attempts' bodies are watched for what the JDK sends ({@link SendWatch}): for a
   * request the policy repeats only if it was never sent (a POST without key), on a client that
   * follows redirects. There the JDK may follow the request, answered 307 (or 303), with a request
   * to the redirect's {@code Location} inside the attempt; when that one cannot connect, the
   * attempt fails with a {@code ConnectException}, which alone reads as "never sent" and was
   * retried: the server got the POST again. So too on any client when the JDK resends any method by
   * itself ({@link JdkResends#resendsAnyMethod}): a POST read by a server that closed without
   * answering is sent again, and that resend's refused connection ends the attempt. On a client
   * that follows no redirect (the JDK's default) the request is sent as it is, with nothing of
   * ours. A watched attempt sends a copy of the request (as one with an attempt header does): two
   * objects more per attempt.
   */
  private boolean watchesSends() {
    JdkTransport t = transport;
    return t != null
        && !"GET".equals(request.method())
        && (t.followsRedirects() || JdkResends.resendsAnyMethod())
        && !observeOnly() // nothing is retried: no copy of the request
        && IdempotencyGate.onlyIfNotSent(policy().retry(), this);
  }

  /**
   * Whether this request is one {@link #watchesSends} would watch but cannot: it has no body
   * publisher (an application's own {@code HttpRequest} whose {@code bodyPublisher()} is empty; the
   * builder's {@code POST} always has one), and the JDK sends it, and a 307's hop of it, without
   * asking anything of ours once it has a connection: its requests copy the method, headers and URI
   * before they connect. Giving it a publisher to watch would change what is sent ({@code
   * Content-Length: 0}, or a body where a 303 makes a GET). So such a request on a client that
   * follows redirects is judged as possibly sent by any attempt: a connect failure does not retry
   * it under {@code if-not-sent} (a refused first connection too: one retry too few, never one too
   * many). Asked on a failure only.
   */
  private boolean unwatchable() {
    return watchesSends() && !request.bodyPublisher().isPresent();
  }

  private HttpRequest copy(int n, long timeoutNanos, String attemptHeader, boolean watch) {
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
    return build(b, watch);
  }

  private HttpRequest copyBodyOnly(boolean watch) {
    HttpRequest.Builder b = HttpRequest.newBuilder(request.uri());
    b.expectContinue(request.expectContinue());
    request.version().ifPresent(b::version);
    request.timeout().ifPresent(b::timeout);
    request.headers().map().forEach((k, vs) -> vs.forEach(v -> b.header(k, v)));
    return build(b, watch);
  }

  /**
   * Gives {@code b} the request's method and body, and builds it. A request without body publisher
   * keeps none: the JDK (19+) sends such a request without {@code Content-Length}, and one with
   * {@code BodyPublishers.noBody()} with {@code Content-Length: 0}. Only {@code GET()} is body-less
   * on every builder ({@code HEAD()} is Java 18's, and {@code DELETE()} took {@code noBody()} on
   * some versions), and an application's own {@code HttpRequest} may have no publisher for any
   * method (an {@code OPTIONS}, a {@code POST}): any method but GET is built with {@code noBody()},
   * so that the builder checks the request as it checks any other, and sent as {@link WithoutBody}.
   */
  private HttpRequest build(HttpRequest.Builder b, boolean watch) {
    HttpRequest.BodyPublisher publisher =
        body == null ? request.bodyPublisher().orElse(null) : body.next();
    if (watch && publisher != null) {
      publisher = new SendWatch(publisher, this);
    }
    if (publisher == null && "GET".equals(request.method())) {
      return b.GET().build();
    }
    b.method(request.method(), publisher == null ? HttpRequest.BodyPublishers.noBody() : publisher);
    HttpRequest built = b.build();
    return publisher == null ? new WithoutBody(built) : built;
  }

  /**
   * An attempt's body, told by the JDK when it sends a request with it: the JDK asks a request's
   * body for its length once it has a connection for that request, as it writes the request's head
   * (HTTP/1.1 and HTTP/2, h2c and TLS; read in JDK 25's source, tested on 17 and 25, HTTP/2 in
   * integration-tests' JdkHttp2SendWatchTest), and asks it again for each redirect that keeps the
   * method. The call hears that a request of the attempt reached a server ({@link
   * dev.retryagent.engine.RetryCall#requestReachedServer}), so that a connect failure of a
   * redirect's hop later in the attempt is not taken for a request never sent. A request without
   * body publisher (an application's own {@code HttpRequest}) cannot be watched: giving it one
   * would add a {@code Content-Length} it never had ({@link #unwatchable}).
   */
  static final class SendWatch implements HttpRequest.BodyPublisher {
    private final HttpRequest.BodyPublisher source;

    /**
     * Held strongly, so a kept response keeps the call (not its body's copy, dropped at the call's
     * end: ReplayableBody#callEnded) while the application keeps it. A weak reference would free
     * it, but this watch is what tells the call its request reached the server on a redirect's hop:
     * cleared too early, a sent POST would read as never sent. Left so until that is shown safe
     * (closing-43).
     */
    private final JdkRequest<?> call;

    SendWatch(HttpRequest.BodyPublisher source, JdkRequest<?> call) {
      this.source = source;
      this.call = call;
    }

    @Override
    public long contentLength() {
      call.requestReachedServer();
      return source.contentLength();
    }

    @Override
    public void subscribe(java.util.concurrent.Flow.Subscriber<? super java.nio.ByteBuffer> s) {
      source.subscribe(s);
    }
  }

  /**
   * A request built as another but without body publisher ({@link #build}). The JDK copies what it
   * sends from any {@code HttpRequest}, as it copies the builder's own, and an application's
   * request of its own class is sent so too.
   */
  static final class WithoutBody extends HttpRequest {
    private final HttpRequest built;

    WithoutBody(HttpRequest built) {
      this.built = built;
    }

    @Override
    public Optional<BodyPublisher> bodyPublisher() {
      return Optional.empty();
    }

    @Override
    public String method() {
      return built.method();
    }

    @Override
    public Optional<Duration> timeout() {
      return built.timeout();
    }

    @Override
    public boolean expectContinue() {
      return built.expectContinue();
    }

    @Override
    public URI uri() {
      return built.uri();
    }

    @Override
    public Optional<HttpClient.Version> version() {
      return built.version();
    }

    @Override
    public HttpHeaders headers() {
      return built.headers();
    }

    @Override
    public String toString() {
      return built.toString();
    }
  }
}
