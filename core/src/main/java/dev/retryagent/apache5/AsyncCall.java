package dev.retryagent.apache5;

import dev.retryagent.engine.AsyncRetryLoop;
import dev.retryagent.engine.AttemptResult;
import dev.retryagent.engine.IdempotencyGate;
import dev.retryagent.engine.RequestInfo;
import dev.retryagent.engine.ResponseAccess;
import dev.retryagent.engine.RetryEngine;
import dev.retryagent.engine.Scheduler;
import dev.retryagent.engine.SelfViewCall;
import dev.retryagent.engine.SharedThreads;
import dev.retryagent.internal.Discards;
import dev.retryagent.internal.apache.ExchangeLog;
import dev.retryagent.internal.observe.Sanitizer;
import java.io.IOException;
import java.lang.reflect.Field;
import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.function.BiConsumer;
import java.util.function.BooleanSupplier;
import org.apache.hc.client5.http.async.AsyncExecCallback;
import org.apache.hc.client5.http.async.AsyncExecChain;
import org.apache.hc.client5.http.config.RequestConfig;
import org.apache.hc.core5.concurrent.Cancellable;
import org.apache.hc.core5.http.ConnectionClosedException;
import org.apache.hc.core5.http.EntityDetails;
import org.apache.hc.core5.http.Header;
import org.apache.hc.core5.http.HttpException;
import org.apache.hc.core5.http.HttpHost;
import org.apache.hc.core5.http.HttpRequest;
import org.apache.hc.core5.http.HttpResponse;
import org.apache.hc.core5.http.message.BasicHttpRequest;
import org.apache.hc.core5.http.nio.AsyncDataConsumer;
import org.apache.hc.core5.http.nio.AsyncEntityProducer;
import org.apache.hc.core5.http.nio.CapacityChannel;
import org.apache.hc.core5.reactor.IOReactor;
import org.apache.hc.core5.reactor.IOReactorStatus;
import org.apache.hc.core5.util.TimeValue;

/**
 * One call of {@link AsyncRetryExecHandler}: its request view, its attempts (each a run of the
 * chain below the handler, driven by {@link AsyncRetryLoop}) and how its responses are read. The
 * loop judges each attempt on the response's head, on the I/O thread that delivers it: the response
 * the call ends with is handed up to the application's consumer there, as without the agent; one it
 * retries is read to its end and thrown away, and the next attempt starts only once that exchange
 * is over and its connection back in the pool.
 */
