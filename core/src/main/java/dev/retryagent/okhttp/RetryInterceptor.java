package dev.retryagent.okhttp;

import dev.retryagent.engine.CallBounds;
import dev.retryagent.engine.Clock;
import dev.retryagent.engine.ResponseAccess;
import dev.retryagent.engine.RetryCall;
import dev.retryagent.engine.RetryEngine;
import dev.retryagent.engine.Sleeper;
import dev.retryagent.engine.SyncRetryLoop;
import dev.retryagent.internal.FieldLines;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.net.ProtocolException;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import okhttp3.Call;
import okhttp3.Interceptor;
import okhttp3.Request;
import okhttp3.RequestBody;
import okhttp3.Response;
import okhttp3.ResponseBody;
import okio.Timeout;

/**
 * An OkHttp application interceptor that runs each call through a {@link RetryEngine}. Works with
 * OkHttp 3.14+, 4.x and 5.x (it implements only {@link Interceptor}, never {@code Chain}).
 *
 * <p>Add it last among the application interceptors, and its {@link #networkInterceptor()} as a
 * network interceptor:
 *
 * <pre>{@code
 * RetryInterceptor retries = new RetryInterceptor(engine);
 * OkHttpClient client = new OkHttpClient.Builder()
 *     .addInterceptor(new MyAuthInterceptor())
 *     .addInterceptor(retries)
 *     .addNetworkInterceptor(retries.networkInterceptor())
 *     .build();
 * }</pre>
 *
 * <p>Last, so that it works as OkHttp's own retries do: your interceptors run once per {@code
 * execute()} and see its final response, and the policy sees the request as they leave it (an
 * {@code Idempotency-Key} one of them adds counts). The network interceptor counts the requests
 * OkHttp itself sends again after a failed connection as attempts; without it they are not counted
 * (OkHttp is kept from resending a POST without key either way).
 *
 * <p>Every response it retries is closed before the next attempt. A one-shot or duplex body is
 * never written twice. It stops when the call is cancelled and never waits past OkHttp's call
 * timeout. The wait between attempts happens inside the interceptor: for {@code execute()} that is
 * the caller's thread; for {@code enqueue()} it holds a dispatcher thread and one of the host's
 * slots ({@code Dispatcher.maxRequestsPerHost}) unless the call is run by an {@link AsyncRetrier},
 * which the agent does. Thread-safe: one instance may serve any number of clients and calls.
 */
public final class RetryInterceptor implements Interceptor {
  private final RetryEngine engine;
  private final ManagedAttempts managed;
  private final Resends resends = new Resends();

  /**
   * Retries through {@code engine}.
   *
   * @throws NullPointerException when {@code engine} is null
   */
  public RetryInterceptor(RetryEngine engine) {
    this(engine, new ManagedAttempts());
  }

  RetryInterceptor(RetryEngine engine, ManagedAttempts managed) {
    this.engine = Objects.requireNonNull(engine, "engine");
    this.managed = managed;
  }

  /**
   * The network interceptor that counts the requests OkHttp sends again on its own after a failed
   * connection, inside one attempt, as attempts (for {@code maxAttempts}, the budget and the
   * breaker), and keeps OkHttp from sending again a request the engine would not repeat (a POST
   * without key). Optional: without it those resends are not counted, and OkHttp is kept from
   * resending such a request all the same (by its own question after the failure, see {@code
   * docs/okhttp.md}), a request whose HTTP/2 stream was refused unprocessed included.
   */
  public Interceptor networkInterceptor() {
    return resends.handOut();
  }

  /**
   * What {@link #networkInterceptor()} does, for a hook in OkHttp's own last interceptor ({@code
   * CallServerInterceptor}) instead, as the agent's: {@link Resends#sending} at its start, {@link
   * Resends#failed(Call, IOException)} when it throws an {@code IOException}. OkHttp copies its
   * chain for every interceptor of a call (56 B); a hook costs it nothing. Use one or the other.
   */
  public Resends resendHook() {
    return resends.hook();
  }

  /** The engine's sleeper, which {@link SyncOkCall} waits with. */
  Sleeper sleeper() {
    return engine.sleeper();
  }

  /** The engine's clock, which that sleeper sleeps in. */
  Clock clock() {
    return engine.clock();
  }

  @Override
  public Response intercept(Chain chain) throws IOException {
    Call okCall = chain.call();
    ManagedAttempts.Attempt managedAttempt = managed.get(okCall);
    if (managedAttempt != null) {
      // An AsyncRetrier runs this call's retries by re-enqueueing: make exactly one attempt.
      return managedAttempt.owner.attempt(chain, managedAttempt);
    }
    if (cacheOnly(chain.request())) {
      return chain.proceed(chain.request());
    }
    // One object: the call, its request view (which tells the engine when the caller cancelled),
    // its attempt and the sleeper that stops waiting then.
    SyncOkCall call = engine.begin(new SyncOkCall(this, chain));
    if (call.passThrough()) {
      return chain.proceed(chain.request());
    }
    limitToCallTimeout(call, runningCallDeadline(okCall, System.nanoTime()), engine);
    try {
      return SyncRetryLoop.execute(call, call, call, ACCESS);
    } catch (InterruptedException e) {
      // Only the wait can be interrupted (the sleeper clears the flag): OkHttp's calls report an
      // interrupt as an InterruptedIOException, with the flag set.
      Thread.currentThread().interrupt();
      // The target only, as the agent's other exceptions name it: the application logs this
      // message, and a path may hold a session's parameter or a segment redact.pathSegments masks.
      InterruptedIOException ie =
          new InterruptedIOException(
              "retry-agent: interrupted while waiting to retry "
                  + call.method()
                  + " "
                  + call.target());
      ie.initCause(e);
      throw ie;
    }
  }

  /**
   * One attempt: {@code request} sent through the rest of the chain, bounded by {@code
   * timeoutNanos}, its body guarded where OkHttp must not send it again by itself ({@link
   * ResendGuard}); what OkHttp sent again inside it told to {@code call} before it decides.
   */
  Response proceed(Chain chain, Request request, long timeoutNanos, RetryCall call)
      throws IOException {
    boolean told = resends.told(chain.call());
    Request guarded = ResendGuard.guard(request, call, told);
    Object begun = resends.begin(chain.call(), call, guarded);
    // Cancelled before the attempt ran (after enqueue(), before a dispatcher thread ran the call):
    // OkHttp's RetryAndFollowUpInterceptor, next after this last application interceptor, refuses
    // it before it looks for a connection. Known so without the network interceptor too.
    boolean cancelledAhead = chain.call().isCanceled();
    try {
      Response r = withTimeout(chain, timeoutNanos).proceed(guarded);
      countRepeats(call, r);
      return asCallers(r, chain.request(), guarded, call.policy().retry().attemptHeader());
    } catch (IOException | RuntimeException e) {
      if (somethingSent(chain.call(), guarded, told)) {
        // A request of the attempt reached a connection before this failure: a connect failure
        // now is a redirect's hop (or OkHttp's resend) that found no connection, and the call's
        // request may have been acted on.
        call.requestReachedServer();
      }
      if (wrongLength(guarded, e)) {
        // The body wrote other than its contentLength() said, and OkHttp's sink refused it: the
        // application's mistake, not the host's failure (as a body whose own writeTo failed).
        call.applicationFailed(e);
      }
      if (cancelledByCaller(chain.call())) {
        // The application cancelled the call in flight. OkHttp tears down what the attempt used,
        // and the failure that follows is of the cancel's making, whatever its type (over HTTP/2
        // OkHttp 4 and 5 throw "stream was reset: CANCEL", a reset): it says nothing about the
        // host, so the breaker's permit goes back without an outcome, as after an abort.
        call.abortedWhen(CANCELLED);
        if (cancelledAhead || resends.nothingSent(chain.call(), told)) {
          // Cancelled while OkHttp found or connected the attempt's connection: nothing of the
          // request went out, so its rate-limit permit (and the retry it was) go back, and a first
          // attempt is not counted as one.
          call.attemptRefused();
        }
      }
      throw e;
    } finally {
      resends.end(begun);
    }
  }