final class AsyncCall extends SelfViewCall
    implements AsyncRetryLoop.Attempt<AsyncCall.Head>,
        ResponseAccess<AsyncCall.Head>,
        BiConsumer<AsyncCall.Head, Throwable>,
        BooleanSupplier {
  /**
   * How long an attempt in flight when its client closed may take to hear of it from HttpClient
   * before the call tells it itself: HttpCore 5.1.3 loses it now and then (its {@code
   * close(IMMEDIATE)} closes a session the I/O thread then never reports disconnected), and the
   * application would wait for good. Its I/O thread normally tells within milliseconds.
   */
  static final long CLOSE_GRACE_NANOS = TimeUnit.SECONDS.toNanos(2);

  /**
   * Where the close's fallback ({@link Unheard}) is scheduled when not on {@link
   * Scheduler#shared()}: set by tests only, to see it cancelled when HttpClient tells the exchange
   * in time; null otherwise. Read once per close of a client with an attempt in flight.
   */
  static volatile Scheduler closeSchedulerForTests;

  /**
   * {@link AttemptConfig#own} of a context that held no request config (5.4+ without a client
   * default): none is put back.
   */
  private static final RequestConfig NO_CONFIG = RequestConfig.custom().build();

  /** {@link #owner} once the client closed. */
  private static final Object CLOSED = new Object();

  private final RetryEngine engine;
  private final HttpRequest request;
  private final AsyncEntityProducer producer;
  final AsyncExecChain.Scope scope;
  private final AsyncExecChain chain;
  private final AsyncExecCallback app;
  private final String method;
  private final String scheme;
  private final String host;
  private final int port;
  private String attemptHeader;

  /** The attempt under way (the resend counter's log); set before its exchange starts. */
  volatile Exchange current;

  /** The close of the client ({@link AsyncRetryExecHandler.ClientClose}), then {@link #CLOSED}. */
  private volatile Object owner;

  /** The call's wait, once it has waited: the client's close ends it. */
  private volatile Wait wait;

  // Guarded by this: an attempt's exchange is under way (its retried body still being read), and
  // the attempt that waits for it to end.
  private boolean exchangeOpen;
  private Exchange waiting;

  // Guarded by this: the call's end is registered on the loop's result (start()); until then the
  // first attempt's exchange waits here, so that a failure that ends the call before execute
  // returns is delivered on the thread it came on, not on the application's thread in start().
  private boolean endRegistered;
  private Exchange firstHeld;

  AsyncCall(
      RetryEngine engine,
      HttpRequest request,
      AsyncEntityProducer producer,
      AsyncExecChain.Scope scope,
      AsyncExecChain chain,
      AsyncExecCallback app) {
    this.engine = engine;
    this.request = request;
    this.producer = producer;
    this.scope = scope;
    this.chain = chain;
    this.app = app;
    this.owner = AsyncRetryExecHandler.OWNER.get();
    this.method = request.getMethod(); // as sent, case and all (RequestInfo#method)
    HttpHost target = scope.route.getTargetHost();
    String s = target.getSchemeName();
    this.scheme = s == null ? "http" : s.toLowerCase(Locale.ROOT);
    this.host = target.getHostName();
    this.port = target.getPort() >= 0 ? target.getPort() : ("https".equals(scheme) ? 443 : 80);
  }

  /** Runs the call: the first attempt on this thread, as the client would. */
  void start() {
    attemptHeader = policy().retry().attemptHeader();
    AsyncRetryExecHandler.RUNNING.put(scope.execCount, this);
    CompletableFuture<Head> result;
    try {
      result = AsyncRetryLoop.execute(engine, this, this, this);
    } catch (RuntimeException | Error e) {
      AsyncRetryExecHandler.RUNNING.remove(scope.execCount, this);
      throw e;
    }
    result.whenComplete(this);
    Exchange first;
    synchronized (this) {
      endRegistered = true;
      first = firstHeld;
      firstHeld = null;
    }
    if (first != null) {
      launch(first);
    }
  }

  // ---- RequestInfo

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
    return ClassicRequest.pathOf(request.getPath());
  }

  @Override
  public boolean atPastPath() {
    return Sanitizer.atPastPath(request.getPath());
  }

  @Override
  public String header(String name) {
    Header h = request.getFirstHeader(name);
    return h == null ? null : h.getValue();
  }

  /**
   * A producer that cannot produce its body again ({@code isRepeatable() == false}) is never sent
   * twice, whether or not its first attempt wrote any of it: HttpClient's own retry asks the same.
   */
  @Override
  public boolean bodyReplayable() {
    return producer == null || producer.isRepeatable();
  }

  /** The application cancelled the client's future ({@code Future.cancel}). */
  @Override
  public boolean callerGaveUp() {
    return scope.cancellableDependency != null && scope.cancellableDependency.isCancelled();
  }

  /**
   * A wait of this call ends at once when the application cancels the client's future: the future's
   * dependency is what its {@code cancel} cancels, and during a wait nothing of the client's is in
   * flight to hold it (the next attempt's exchange sets its own). Already cancelled, the future
   * cancels it at once.
   */
  @Override
  protected boolean waitStarts(Wait wait) {
    this.wait = wait;
    if (scope.cancellableDependency == null) {
      return false;
    }
    scope.cancellableDependency.setDependency(new EndsWait(wait));
    return true;
  }

  // ---- the client's close

  /**
   * The client this call runs on is closing ({@code close} of every mode; {@code close} itself):
   * the call ends as without the agent. A failure the close causes is not retried and says nothing
   * of the host (the signal of {@link #abortedWhen}); a wait ends now, with the earlier attempt's
   * outcome ({@link #retryTooLate}); an attempt in flight ends as HttpClient ends it, or, should
   * HttpClient never tell it, with a {@code ConnectionClosedException} after {@link
   * #CLOSE_GRACE_NANOS}. On the closing thread, inside the client's {@code close}.
   */
  void clientClosed(AsyncRetryExecHandler.ClientClose close) {
    if (owner != close) {
      return; // another client's call, or told already
    }
    owner = CLOSED;
    abortedWhen(this);
    Wait w = wait;
    if (w != null) {
      w.endNow();
    }
    Exchange e = current;
    if (e != null && e.mayGoUnheard()) {
      try {
        // On our shared scheduler, whatever the engine's: the grace stands in for HttpClient's own
        // news of its I/O, in real time as a retried body's grace is (Discards.Grace); an engine's
        // may be a library user's test scheduler driven by hand, which never told the lost exchange
        // and left the application waiting for good.
        Scheduler forTests = closeSchedulerForTests;
        e.unheardAfter(
            (forTests != null ? forTests : Scheduler.shared())
                .schedule(new Unheard(e), CLOSE_GRACE_NANOS));
      } catch (RuntimeException refused) {
        // no thread to tell it: as before, HttpClient alone tells it
      }
    }
  }

  /**
   * An attempt failed before its head while the client's I/O reactor shuts down: HttpClient fails
   * the exchanges its close ends inside its reactor's close, before it closes what {@code
   * addCloseable} gave it ({@link #clientClosed}). The failure is the close's: the call takes it as
   * its abort now, on the I/O thread, so that it is not retried and reaches the application there,
   * as without the agent. On the failure path only.
   */
  private void failedWhileClosing() {
    closing();
  }

  /**
   * True once the client closed, or its I/O reactor shuts down: HttpClient 5.1's {@code
   * close(GRACEFUL)} waits up to 5 s for its reactor before it closes the agent's closeable, and a
   * retry started meanwhile would go into a client that is closing. Taken as the close then. Off
   * the success path only (a failure, a wait's end): the reactor is read by reflection.
   */
  private boolean closing() {
    if (owner == CLOSED) {
      return true;
    }
    if (!ReactorOf.shuttingDown(scope.execRuntime)) {
      return false;
    }
    owner = CLOSED;
    abortedWhen(this);
    return true;
  }

  /**
   * The I/O reactor of an exec runtime ({@code InternalHttpAsyncExecRuntime.connectionInitiator},
   * private in 5.1 to 5.6, read reflectively); unknown (another runtime, a module closed to
   * reflection): not shutting down, and the close is heard when the client closes the agent's
   * closeable.
   */
  private static final class ReactorOf extends ClassValue<Field> {
    static final ReactorOf FIELDS = new ReactorOf();

    @Override
    protected Field computeValue(Class<?> type) {
      try {
        Field f = type.getDeclaredField("connectionInitiator");
        f.setAccessible(true);
        return f;
      } catch (ReflectiveOperationException | RuntimeException e) {
        return null;
      }
    }

    static boolean shuttingDown(Object runtime) {
      if (runtime == null) {
        return false;
      }
      Field f = FIELDS.get(runtime.getClass());
      if (f == null) {
        return false;
      }
      try {
        Object reactor = f.get(runtime);
        return reactor instanceof IOReactor
            && ((IOReactor) reactor).getStatus().compareTo(IOReactorStatus.SHUTTING_DOWN) >= 0;
      } catch (ReflectiveOperationException | RuntimeException e) {
        return false;
      }
    }
  }

  /** True once the client closed: the call's give-up signal ({@link #abortedWhen}). */
  @Override
  public boolean getAsBoolean() {
    return owner == CLOSED;
  }

  /**
   * After a wait, before the retry: a wait the client's close ended (or that ended after it) makes
   * no retry; the call ends with the attempt before it, as without the agent: its response given
   * back as a late wait's is, or its failure, given up as cancelled (the application closed it).
   */
  @Override
  public boolean retryTooLate() {
    if (!closing()) {
      return super.retryTooLate();
    }
    retryForgone(failureOf(current));
    return true;
  }

  /**
   * After a rate-limit wait before a retry, as after the retry's own wait ({@link #retryTooLate}):
   * a wait the client's close ended (or that ended after it) makes no retry. Before the first
   * attempt there is no earlier outcome: the attempt goes on, as the application's request went out
   * at {@code execute} without the agent.
   */
  @Override
  protected boolean endsAfterPermitWait() {
    if (current == null || !closing()) {
      return false;
    }
    retryForgone(failureOf(current));
    return true;
  }

  /**
   * As the engine's, but for a call its client's close ended whose retried response cannot be given
   * back: the failure of the exchange the close ended while its body was still being read (what the
   * application's consumer gets without the agent), or else an {@code IOException} that says the
   * client closed, not that a wait ended late.
   */
  @Override
  public Throwable lateRetryFailure() {
    if (owner != CLOSED || failureOf(current) != null) {
      return super.lateRetryFailure();
    }
    Exchange e = current;
    Head h = e == null ? null : e.head;
    Kept k = h == null ? null : h.kept;
    Exception broken = k == null ? null : k.failure;
    if (broken != null) {
      return broken;
    }
    return new IOException(
        "retry-agent: the client closed during the wait to retry "
            + method
            + " "
            // The host as every message of the agent's names it: HttpClient takes ss@h.example
            // as the host of http://user:pa@ss@h.example/, part of the password in it.
            + target()
            + ", and the response had been released for the retry");
  }

  /** {@code e}'s failure, or null when it ended with a response (or has not ended). */
  private static Throwable failureOf(Exchange e) {
    if (e == null || e.head != null || !e.isCompletedExceptionally()) {
      return null;
    }
    try {
      e.getNow(null);
      return null;
    } catch (CompletionException x) {
      return x.getCause();
    } catch (CancellationException x) {
      return x;
    }
  }

  /**
   * An attempt in flight at the client's close (or the retried response's body it still reads),
   * told of it if HttpClient has not by now.
   */
  private static final class Unheard implements Runnable {
    private final Exchange exchange;

    Unheard(Exchange exchange) {
      this.exchange = exchange;
    }

    @Override
    public void run() {
      exchange.closedUnheard();
    }
  }

  // ---- AsyncRetryLoop.Attempt

  /**
   * Attempt {@code n}, under the policy's bound {@code timeoutNanos} when there is one (-1: none,
   * the attempt keeps the application's timeouts and nothing more is made): its exchange then runs
   * under the application's config with each timeout shortened to the bound ({@link
   * AttemptTimeouts}), set in the call's context when it is sent ({@link #configure}) and the
   * application's put back at the call's end ({@link #accept}), before the application hears of it.
   */
  @Override
  public CompletableFuture<Head> start(int n, long timeoutNanos) {
    // Each attempt sends a copy: the chain below adds headers (Content-Length, Host) to the
    // request it is given, and a second Content-Length fails the resend (ProtocolException).
    HttpRequest sent = copyOf(request);
    if (attemptHeader != null) {
      sent.setHeader(attemptHeader, Integer.toString(n));
    }
    AttemptConfig bounds = null;
    if (timeoutNanos >= 0) {
      Exchange last = current; // the attempt before, over: its config is no longer needed
      RequestConfig own =
          last != null && last.bounds != null
              ? last.bounds.application()
              : scope.clientContext.getRequestConfig();
      RequestConfig bounded =
          AttemptTimeouts.bounded(
              own != null ? own : RequestConfig.DEFAULT,
              scope.execRuntime,
              scope.route,
              timeoutNanos);
      bounds = bounded == null ? null : new AttemptConfig(bounded);
    }
    return new Exchange(n, sent, bounds);
  }

  /**
   * Sets {@code e}'s config in the call's context for its exchange, the application's kept (in
   * {@code e}, from the attempt before it, {@code prev}) to put back; or the application's back for
   * an attempt without a bound after one with.
   */
  private void configure(Exchange prev, Exchange e) {
    RequestConfig own = prev != null && prev.bounds != null ? prev.bounds.own : null;
    if (e.bounds == null) {
      if (own == null) {
        return; // no bound now, none before: the application's config is in place
      }
      e.bounds = new AttemptConfig(null);
    }
    if (own == null) {
      RequestConfig c = scope.clientContext.getRequestConfig();
      own = c != null ? c : NO_CONFIG;
    }
    e.bounds.own = own;
    scope.clientContext.setRequestConfig(
        e.bounds.config != null ? e.bounds.config : e.bounds.application());
  }

  /**
   * The config of an attempt under a bound, and the application's to put back, in one object made
   * only for such an attempt: an {@link Exchange} without a bound holds none (a field of its own
   * for each would have made every exchange 8 B larger).
   */
  static final class AttemptConfig {
    /** Shortened to the attempt's bound; null: the application's again (after a bound). */
    final RequestConfig config;

    /**
     * The application's, once in the context ({@link #NO_CONFIG} when it held none): written before
     * the exchange is sent, read at the call's end, after it.
     */
    RequestConfig own;

    AttemptConfig(RequestConfig config) {
      this.config = config;
    }

    /** The application's config as the context held it (null: none). */
    RequestConfig application() {
      return own == NO_CONFIG ? null : own;
    }
  }

  /**
   * What {@code BasicRequestBuilder.copy(request).build()} makes (read in HttpCore 5.1 to 5.4: the
   * method, scheme, authority, path, version and headers, in their order; {@code
   * absoluteRequestUri} left false), without the builder and its own header list, which the copy
   * made on every attempt and threw away (issue 13: 352 B per attempt, about 200 B of it the
   * builder's).
   */
  static HttpRequest copyOf(HttpRequest request) {
    BasicHttpRequest copy =
        new BasicHttpRequest(
            request.getMethod(), request.getScheme(), request.getAuthority(), request.getPath());
    copy.setVersion(request.getVersion());
    copy.setHeaders(request.getHeaders());
    return copy;
  }

  /** Launches {@code e} now, or when the exchange before it is over. */
  private void launch(Exchange e) {
    synchronized (this) {
      if (exchangeOpen) {
        waiting = e;
        return;
      }
      exchangeOpen = true;
    }
    send(e);
  }

  /** An attempt's exchange is over, its connection back in the pool or closed. */
  private void exchangeOver() {
    Exchange next;
    synchronized (this) {
      next = waiting;
      waiting = null;
      exchangeOpen = next != null;
    }
    if (next != null) {
      send(next);
    }
  }

  private void send(Exchange e) {
    Exchange prev = current;
    current = e;
    configure(prev, e);
    if (callerGaveUp()) {
      // Cancelled during the wait (a retry's, or the first attempt's for its rate-limit permit):
      // nothing more goes out; the client's future is over already. Before, a first attempt went
      // to the chain, which sent it to the host after the application had cancelled it.
      e.log.noConnection(this, true);
      e.failed(new CancellationException("Request execution cancelled"));
      return;
    }
    if (e.number == 1) {
      try {
        chain.proceed(e.request, producer, scope, e);
      } catch (HttpException | IOException | RuntimeException x) {
        e.failed(x);
      }
      return;
    }
    if (closing()) {
      // The client closed after the retry's wait, while the retried body was still read: nothing
      // goes out; the attempt fails as the close fails that body's exchange (what the
      // application's consumer reading it gets without the agent), and the close ends the call.
      e.log.noConnection(this, false);
      e.failed(new ConnectionClosedException("Connection is closed"));
      return;
    }
    if (producer != null) {
      // As HttpClient's own retry does before it resends: a repeatable producer starts over.
      producer.releaseResources();
    }
    // Counted as HttpClient counts its own resend (AsyncHttpRequestRetryExec increments it before
    // it resends): its strategy, asked about a later failure by execCount, then knows its budget
    // spent by this retry, as it would be had it resent itself (a resend after the application's
    // consumer failed would otherwise go out where without the agent none does).
    scope.execCount.incrementAndGet();
    try {
      // On the client's own scheduler, where its own resends run: from the chain's head, which
      // lets it through (AsyncRetryExecHandler). The five-argument form is in every 5.x.
      scope.scheduler.scheduleExecution(e.request, producer, scope, e, TimeValue.ZERO_MILLISECONDS);
    } catch (RuntimeException x) {
      // The client is closed: its scheduler refuses.
      e.log.noConnection(this, false);
      e.failed(x);
    }
  }

  // ---- ResponseAccess

  @Override
  public int status(Head h) {
    return h.response.getCode();
  }

  @Override
  public String header(Head h, String name) {
    return ClassicRequest.lines(h.response, name);
  }

  /** The body is read to its end and thrown away ({@link Exchange#handleResponse}). */
  @Override
  public void discard(Head h) {
    h.discarded = true;
  }

  /**
   * A copy of a retried response for a wait that ends past the deadline: its head, and the body the
   * {@link Discarding} consumer reads anyway, kept while within {@link #GIVE_BACK_LIMIT} bytes.
   * Only a marker here: the body is read after the decision, as it comes.
   */
  @Override
  public Head copyToGiveBack(Head h) {
    Kept k = new Kept();
    h.kept = k;
    Head copy = new Head(h.response, h.details);
    copy.kept = k;
    copy.givenBack = true;
    return copy;
  }

  /**
   * The copy, once its exchange is over: with its whole body, or, when the body was longer than a
   * copy keeps or failed, the engine's failure that says the response could not be given back.
   */
  @Override
  public CompletionStage<Head> giveBack(Head copy) {
    return copy.kept.thenApply(
        whole -> {
          if (!whole) {
            throw new CompletionException(lateRetryFailure());
          }
          return copy;
        });
  }

  /** The loop decides on the head: the body of a response it retries is never the caller's. */
  @Override
  public boolean whole(Head h) {
    return false;
  }

  /**
   * Whether HttpClient's own retry may send the request again after {@code result}, a failure
   * inside the current exchange ({@link GovernedRetryStrategy}); {@code followUp}: the request it
   * would resend when HttpClient made it itself to follow the call's (a redirect's GET after a
   * POST's 303, {@link AsyncResendCounter.Counted#followUp}), else null. While the call goes on,
   * the call's rule ({@link #clientMayResend(AttemptResult, RequestInfo)}): a failure the policy
   * retries is left to the agent's retry. Once the call is over (the response's head went up to the
   * application's consumer, then its body failed), no retry of the agent's comes, so the policy's
   * retrying the failure is no reason to refuse: the client resends as it does without the agent,
   * and a request the policy would never repeat (a POST without key) still never.
   */
  boolean clientMayResendInExchange(AttemptResult result, RequestInfo followUp) {
    return clientMayResend(result, followUp)
        || (isFinished()
            && IdempotencyGate.check(
                    policy().retry(), followUp != null ? followUp : this, result.outcome())
                == null);
  }

  // ---- the call's end

  /**
   * The loop is over: a response was handed up to the application when it came ({@link
   * Exchange#handleResponse}); a failure goes up now, as the client delivered it.
   */
  @Override
  public void accept(Head h, Throwable t) {
    AsyncRetryExecHandler.RUNNING.remove(scope.execCount, this);
    Exchange last = current;
    if (last != null && last.bounds != null) {
      // Before the application hears of the call (the loop ends on the head it gets, before its
      // consumer sees it): its context as it set it, or as its interceptor set it, without the
      // bound (AttemptTimeouts.unshortened). The chain below has read the attempt's.
      scope.clientContext.setRequestConfig(
          AttemptTimeouts.unshortened(
              scope.clientContext.getRequestConfig(),
              last.bounds.config,
              last.bounds.application()));
    }
    if (t == null) {
      if (h != null && h.givenBack) {
        // After a wait, on the thread it ended on (the engine's): HttpClient has no public way to
        // run a task on its I/O dispatch threads, and a hand-over through its execution chain
        // would show interceptors before ours an execution that is not a request.
        new Delivery(h).run();
      }
      return;
    }
    Throwable c = t;
    while (c instanceof CompletionException && c.getCause() != null) {
      c = c.getCause();
    }
    // Where it ended: the client's thread in an attempt's callback, the caller's in execute (a
    // refusal before the first attempt), the engine's after a wait (as a give-back, above).
    app.failed(c instanceof Exception ? (Exception) c : new ExecutionException(c));
  }

  /**
   * A response given back at the call's end after a wait: its head and kept body fed to the
   * application's consumer, as HttpCore feeds it, then its callback completed.
   */
  final class Delivery implements CapacityChannel, Runnable {
    private final Head copy;
    private AsyncDataConsumer consumer; // guarded by this, while the body is fed
    private int capacity; // guarded by this
    private int fed; // guarded by this
    private boolean feeding; // guarded by this

    Delivery(Head copy) {
      this.copy = copy;
    }

    @Override
    public void run() {
      AsyncDataConsumer c;
      try {
        c = app.handleResponse(copy.response, copy.details);
      } catch (HttpException | IOException | RuntimeException x) {
        app.failed(x);
        return;
      }
      if (c == null) {
        app.completed();
        return;
      }
      synchronized (this) {
        consumer = c;
      }
      try {
        c.updateCapacity(this);
      } catch (IOException | RuntimeException x) {
        end(x);
        return;
      }
      feed();
    }

    /** The consumer's capacity grew (now or later, on any thread): feeds on. */
    @Override
    public void update(int increment) {
      synchronized (this) {
        if (increment > 0) {
          capacity = (int) Math.min(Integer.MAX_VALUE, (long) capacity + increment);
        }
      }
      feed();
    }

    /**
     * Feeds the kept body within the capacity the consumer gave, as HttpCore does (no more than it
     * asked for; the rest when it asks again), then ends the stream and completes the callback.
     */
    private void feed() {
      Kept k = copy.kept;
      while (true) {
        AsyncDataConsumer c;
        ByteBuffer chunk;
        synchronized (this) {
          c = consumer;
          if (c == null || feeding) {
            return;
          }
          int left = k.length - fed;
          if (left > 0 && capacity <= 0) {
            return; // update() goes on
          }
          int n = Math.min(left, capacity);
          chunk = n > 0 ? ByteBuffer.wrap(k.bytes, fed, n).asReadOnlyBuffer() : null;
          fed += n;
          capacity -= n;
          feeding = true;
          if (chunk == null) {
            consumer = null; // the whole body is fed: the stream ends, once
          }
        }
        try {
          if (chunk == null) {
            c.streamEnd(null);
            app.completed();
            return;
          }
          c.consume(chunk);
        } catch (HttpException | IOException | RuntimeException x) {
          synchronized (this) {
            consumer = null;
          }
          end(x);
          return;
        } finally {
          synchronized (this) {
            feeding = false;
          }
        }
      }
    }

    private void end(Exception x) {
      synchronized (this) {
        consumer = null;
      }
      app.failed(x);
    }
  }

  /** A response's head, as the loop judges it. */
  static final class Head {
    final HttpResponse response;
    final EntityDetails details;
    volatile boolean discarded;
    volatile Kept kept; // the body kept for a give-back, when the loop asked for a copy
    boolean givenBack; // this is that copy

    Head(HttpResponse response, EntityDetails details) {
      this.response = response;
      this.details = details;
    }
  }

  /**
   * A retried response's body as {@link Discarding} reads it, while within {@link
   * ResponseAccess#GIVE_BACK_LIMIT} bytes; completes once its exchange is over: true when it was
   * read whole within them.
   */
  static final class Kept extends CompletableFuture<Boolean> {
    byte[] bytes = new byte[0];
    int length;
    private boolean tooLong;
    volatile Exception failure; // the exchange failed as the body was read (not for its length)

    /** On the I/O thread, in order. */
    void add(ByteBuffer src) {
      if (tooLong) {
        return;
      }
      int n = src.remaining();
      if ((long) length + n > GIVE_BACK_LIMIT) {
        tooLong = true;
        bytes = null;
        return;
      }
      if (length + n > bytes.length) {
        bytes = Arrays.copyOf(bytes, Math.min(GIVE_BACK_LIMIT, Math.max(512, (length + n) * 2)));
      }
      src.duplicate().get(bytes, length, n);
      length += n;
    }

    void ended(boolean whole) {
      complete(whole && !tooLong);
    }

    /** The exchange failed as the body was read: {@code cause}, unless it was too long anyway. */
    void failed(Exception cause) {
      if (!tooLong) {
        failure = cause;
      }
      ended(false);
    }
  }

  /**
   * One attempt: its future (which the loop judges), the callback the chain below answers, and the
   * log of the exchanges HttpClient makes in it ({@link AsyncResendCounter}).
   *
   * <p>The exchange starts only once the loop has registered on the future ({@link #whenComplete}):
   * the loop then judges each outcome inline, on the thread that delivers it, so that {@link
   * #handleResponse} knows whether the response goes to the application before it returns the
   * consumer for its body.
   */
  final class Exchange extends CompletableFuture<Head> implements AsyncExecCallback {
    final int number;
    final HttpRequest request;
    // The attempt's config under its bound, and the application's to put back; null: the
    // application's as it is, none replaced (configure). Set before the exchange is sent.
    AttemptConfig bounds;
    final ExchangeLog log = new ExchangeLog();
    private boolean launched;
    // Guarded by this: failed before a head, or a discarded head's body over, by HttpClient or at
    // the close (closedUnheard), once.
    private boolean ended;
    // Guarded by this: the close's fallback (Unheard), cancelled once HttpClient tells the
    // exchange: else it held the exchange (its response, the bytes kept of its body) for the
    // whole grace, to do nothing.
    private Scheduler.Cancellable unheard;
    private volatile Head head;

    Exchange(int number, HttpRequest request, AttemptConfig bounds) {
      this.number = number;
      this.request = request;
      this.bounds = bounds;
    }

    AsyncCall call() {
      return AsyncCall.this;
    }

    @Override
    public CompletableFuture<Head> whenComplete(BiConsumer<? super Head, ? super Throwable> a) {
      CompletableFuture<Head> f = super.whenComplete(a);
      boolean go;
      synchronized (this) {
        go = !launched;
        launched = true;
      }
      if (go) {
        synchronized (AsyncCall.this) {
          if (!endRegistered) {
            firstHeld = this; // start() launches it, still on the caller's thread
            return f;
          }
        }
        launch(this);
      }
      return f;
    }

    @Override
    public AsyncDataConsumer handleResponse(HttpResponse response, EntityDetails details)
        throws HttpException, IOException {
      Head h = new Head(response, details);
      Head before;
      synchronized (this) {
        if (ended) {
          // Told of the client's close by closedUnheard already: this answer is no one's now.
          throw new ConnectionClosedException("Connection is closed");
        }
        before = head;
        head = h;
      }
      if (before != null && before.discarded) {
        return resentUnasked(before, h);
      }
      log.reportTo(AsyncCall.this); // HttpClient's own resends in the attempt, before the decision
      if (callerGaveUp()) {
        abandonedAtHead();
      } else {
        permitAtDecision(response);
      }
      complete(h); // the loop judges it here
      if (!h.discarded) {
        told(); // the application's: its body's end, or none, reaches it as without the agent
      }
      if (h.discarded) {
        Kept k = h.kept;
        if (details == null) {
          if (k != null) {
            k.ended(true);
          }
          return null;
        }
        return new Discarding(k);
      }
      return app.handleResponse(response, details);
    }

    /**
     * Whether the call judged this exchange's response on its head and retries it (its body read
     * away, {@link Discarding}): HttpClient must not resend after that body fails ({@link
     * AsyncResendCounter.Counted#mayResend}); the call's retry waits for this exchange's end.
     */
    boolean retriedAtHead() {
      Head h = head;
      return h != null && h.discarded;
    }

    /**
     * HttpClient resent the request by itself after the body of {@code retried}, the response the
     * call retries, failed, and {@code resend} answers it: a strategy the call does not govern (the
     * application's, set on the builder after {@link AsyncRetryExecHandler#addTo}) asked alone. The
     * call decided on {@code retried} already, and its retry waits for this exchange's end: {@code
     * resend} is read away too, and its end is the exchange's ({@link #completed}, {@link
     * #failed}), after which the retry goes out. Handed up, it reached the application, which then
     * had the call's outcome after it too, and the exchange's end never came: the retry waited
     * forever and the call never ended. The body of {@code retried} was broken off: no copy of it
     * can be given back ({@link Kept#failed}).
     */
    private AsyncDataConsumer resentUnasked(Head retried, Head resend) {
      resend.discarded = true;
      Kept k = retried.kept;
      if (k != null) {
        k.failed(
            new ConnectionClosedException(
                "retry-agent: the retried response's body was broken off"));
      }
      return resend.details == null ? null : new Discarding(null);
    }

    /**
     * The application cancelled the client's future as the head came (HttpClient had delivered it
     * when the cancel came, so it did not fail the exchange): the call ends as one abandoned before
     * it judged the attempt ({@link #onAbandoned}), as {@code AsyncRetryLoop} ends a call cancelled
     * while its attempt is in flight and as the call ends when HttpClient's cancel fails the
     * exchange first: a cancelled attempt, the breaker's permit back without an outcome, nothing
     * taken from the budget or the rate limit. Judged, the response was recorded as the host's
     * answer (a 503 the breaker's failure) and the call given up with it, unlike the same cancel a
     * moment earlier. The loop, judging the head after, finds the call over and hands the response
     * up as it is, as before.
     */
    private void abandonedAtHead() {
      try {
        onAbandoned();
      } catch (RuntimeException bug) {
        // Our bug must not cost the application its response: the loop judges it as before.
        engine.internalError(
            "ending a call cancelled at its response's head",
            bug,
            "the loop judges the response as the call's outcome");
      }
    }

    /**
     * The decision on {@code response}'s head, and the permit of the retry it decides, asked now,
     * while the application's consumer can still have the body ({@link
     * dev.retryagent.engine.RetryCall#reserveRetryPermit}): the loop's judging ({@link #complete})
     * swaps in a {@link Discarding} consumer that keeps at most {@link
     * ResponseAccess#GIVE_BACK_LIMIT} bytes, and a refusal after the wait found a longer body gone
     * and ended the call with {@code RateLimitedException} where without the agent the application
     * had the 503. Refused here, the call is over and the loop, deciding again, hands the live
     * response up; granted, the loop's wait is the longer of the backoff and the permit's, and the
     * retry takes that permit. A call over already is judged by the loop alone, as before; one its
     * caller gave up is over ({@link #abandonedAtHead}). A cancel after the decision is one during
     * the retry's wait, which it ends at once.
     */
    private void permitAtDecision(HttpResponse response) {
      if (callerGaveUp() || isFinished()) {
        return;
      }
      try {
        if (onResponse(response.getCode(), ClassicRequest.lines(response, "Retry-After")).retry()) {
          // On the I/O reactor's thread, which serves every exchange of the client: a fleet limit
          // must not hold it for a connect to Redis or a connection another call holds.
          boolean marked = SharedThreads.enter();
          try {
            reserveRetryPermit();
          } finally {
            SharedThreads.exit(marked);
          }
        }
      } catch (RuntimeException bug) {
        // Our bug must not cost the application its response: the loop judges it as before.
        engine.internalError(
            "reserving a retry's rate-limit permit at its decision",
            bug,
            "the retry asks for its permit after its wait");
      }
    }

    @Override
    public void handleInformationResponse(HttpResponse response) throws HttpException, IOException {
      app.handleInformationResponse(response);
    }

    @Override
    public void completed() {
      Head h = head;
      if (h != null && h.discarded) {
        synchronized (this) {
          if (ended) {
            return; // told at the close already (closedUnheard)
          }
          ended = true;
        }
        told();
        if (h.kept != null) {
          h.kept.ended(true);
        }
        // The connection goes back to the pool for the wait (kept alive or closed as HttpClient
        // decided), as the classic client's does when a retried response is closed.
        scope.execRuntime.releaseEndpoint();
        exchangeOver();
        return;
      }
      app.completed();
    }

    /**
     * Whether HttpClient has yet to tell this exchange's end to the call: before its head, or while
     * the body of a response the call retries is read. (A head handed to the application is the
     * application's: its body's end, or none, reaches it as without the agent.)
     */
    synchronized boolean mayGoUnheard() {
      Head h = head;
      return !ended && (h == null || h.discarded);
    }

    /** The close's fallback for this exchange: cancelled at once if HttpClient told it already. */
    void unheardAfter(Scheduler.Cancellable task) {
      boolean told;
      synchronized (this) {
        told = !mayGoUnheard();
        if (!told) {
          unheard = task;
        }
      }
      if (told) {
        task.cancel();
      }
    }

    /** HttpClient told this exchange its end (or its head is the application's): no fallback. */
    private void told() {
      Scheduler.Cancellable task;
      synchronized (this) {
        task = unheard;
        unheard = null;
      }
      if (task != null) {
        task.cancel();
      }
    }

    /**
     * The client closed {@link #CLOSE_GRACE_NANOS} ago and HttpClient has told this exchange
     * nothing: it never will (HttpCore 5.1's lost session; 5.6's exchange whose body was being
     * read). Ends it as its close does: before its head, the attempt failed; after it, the retried
     * response's body broken off, so the call ends (its wait ended by the close) with that failure.
     */
    void closedUnheard() {
      Head h;
      synchronized (this) {
        h = head;
        if (ended || (h != null && !h.discarded)) {
          return; // HttpClient told it, or the response is the application's
        }
        ended = true;
      }
      ConnectionClosedException closed = new ConnectionClosedException("Connection is closed");
      if (h == null) {
        failedBeforeHead(closed);
        return;
      }
      if (h.kept != null) {
        h.kept.failed(closed);
      }
      scope.execRuntime.discardEndpoint();
      exchangeOver();
    }

    @Override
    public void failed(Exception cause) {
      Head h;
      synchronized (this) {
        h = head;
        if (h == null) {
          if (ended) {
            return; // told at the close already (closedUnheard)
          }
          ended = true;
        }
      }
      if (h == null) {
        told();
        failedWhileClosing();
        failedBeforeHead(cause);
        return;
      }
      if (h.discarded) {
        synchronized (this) {
          if (ended) {
            return; // told at the close already (closedUnheard)
          }
          ended = true;
        }
        told();
        if (h.kept != null) {
          h.kept.failed(cause); // a body broken off cannot be given back
        }
        scope.execRuntime.discardEndpoint();
        exchangeOver();
        return;
      }
      app.failed(cause); // the body of the response the application got failed: it hears of it
    }

    /** The attempt failed before its head: the loop decides. */
    private void failedBeforeHead(Exception cause) {
      // A retry starts on a new connection, as HttpClient's own retry does.
      log.reportTo(AsyncCall.this);
      scope.execRuntime.discardEndpoint();
      exchangeOver();
      completeExceptionally(cause);
    }
  }

  /**
   * Reads a retried response's body to its end, at most {@link Discards#LIMIT} bytes; a longer one
   * fails the exchange, which closes the connection, as the other clients' releases do.
   */
  private static final class Discarding implements AsyncDataConsumer {
    private final Kept kept; // null: nothing kept
    private long seen;

    Discarding(Kept kept) {
      this.kept = kept;
    }

    @Override
    public void updateCapacity(CapacityChannel channel) throws IOException {
      channel.update(Integer.MAX_VALUE);
    }

    @Override
    public void consume(ByteBuffer src) throws IOException {
      seen += src.remaining();
      if (kept != null) {
        kept.add(src);
      }
      src.position(src.limit());
      if (seen > Discards.LIMIT) {
        throw new IOException("retry-agent: retried response body too long, connection closed");
      }
    }

    @Override
    public void streamEnd(List<? extends Header> trailers) {}

    @Override
    public void releaseResources() {}
  }

  /** What the client's future cancels during a wait: the wait, ended now. */
  private static final class EndsWait implements Cancellable {
    private final Wait wait;

    EndsWait(Wait wait) {
      this.wait = wait;
    }

    @Override
    public boolean cancel() {
      wait.endNow();
      return true;
    }
  }
}