  /**
   * Whether a request of the attempt of {@code okCall} reached a connection: as the network
   * interceptor or the agent's hook saw it ({@code told}), or as the attempt's guarded body was
   * written, which it is for every request the engine repeats only if it was never sent (a POST
   * without key): the only sign on a client without {@link #networkInterceptor()}, and one more
   * where the client could not be asked whether it holds it.
   */
  private boolean somethingSent(Call okCall, Request guarded, boolean told) {
    if (told && resends.somethingSent(okCall)) {
      return true;
    }
    RequestBody body = guarded.body();
    return body instanceof ResendGuard.Body && ((ResendGuard.Body) body).written();
  }

  /**
   * Whether {@code e} is OkHttp's refusal of the attempt's body for its length: the body wrote more
   * bytes than its {@code contentLength()} said ("expected N bytes but received M", from the write
   * that took it past, inside writeTo or at OkHttp's close of the sink after it) or fewer
   * ("unexpected end of stream", at that close). Known by the count ({@link
   * ResendGuard.Body#wroteWrongLength}); the message as well, for the rare body that OkHttp did not
   * hold to its length (a network interceptor of the application's put another in its place, and a
   * ProtocolException of the host's followed, an unexpected status line).
   */
  private static boolean wrongLength(Request guarded, Exception e) {
    if (!(e instanceof ProtocolException)) {
      return false;
    }
    RequestBody body = guarded.body();
    if (!(body instanceof ResendGuard.Body) || !((ResendGuard.Body) body).wroteWrongLength()) {
      return false;
    }
    String message = e.getMessage();
    return message != null
        && (message.equals("unexpected end of stream")
            || (message.startsWith("expected ") && message.contains(" bytes but received ")));
  }

  /**
   * {@code r}, the response to {@code sent} (the attempt's request, with the policy's {@code
   * attemptHeader}), as the application gets it without us: {@code response.request()} is the
   * request the interceptors before ours passed on ({@code callers}), and after a follow-up (a
   * redirect, OkHttp's own repeat) the request OkHttp followed with, without the attempt header (or
   * with the application's own value under that name) and with the application's body when it sends
   * the attempt's; the same for each {@code priorResponse()}. OkHttp's {@code BridgeInterceptor}
   * shows the request it was given, which was our attempt's: the application saw the attempt header
   * there, and sending {@code response.request()} again sent it; the body we wrapped ({@link
   * ResendGuard}, a one-shot body's tracking) was the application's to see there too, in place of
   * its own {@code FormBody} or {@code MultipartBody}. The network response keeps what went on the
   * wire. Nothing to do when the attempt sent the caller's request itself (no attempt header, the
   * body as the application gave it: a GET, an unguarded {@code FormBody}).
   */
  static Response asCallers(Response r, Request callers, Request sent, String attemptHeader) {
    if (sent == callers || r == null) {
      return r;
    }
    Response.Builder b =
        r.newBuilder().request(asCallers(r.request(), callers, sent, attemptHeader));
    Response prior = r.priorResponse();
    if (prior != null) {
      b.priorResponse(asCallers(prior, callers, sent, attemptHeader));
    }
    return b.build();
  }

  private static Request asCallers(
      Request shown, Request callers, Request sent, String attemptHeader) {
    if (shown == sent) {
      return callers;
    }
    boolean oursBody = shown.body() != null && shown.body() == sent.body();
    if (attemptHeader == null && !oursBody) {
      return shown; // a follow-up without our header nor our body: as OkHttp made it
    }
    Request.Builder b = shown.newBuilder();
    if (attemptHeader != null) {
      b.removeHeader(attemptHeader);
      for (String own : callers.headers(attemptHeader)) {
        b.addHeader(attemptHeader, own);
      }
    }
    if (oursBody) {
      // A follow-up that sends the body again (a 307/308) carries the attempt's, which is ours
      // (ResendGuard's watch): the application's, as OkHttp alone shows it.
      b.method(shown.method(), callers.body());
    }
    return b.build();
  }

  private static final BooleanSupplier CANCELLED = new Cancelled();

  /** Always: said only once the cancel is known (a class, not a lambda: no bootstrap to link). */
  private static final class Cancelled implements BooleanSupplier {
    @Override
    public boolean getAsBoolean() {
      return true;
    }
  }

  /**
   * Whether the application cancelled {@code okCall}, not OkHttp's own call timeout (which cancels
   * it too, and stays the host's failure as before).
   */
  private static boolean cancelledByCaller(Call okCall) {
    if (!okCall.isCanceled()) {
      return false;
    }
    long now = System.nanoTime();
    long end = runningCallDeadline(okCall, now);
    return end == NO_DEADLINE || now - end < 0;
  }

  /**
   * Tells {@code call} about the requests OkHttp repeated on its own inside one attempt: its {@code
   * RetryAndFollowUpInterceptor} sends a 408, or a 503 with {@code Retry-After: 0}, once more, and
   * links the earlier response as {@code priorResponse}. Redirects and authentication challenges
   * are follow-ups, not repeats.
   */
  static void countRepeats(RetryCall call, Response response) {
    for (Response p = response.priorResponse(); p != null; p = p.priorResponse()) {
      if (p.code() == 408 || p.code() == 503) {
        call.clientRepeated(p.code());
      }
    }
  }

  /**
   * True for a request the application lets only OkHttp's cache answer ({@code Cache-Control:
   * only-if-cached}, {@code CacheControl.FORCE_CACHE}): it never reaches the server, so there is
   * nothing to retry, and no breaker, budget or rate limit has a say. OkHttp answers one it cannot
   * serve with a 504 of its own; retried and counted as the server's failure, an application
   * reading its cache offline opened the host's breaker, and its cached reads then failed on it.
   */
  static boolean cacheOnly(Request request) {
    // The header first: parsing makes an object per request (issue 13), and only this header
    // can say only-if-cached.
    return request.header("Cache-Control") != null && request.cacheControl().onlyIfCached();
  }

  /** No call timeout nor deadline: see {@link #callDeadline}. */
  static final long NO_DEADLINE = Long.MIN_VALUE;

  /**
   * When OkHttp's own timeout for the whole of {@code okCall} ends, in {@link System#nanoTime()}
   * terms, had it started at {@code startNanoTime}: its {@code callTimeout}, or the deadline set on
   * its {@code timeout()}, whichever is sooner; {@link #NO_DEADLINE} for neither.
   */
  static long callDeadline(Call okCall, long startNanoTime) {
    try {
      long end = NO_DEADLINE;
      long callTimeout = okCall.timeout().timeoutNanos();
      if (callTimeout > 0) {
        end = startNanoTime + callTimeout;
      }
      if (okCall.timeout().hasDeadline()) {
        long d = okCall.timeout().deadlineNanoTime();
        end = end == NO_DEADLINE || d - end < 0 ? d : end;
      }
      return end;
    } catch (LinkageError olderOkHttp) {
      return NO_DEADLINE; // Call.timeout() exists since 3.12.
    }
  }

  /**
   * {@link #callDeadline} of the call the current thread runs: the end OkHttp's own timeout keeps
   * ({@link EnteredTimeouts}), when it can be read, because OkHttp started that timeout as the call
   * started ({@code execute()}, or its run on a dispatcher thread), ahead of the application's
   * interceptors; else, or if that were later, counted from {@code nowNanoTime}. A call without a
   * timeout reads nothing.
   */
  static long runningCallDeadline(Call okCall, long nowNanoTime) {
    long counted = callDeadline(okCall, nowNanoTime);
    if (counted == NO_DEADLINE) {
      return counted;
    }
    long entered;
    try {
      entered = EnteredTimeouts.end(okCall.timeout());
    } catch (LinkageError olderOkHttp) {
      return counted;
    }
    return entered != EnteredTimeouts.UNKNOWN && entered - counted < 0 ? entered : counted;
  }

  /**
   * OkHttp's call timeout covers the whole call, retries and waits included: OkHttp enforces it;
   * the engine starts no retry after it, and names it when it ends the call.
   *
   * @param deadlineNanoTime from {@link #callDeadline}
   */
  static void limitToCallTimeout(RetryCall call, long deadlineNanoTime, RetryEngine engine) {
    if (deadlineNanoTime != NO_DEADLINE) {
      call.limitToCallerTimeout(engine.clock().nanoTime() + (deadlineNanoTime - System.nanoTime()));
    }
  }

  /**
   * The chain for an attempt the policy bounds to {@code limitNanos} (-1: no bound): each of
   * OkHttp's connect, read and write timeouts becomes the shorter of the two ({@link
   * CallBounds#shorterTimeout}); one the application set shorter is left as it is.
   */
  static Chain withTimeout(Chain chain, long limitNanos) {
    if (limitNanos < 0) {
      return chain;
    }
    long connect =
        CallBounds.shorterTimeout(limitNanos, millisToNanos(chain.connectTimeoutMillis()));
    if (connect >= 0) {
      chain = chain.withConnectTimeout(toMillis(connect), TimeUnit.MILLISECONDS);
    }
    long read = CallBounds.shorterTimeout(limitNanos, millisToNanos(chain.readTimeoutMillis()));
    if (read >= 0) {
      chain = chain.withReadTimeout(toMillis(read), TimeUnit.MILLISECONDS);
    }
    long write = CallBounds.shorterTimeout(limitNanos, millisToNanos(chain.writeTimeoutMillis()));
    if (write >= 0) {
      chain = chain.withWriteTimeout(toMillis(write), TimeUnit.MILLISECONDS);
    }
    return chain;
  }

  private static long millisToNanos(int millis) {
    return TimeUnit.MILLISECONDS.toNanos(millis); // 0 (no timeout) stays 0
  }

  private static int toMillis(long nanos) {
    return (int) Math.max(1, Math.min(Integer.MAX_VALUE, nanos / 1_000_000));
  }

  /**
   * How long a copy ({@link ResponseAccess#copyToGiveBack}) waits for a body: OkHttp's discard's.
   */
  private static final long PEEK_NANOS = TimeUnit.MILLISECONDS.toNanos(100);

  /**
   * Every line of {@code response}'s header {@code name} ({@link ResponseAccess#header}), where
   * OkHttp's own {@code header(name)} answers with the last. A scan as that one's, no allocation
   * for a header sent once or not at all.
   */
  static String lines(Response response, String name) {
    okhttp3.Headers headers = response.headers();
    String lines = null;
    for (int i = 0, n = headers.size(); i < n; i++) {
      if (headers.name(i).equalsIgnoreCase(name)) {
        lines = FieldLines.add(lines, headers.value(i));
      }
    }
    return lines;
  }

  static final ResponseAccess<Response> ACCESS =
      new ResponseAccess<Response>() {
        @Override
        public int status(Response response) {
          return response.code();
        }

        @Override
        public String header(Response response, String name) {
          return lines(response, name);
        }

        @Override
        public void discard(Response response) {
          // Closing returns the connection to the pool when the rest of the body can be skipped
          // quickly; OkHttp requires it before proceed() is called again.
          try {
            response.close();
          } catch (RuntimeException ignored) {
            // already closed, or no body
          }
        }

        @Override
        public Response copyToGiveBack(Response response) throws IOException {
          ResponseBody body = response.body();
          if (body == null) {
            return response.newBuilder().build();
          }
          if (body.contentLength() > GIVE_BACK_LIMIT) {
            return null;
          }
          // Peeked, not read: the original is discarded as before. A body of up to the limit
          // comes whole (its type kept); one more byte says it is longer. No longer than OkHttp's
          // own discard waits for the rest of a body (100 ms), so that a body that never comes
          // (a 304 with a Content-Length) holds the retry up no more than without the copy: the
          // peek's timeout then ends the connection as the discard's would.
          Timeout timeout = body.source().timeout();
          boolean had = timeout.hasDeadline();
          long deadline = had ? timeout.deadlineNanoTime() : 0;
          long now = System.nanoTime();
          long by = now + PEEK_NANOS;
          timeout.deadlineNanoTime(had && deadline - by < 0 ? deadline : by);
          ResponseBody peeked;
          try {
            peeked = response.peekBody(GIVE_BACK_LIMIT + 1L);
          } finally {
            if (had) {
              timeout.deadlineNanoTime(deadline);
            } else {
              timeout.clearDeadline();
            }
          }
          if (peeked.contentLength() > GIVE_BACK_LIMIT) {
            return null;
          }
          return response.newBuilder().body(peeked).build();
        }

        @Override
        public boolean copyLeavesWhole(Response response) {
          // The copy peeks, but a body that has not all come within its 100 ms ends in the peek's
          // timeout, which closes the connection: the body is cut. Only a body declared over the
          // limit is not peeked at all (none is copied whole, however fast).
          ResponseBody body = response.body();
          return body == null || body.contentLength() > GIVE_BACK_LIMIT;
        }
      };
}
