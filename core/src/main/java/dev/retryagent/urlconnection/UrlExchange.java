package dev.retryagent.urlconnection;

import dev.retryagent.engine.Decision;
import dev.retryagent.engine.RateLimitedException;
import dev.retryagent.engine.RetryCall;
import dev.retryagent.engine.RetryEngine;
import dev.retryagent.engine.Scheduler;
import dev.retryagent.internal.FieldLines;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.io.OutputStream;
import java.lang.ref.Reference;
import java.lang.ref.ReferenceQueue;
import java.lang.ref.WeakReference;
import java.net.HttpURLConnection;
import java.net.ProtocolException;
import java.net.Proxy;
import java.net.SocketException;
import java.net.URL;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicIntegerFieldUpdater;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.BooleanSupplier;

/**
 * One application connection and the call behind it: the JDK's own connection (the template,
 * attempt 1), what the application configured, the body, and the attempts the engine decides.
 *
 * <p>The call starts at the first step that reaches the network: {@code connect()}, {@code
 * getOutputStream()} (the JDK connects there, and in a streaming mode sends the headers) or the
 * first response method. An attempt that fails before the application has written its body (a
 * refused connection in {@code connect()}) is retried right there, so the application writes to the
 * attempt that got through. Once the application asks for the response, the live attempt is
 * completed and every further attempt is made whole on a fresh connection, with the body the agent
 * holds. The response methods then answer from the final attempt's connection; the first of them
 * that throws throws the very exception that attempt's {@code getInputStream()} threw, as without
 * the agent.
 *
 * <p>Each attempt's steps run in the call's context (its tracing) and the waits outside it ({@link
 * AttemptSteps}); the context ends once, when the call is over.
 *
 * <p>The facades call this under its lock, except {@link #disconnect()}, which must be able to end
 * a wait from another thread.
 */
final class UrlExchange {
  /** {@code disconnect()} ends a wait within this much. */
  private static final long CANCEL_POLL_NANOS = TimeUnit.MILLISECONDS.toNanos(50);

  /**
   * The application's connections (their {@link ConnectionView}) that the collector found dropped
   * while their call was open between the application's steps, for the next call or the next look
   * to end ({@link #endDropped}).
   */
  private static final ReferenceQueue<Object> DROPPED = new ReferenceQueue<>();

  /** The watches not collected yet: a reference must be reachable to be queued. */
  private static final Set<Watch> WATCHED = ConcurrentHashMap.newKeySet();

  /**
   * How often the queue is looked at while a call is watched: a connection dropped is ended this
   * long after the collector finds it, at most, even when no further call comes. A look at an empty
   * queue costs nothing to speak of; none is made while no call is watched.
   */
  private static final long LOOK_NANOS = TimeUnit.SECONDS.toNanos(1);

  /** A look is scheduled: {@link #lookWhileWatched}. */
  private static final AtomicBoolean LOOKING = new AtomicBoolean();

  private static final Runnable LOOK = new Look();

  /**
   * Where looks are scheduled when not on {@link Scheduler#shared()}: set by tests only, to see a
   * refusal handled (the shared scheduler cannot be made to refuse); null otherwise.
   */
  static volatile Scheduler lookSchedulerForTests;

  /** Held by a look while it ends dropped calls: {@link #endDropped}. */
  private static final ReentrantLock ENDING = new ReentrantLock();

  /** How long a call that starts waits for a look ending dropped calls: {@link #awaitLook}. */
  private static final long LOOK_WAIT_NANOS = TimeUnit.SECONDS.toNanos(1);

  /**
   * A look is ending what the queue held: a call that polled it empty meanwhile waits for {@link
   * #ENDING} (boundedly: {@link #awaitLook}), so that a dropped half-open trial's permit is back
   * before it starts, as when the call itself ended it. Set before the look polls, read by a call
   * after its poll.
   */
  private static volatile boolean lookEnding;

  private final RetryEngine engine;
  private final UrlTransport transport;
  private final AttemptSteps steps;
  private final Proxy proxy;
  final HttpURLConnection template;
  final UrlRequest request;
  private final ReentrantLock lock = new ReentrantLock();

  /** The connection the application's calls go to: the template, the live attempt, the final. */
  private volatile HttpURLConnection current;

  private RetryCall call;
  private boolean done;
  private boolean templateUsed;

  /** The attempt in progress between the application's steps, and how far it got. */
  private HttpURLConnection live;

  private int attempt;
  // The wait for the permit reserved before a kept response was released for the retry, which
  // begin() waits instead of reserving one; -1: none reserved.
  private long permitWait = -1;

  /**
   * The engine began the live attempt (its rate-limit permit, its breaker permit, its number). Not
   * after {@code connect()} alone: the JDK sends nothing there, and an application that lets the
   * connection go then would hold them for nothing.
   */
  private boolean liveBegun;

  private boolean liveConnected;

  /**
   * An attempt of the call connected: the connection a call that then ended without one answers as
   * the JDK's connected connection does ({@link NoResponse}). Kept here, as the agent's release of
   * a retried response may disconnect the JDK's (after which it answers as one never connected).
   */
  private boolean connectedOnce;

  /**
   * The last attempt whose response the JDK read (its {@code getInputStream()} got a status line):
   * a call that ended with it answers {@code getOutputStream()} as the JDK's connection does after
   * reading its input ({@link NoResponse#getOutputStream}).
   */
  private HttpURLConnection responded;

  private int liveRepeats;

  /** The final attempt's own exception, until a response method throws it. */
  private Throwable unseen;

  /**
   * The application's step that runs the call: {@link #CONNECT}, {@link #BODY}, {@link #RESPONSE}.
   */
  private int step;

  static final int CONNECT = 1;
  static final int BODY = 2;
  static final int RESPONSE = 3;

  private volatile boolean running;
  private volatile boolean cancelled;

  /**
   * How many setters from another thread came during a body step ({@link #mayStillConnectForBody}):
   * raised by them alone, under the settings' monitor, and read once by {@link #openBody}, which
   * takes that monitor only when one came. A body step where none came (an ordinary POST) takes no
   * monitor and makes no write for them: one volatile read.
   */
  private volatile int bodySetters;

  private static final AtomicIntegerFieldUpdater<UrlExchange> BODY_SETTERS =
      AtomicIntegerFieldUpdater.newUpdater(UrlExchange.class, "bodySetters");

  /**
   * The body step connected an attempt: written when its body failed to open ({@link
   * #bodyConnected}), or as it opens after another thread's setter came ({@link #openBody}). The
   * JDK's connection, connected by then, refuses from here on, where the attempt's, disconnected by
   * the agent before a retry, would take a setter. Under the settings' monitor.
   */
  private boolean bodyStepConnected;

  /**
   * A fixed length set from another thread during a body step changed one already set (before the
   * step or by an earlier such setter): the JDK's connection may have opened its streamed body with
   * either, and tells which by nothing ({@link #openBody}). Under the settings' monitor.
   */
  private boolean bodyLengthChanged;

  /**
   * How many times the application called {@code disconnect()}; {@link #disconnectsAtStep}: how
   * many when its step that may run the call (connect, body, response) took the lock. One counted
   * in between, before the call is marked {@link #running}, is a cancel too ({@link #runs}).
   */
  private volatile int disconnects;

  /**
   * Counts {@link #disconnects}: two disconnects at once from two threads are both counted (a
   * {@code ++} of the volatile field could lose one). A static updater, no object per call.
   */
  private static final AtomicIntegerFieldUpdater<UrlExchange> DISCONNECTS =
      AtomicIntegerFieldUpdater.newUpdater(UrlExchange.class, "disconnects");

  private int disconnectsAtStep;

  /**
   * How many {@code disconnect()} calls are through their JDK disconnect ({@link #disconnect}): one
   * counted in {@link #disconnects} and not here is under way, and may yet close the socket of an
   * attempt that starts now ({@link #runs}).
   */
  private volatile int disconnectsDone;

  private static final AtomicIntegerFieldUpdater<UrlExchange> DISCONNECTS_DONE =
      AtomicIntegerFieldUpdater.newUpdater(UrlExchange.class, "disconnectsDone");

  /**
   * A {@code disconnect()} found the lock held with the call not running: whoever holds it ends the
   * call as that disconnect would have ({@link #released}, {@link #stepBegins}), or the step it
   * holds it for cancels the call ({@link #runs}).
   */
  private volatile boolean pending;

  /**
   * A timeout the application set while another holder had the lock (a running call): recorded in
   * {@link #request}, not yet written to {@link #current} ({@link #timeoutSetMeanwhile}).
   */
  private volatile boolean connectTimeoutUnapplied;

  private volatile boolean readTimeoutUnapplied;

  /** The application called {@code disconnect()}: a write it breaks is not the host's failure. */
  private volatile boolean disconnected;

  /** While the call is open between the application's steps: the application's connection. */
  private Watch watch;

  /**
   * The attempt header this call's attempts carry, once the first one is prepared; else null. The
   * application never set it and, without the agent, never sees it: its getters hide it ({@link
   * ConnectionView#getRequestProperty}).
   */
  private volatile String attemptHeader;

  UrlExchange(HttpURLConnection template, Proxy proxy, RetryEngine engine, UrlTransport transport) {
    this.template = template;
    this.current = template;
    this.proxy = proxy;
    this.engine = engine;
    this.transport = transport;
    this.steps = new AttemptSteps(transport);
    // The URL given to openConnection; getURL() follows redirects once connected.
    this.request = new UrlRequest(template, template.getURL());
  }

  ReentrantLock lock() {
    return lock;
  }

  /** Where configuration and state questions go now. */
  HttpURLConnection current() {
    return current;
  }

  /**
   * The application's step whose call runs now ({@link #CONNECT}, {@link #BODY}, {@link
   * #RESPONSE}), or 0: read without the lock by another thread's configuration method, which then
   * answers as the JDK's connection does during its own call ({@link ConnectionView}) instead of
   * waiting for the lock, held from the call's start to its end. The step is written before {@link
   * #running}, read after it.
   */
  int runningStep() {
    return running ? step : 0;
  }

  /**
   * For a setter the JDK's connection takes until it is connected (the streaming modes, {@code
   * setUseCaches} and the others a retry copies) made from another thread during a body step, under
   * the settings' monitor: whether it may still be taken, asked of the connection in use, which
   * refuses it once connected, as the JDK's own. The JDK's {@code getOutputStream()} connects
   * before it reads them ({@code getOutputStream0}) and takes them from another thread until then;
   * ours connects the attempt (its connect failures retried, the waits among it) before it opens
   * the body. False once the body step connected an attempt that then failed: the JDK's would be
   * connected. Raises {@link #bodySetters} first, so that {@link #openBody} then waits for this
   * setter and reads the streaming mode it recorded: either the body opening sees the count raised,
   * or the connection is already connected when this setter asks it (the JDK's lock released after
   * its connect, then the count read; here the count raised, then {@code connected} read).
   */
  boolean mayStillConnectForBody() {
    if (bodyStepConnected) {
      return false;
    }
    BODY_SETTERS.incrementAndGet(this);
    return true;
  }

  /**
   * Under the settings' monitor, a fixed length set during another thread's body step (taken, not
   * refused): noted when it changes the one the record held ({@link #bodyLengthChanged}).
   */
  void fixedLengthDuringBody(long length) {
    long held = request.fixedLength();
    if (held >= 0 && held != length) {
      bodyLengthChanged = true;
    }
  }

  /** The attempt header the call's connections carry, or null: {@link #attemptHeader}. */
  String attemptHeader() {
    return attemptHeader;
  }

  /** Whether the response side is settled. */
  boolean done() {
    return done;
  }

  // ---- the network steps --------------------------------------------------------------------

  /**
   * {@code connect()}: connects the live attempt, retrying a failure the engine retries. The first
   * attempt (the template) connects before the engine is asked for anything: the JDK opens a socket
   * and sends nothing, and an application may let the connection go without another step (no {@code
   * disconnect()}, no response): a breaker permit taken here (a half-open trial) or a rate-limit
   * permit would be held for nothing until the breaker gave up on it. The attempt begins with the
   * engine at its first step that sends ({@link #beginLive}), or when its connect failed, to judge
   * the failure.
   */
  void connect(int seen) throws IOException {
    stepBegins(seen);
    request.bodyMayFollow(); // before the call's policy is found
    if (live != null || done || !start()) {
      current.connect(); // the JDK's own answer: nothing once connected
      return;
    }
    step = CONNECT;
    advance(false);
  }

  /** {@code getOutputStream()}: the live attempt's body stream, seen through the body copy. */
  OutputStream getOutputStream(int seen) throws IOException {
    stepBegins(seen);
    if (request.body() != null && !done) {
      return request.body().stream(); // the JDK returns the same stream every time, too
    }
    request.bodyMayFollow(); // the JDK turns a GET into a POST here
    if (done || jdkRefusesBody(current) || !start()) {
      // after the response, a body the JDK refuses, or with the engine off: the JDK's own answer
      return current.getOutputStream();
    }
    step = BODY;
    return advance(true);
  }

  /**
   * Makes attempts until the live one is connected and, with {@code body}, has its body stream
   * open; a failure is the attempt's, decided by the engine. Throws what ends the call.
   */
  private OutputStream advance(boolean body) throws IOException {
    runs();
    try {
      while (true) {
        // connect() of the first attempt: the engine is asked when a step sends (or it failed).
        boolean unbegun = live == null && !body && !templateUsed;
        if (live == null) {
          attempt = unbegun ? 1 : begin();
          liveBegun = !unbegun;
          liveConnected = false;
          liveRepeats = 0;
        } else if (body) {
          beginLive();
        }
        HttpURLConnection c = live;
        OutputStream out = null;
        Throwable failure = null;
        steps.begin(call, request);
        try {
          if (c == null) {
            c = open(attempt);
            live = c;
          }
          if (!liveConnected) {
            c.connect();
            liveConnected = true;
            connectedOnce = true;
          }
          if (body) {
            out = openBody(c);
          }
        } catch (IOException | RuntimeException e) {
          failure = e;
        } finally {
          liveRepeats += steps.end();
        }
        if (failure == null) {
          return out;
        }
        if (body && liveConnected) {
          bodyConnected(); // before the agent's disconnect of c below
        }
        live = null;
        if (!liveBegun && !cancelled) {
          // The connect failed: judged as the attempt's outcome, with its permits (a cancel is
          // the application's, judged as before).
          try {
            attempt = begin();
          } catch (IOException e) {
            e.addSuppressed(failure);
            letGo(c); // the application's disconnect() no longer reaches it
            throw e;
          }
          liveBegun = true;
        }
        retryAfterEarlyFailure(c, failure, body ? rejectedExpectation(c, failure) : -1);
      }
    } finally {
      running = false;
      Runnable hook = afterRunning;
      if (hook != null) {
        hook.run();
      }
      if (done) {
        callOver();
      }
    }
  }

  /**
   * The live attempt, connected by {@code connect()} alone, begins with the engine before it sends:
   * its rate-limit permit (maybe a wait), its breaker permit, its number. Throws what ends the call
   * (the breaker open, no permit, a cancel), after closing the attempt's socket, which the
   * application's {@code disconnect()} no longer reaches.
   */
  private void beginLive() throws IOException {
    if (live == null || liveBegun) {
      return;
    }
    try {
      attempt = begin(); // 1: the template's, whose attempt header says so
    } catch (IOException | RuntimeException e) {
      HttpURLConnection c = live;
      live = null;
      letGo(c);
      throw e;
    }
    liveBegun = true;
  }

  /**
   * The body step connected an attempt that failed before its body opened: a setter from another
   * thread is refused from here, as the JDK's connected connection refuses it ({@link
   * #mayStillConnectForBody}). On a failure's way only: a monitor for the retry.
   */
  private void bodyConnected() {
    synchronized (request) {
      bodyStepConnected = true;
    }
  }

  private static final String UNKNOWN_MODE =
      "a streaming mode set from another thread as the body opened left its mode unknown, so no"
          + " copy was kept";

  /** The live attempt's body stream, seen through the body copy. */
  private OutputStream openBody(HttpURLConnection c) throws IOException {
    boolean modeUnknown = false;
    int setters = bodySetters;
    if (setters != 0) {
      // Another thread's setter came during this body step (rare): one under way ends first, so
      // that a streaming mode c took while it connected is recorded before the copy below reads
      // it, and c's getOutputStream() sees it. Any later one finds c connected and is refused by
      // it, as the JDK's. Without such a setter: no monitor, no write (an ordinary POST).
      synchronized (request) {
        bodyStepConnected = true;
      }
    }
    OutputStream jdk = c.getOutputStream();
    if (setters == 0 && bodySetters != 0) {
      // A setter came between the read above and the JDK's connect end: the JDK's plainConnect()
      // lets its lock go before plainConnect0() sets `connected` last, without a lock, so the
      // setter could still find c unconnected and set a streaming mode that c's getOutputStream()
      // may or may not have read. Read again after it (its lock a fence); rare, so a monitor here
      // alone: the setter has then ended, its mode recorded, and the record is made to match the
      // stream c returned, which the copy below and any retry go by.
      //
      // The stream tells the mode only when it is the JDK's own: its buffer, or its streamed body
      // with the one fixed length the record holds. An application's stream (a wrapper of the
      // JDK's, a class of its own) or a fixed length changed in this window (the JDK's body may
      // hold the old one) leaves the mode unknown: the body is passed on with no copy and no
      // length of the agent's, never sent again. Before, a wrapper of the JDK's buffer kept the
      // record's fixed length for the retry (which failed "too many bytes written"), a class of
      // the application's named *PosterOutputStream was taken as the JDK's buffer, and a changed
      // length was held against the body and given to the retry.
      synchronized (request) {
        bodyStepConnected = true;
        if (isJdkClass(jdk, "sun.net.www.http.PosterOutputStream")) {
          request.recordBuffered();
        } else if (bodyLengthChanged
            || !isJdkClass(
                jdk, "sun.net.www.protocol.http.HttpURLConnection$StreamingOutputStream")) {
          modeUnknown = true;
        }
      }
    }
    request.fixMethod(c.getRequestMethod()); // after the JDK's GET -> POST turn
    RequestBody.WriteFailed failed = (e, wrongLength) -> bodyWriteFailed(c, e, wrongLength);
    RequestBody b =
        modeUnknown
            ? RequestBody.unheld(jdk, failed, UNKNOWN_MODE)
            : RequestBody.of(
                jdk, request.fixedLength(), call.policy().retry().replayBodyLimit(), failed);
    request.body(b);
    return b.stream();
  }

  /**
   * Whether {@code jdk} is of the JDK's class {@code name} (the boot loader's, which no application
   * class shares): its buffered body ({@code sun.net.www.http.PosterOutputStream}, sent with the
   * response's request) or its streamed one, the same in JDK 11-25; the connection tells its
   * streaming mode by nothing else.
   */
  private static boolean isJdkClass(OutputStream jdk, String name) {
    Class<?> k = jdk.getClass();
    // The name first: getClassLoader() is a permission check under a SecurityManager (JDK 11-23),
    // asked only of the JDK's own class, never of every application stream.
    return k.getName().equals(name) && k.getClassLoader() == null;
  }

  /**
   * The application's write to (or close of) the streamed body of attempt {@code c} failed: the
   * application hears of it from its write, as without the agent, and will not ask for a response
   * (the JDK refuses it), so the call ends here as that attempt's failure (never retried: the body
   * is no longer held). Without this the engine never heard of it: no log line or metrics, the
   * breaker's permit (a half-open trial) held until the breaker gave up on it, the call's span
   * never ended. A body of the wrong length ({@code wrongLength}) is the application's own mistake,
   * which the JDK refuses: ended as the application's, as its disconnect() is, not as the host's
   * failure.
   */
  private void bodyWriteFailed(HttpURLConnection c, Throwable e, boolean wrongLength) {
    lock.lock();
    try {
      if (done || live != c) {
        return;
      }
      live = null;
      current = c;
      done = true;
      try {
        steps.countResends(call, liveRepeats, c);
        if (disconnected || wrongLength || call.onFailure(e).retry()) {
          // The application broke its own write; or a retry, which cannot happen without the body:
          // the call is never left open.
          if (wrongLength && !disconnected) {
            applicationsMistake(e);
          } else {
            call.onAbandoned();
          }
        }
      } catch (RuntimeException bug) {
        call.onAbandoned(); // the application's own exception goes on as it is
      }
      callOver();
    } finally {
      lock.unlock();
      released();
    }
  }

  /**
   * The call ends in the attempt under way as the application's mistake (a fixed length it broke),
   * with {@code failure}, as {@link dev.retryagent.engine.RetryCall#applicationFailed} ends one of
   * OkHttp's or java.net.http's, its give-up saying it was the application's failure, not a cancel.
   * Its rate-limit permit follows the rule at {@link
   * dev.retryagent.engine.RetryCall#endedByApplication}: a body short of its fixed length is cut
   * (the JDK closes the socket), so the attempt counts as not sent and its permit (and its retry,
   * if one) go back, not only the breaker's permit (else the host's next call found the bucket
   * short of the permit the application's broken request took); a body written to its whole length
   * and then more (refused, unsent) is a whole request, which the JDK sends: the permit stays
   * spent.
   */
  private void applicationsMistake(Throwable failure) {
    if (request.shortOfFixedLength()) {
      call.attemptNotSent();
    }
    call.endedByApplication(failure);
  }

  /**
   * An attempt failed before the response: the engine decides; throws when the call is over.
   *
   * @param status the status the server answered an {@code Expect: 100-continue} with instead of
   *     100 ({@link #rejectedExpectation}), which the engine judges as that answer; or -1
   */
  private void retryAfterEarlyFailure(HttpURLConnection c, Throwable e, int status)
      throws IOException {
    steps.countResends(call, liveRepeats, c);
    if (cancelled) {
      // The application's disconnect() broke the step: its cancel, not the host's failure.
      call.onAbandoned();
      if (c != null) {
        current = c;
      }
      done = true;
      throw Connections.rethrow(e);
    }
    Decision d;
    try {
      // No Retry-After for a rejection: the JDK 17 reads headers with a request of its own.
      d = status >= 0 ? call.onResponse(status, null) : call.onFailure(e);
    } catch (RuntimeException bug) {
      call.onAbandoned(); // never lose the application's own exception because of our bug
      d = null;
    }
    if (d != null && d.retry() && Thread.currentThread().isInterrupted()) {
      // As in respond(): no retry, the failure the application has without the agent, the flag
      // still set.
      call.retryForgone(status >= 0 ? null : e);
      d = null;
    }
    if (d == null || !d.retry()) {
      if (d != null && d.error() != null) {
        d.error().addSuppressed(e);
        if (c != null) {
          // The application's disconnect() no longer reaches it (a handshake that timed out
          // leaves the JDK's socket open).
          letGo(c);
        }
        throw end(d.error());
      }
      // The application sees the failure from the method it called, and its connection then
      // answers as the JDK's does after that failure.
      if (c != null) {
        current = c;
      }
      done = true;
      throw Connections.rethrow(e);
    }
    if (c != null) {
      letGo(c);
    }
    waitToRetry(d.delayNanos());
    if (call.retryTooLate()) {
      throw late();
    }
  }

  /**
   * Completes the call once: the live attempt's response, then whole attempts while the engine
   * retries. Never throws: the outcome is left in {@link #current} and {@link #unseen}.
   */
  void finish(int seen) {
    stepBegins(seen);
    if (done || jdkRefusesResponse(current)) {
      // A refusal is the JDK's answer, asked of the connection in use: the call does not start,
      // or (after connect()) stays as it is, for the application's disconnect() to end.
      return;
    }
    if (!start()) {
      return;
    }
    step = RESPONSE;
    runs();
    try {
      respond();
    } catch (IOException e) {
      // the outcome is recorded: end() or the final attempt
    } finally {
      running = false;
      if (done) {
        callOver();
      }
    }
  }

  private void respond() throws IOException {
    while (true) {
      HttpURLConnection c = live;
      boolean whole = c == null;
      int repeats = whole ? 0 : liveRepeats;
      if (whole) {
        attempt = begin();
      } else {
        beginLive();
        // What the live attempt sends, before its step is judged (the JDK's resend): after
        // connect() alone, a GET with doOutput stays a GET.
        request.fixMethod(sentMethod(c));
      }
      live = null;
      Throwable failure = null;
      boolean reachedResponse = false;
      steps.begin(call, request);
      try {
        if (whole) {
          c = open(attempt);
          Connections.writeBody(c, request.body());
        }
        request.fixMethod(sentMethod(c)); // before a redirect can change it
        steps.reading(c);
        reachedResponse = true;
        c.getInputStream();
      } catch (IOException | RuntimeException e) {
        failure = e;
      } finally {
        repeats += steps.end();
      }
      int rejected = whole && !reachedResponse ? rejectedExpectation(c, failure) : -1;
      int status =
          reachedResponse && !(failure instanceof RuntimeException)
              ? Connections.statusOf(c)
              : rejected;
      steps.countResends(call, repeats, c);
      if (status >= 0) {
        connectedOnce = true;
        responded = reachedResponse ? c : responded;
      } else if (!connectedOnce && failure != null) {
        connectedOnce = Connections.connected(c); // before a release disconnects it
      }
      // The server answered a resent body's Expect with a final status: the JDK's connection
      // holds that answer (getResponseCode() without I/O), as it does for the application's own.
      boolean answered = reachedResponse || rejected >= 0;
      if (status < 0 && failure != null && (cancelled || request.shortOfFixedLength())) {
        // The application's disconnect() broke the attempt: its cancel (the JDK takes it as
        // deliberate and does not resend), not the host's failure; the permit goes back. Or it
        // asked for the response of a body shorter than the fixed length it declared, which the
        // JDK refuses: its own mistake, as bodyWriteFailed takes one.
        if (cancelled) {
          call.onAbandoned();
        } else {
          applicationsMistake(failure);
        }
        settle(c, failure, answered);
        return;
      }
      if (status < 0 && followedRedirect(c)) {
        // The JDK followed a redirect inside the attempt, then failed (its Location refused the
        // connection): the call's request reached the server, which may have acted on it.
        call.requestReachedServer();
      }
      Decision d;
      try {
        d =
            status >= 0
                ? call.onResponse(
                    status, rejected >= 0 ? null : retryAfter(c, !isRejection(failure)))
                : call.onFailure(failure);
      } catch (RuntimeException bug) {
        // Never lose a response because of our own bug.
        call.onAbandoned();
        settle(c, failure, answered);
        return;
      }
      if (!d.retry()) {
        if (d.error() != null) {
          if (failure != null) {
            d.error().addSuppressed(failure);
          }
          discard(c, status, failure);
          throw end(d.error());
        }
        settle(c, failure, answered);
        return;
      }
      if (Thread.currentThread().isInterrupted()) {
        // The caller interrupted the thread during the attempt, which the JDK's blocking I/O
        // finished anyway: without the agent the application has this outcome, the flag set; the
        // wait would throw at once and lose it (RetryCall.retryForgone).
        call.retryForgone(status >= 0 ? null : failure);
        settle(c, failure, answered);
        return;
      }
      // Near the deadline, or before a short wait on a call the rate limit governs, a response is
      // kept through the wait: one that ends late (the JVM held up), or a retry refused its
      // permit, ends the call with it. Otherwise released now, its connection serves others.
      boolean keep = status >= 0 && call.keepThroughWait(d.delayNanos());
      long delay = d.delayNanos();
      if (!keep) {
        if (status >= 0) {
          // No copy of a response is made: on a call the rate limit governs, the retry's permit is
          // reserved before its release, so that a refusal ends the call with it, as without the
          // agent; asked after the wait, it found the response gone and ended with the rate
          // limit's exception. Granted, the wait is the longer of the backoff and the permit's,
          // and begin() takes that permit.
          try {
            delay = call.reserveRetryPermit();
          } catch (RuntimeException | Error e) {
            // What the listeners let through (a broken JVM): the connection is released, as when
            // the kept response's permit throws, not left open with its body unread.
            discard(c, status, failure);
            throw e;
          }
          if (delay < 0) {
            settle(c, failure, answered); // as if the policy had not retried it
            return;
          }
        }
        discard(c, status, failure);
      }
      try {
        waitToRetry(delay);
      } catch (IOException | RuntimeException | Error e) {
        if (keep) {
          discard(c, status, failure);
        }
        throw e;
      }
      if (call.retryTooLate()) {
        if (keep) {
          settle(c, failure, answered); // as if the policy had not retried it
          return;
        }
        throw late();
      }
      if (keep) {
        try {
          // The retry's permit before the kept response goes: one refused ends the call with the
          // response, as if not retried, where released it could not. A wait for it short enough
          // to keep a response through (keepThroughWait) is waited here, the response still held:
          // a 429 pause of the host that begins during it may refuse the retry after all
          // (reservePermitAfterWait), and the call ended with the rate limit's exception in place
          // of this response. A longer one is waited in begin(), the response released.
          long wait = call.reservePermit();
          while (wait > 0 && call.keepThroughWait(wait)) {
            waitToRetry(wait);
            wait = call.reservePermitAfterWait();
          }
          permitWait = wait;
        } catch (RateLimitedException e) {
          if (call.permitRefusedRetry()) {
            settle(c, failure, answered);
            return;
          }
          discard(c, status, failure);
          throw end(e);
        } catch (IOException | RuntimeException | Error e) {
          discard(c, status, failure); // the wait's cancel or interrupt
          throw e;
        }
        discard(c, status, failure);
      }
    }
  }

  /**
   * Whether the JDK followed a redirect on {@code c}: its {@code getURL()} is the redirect's {@code
   * Location} from the moment it follows it, before it connects there, a new {@code URL} the JDK
   * parsed from the header (JDK 17 and 25: {@code url = locUrl}). Compared by identity, not as
   * text: a redirect to the very URL of the request (a 307 to itself, then a refused connection)
   * has the same text, and was taken for a request never sent. Every attempt's connection is opened
   * on {@link UrlRequest#url()} itself, which the JDK keeps until it follows a redirect; a handler
   * that gave the connection a copy would make a refused first connection read as sent (a retry too
   * few, never one too many). {@code URL.equals} would resolve host names.
   */
  private boolean followedRedirect(HttpURLConnection c) {
    URL now = c == null ? null : c.getURL();
    return now != null && now != request.url();
  }

  /**
   * The call ends after a retry's wait that ended past the deadline ({@link
   * dev.retryagent.engine.RetryCall#retryTooLate}), where the retry would have had no time left:
   * with the attempt's failure, or the engine's exception for a response released before the wait.
   */
  private IOException late() throws IOException {
    Throwable t = call.lateRetryFailure();
    if (!(t instanceof IOException)) {
      done = true;
      throw Connections.rethrow(t);
    }
    return end((IOException) t);
  }

  /**
   * Whether the JDK's {@code getInputStream()} of {@code c} refuses before it sends anything: the
   * application's own mistake (read in JDK 17 and 25), which gets the JDK's {@code
   * ProtocolException} from the connection itself, each time it asks, with nothing sent. Through
   * the engine it counted as the host's failure (the breaker opened on a host never asked), spent a
   * rate-limit permit and was logged as a give-up, where without the agent nothing happened.
   */
  private boolean jdkRefusesResponse(HttpURLConnection c) {
    // In a streaming mode the JDK opens the body itself when the application did not.
    return !c.getDoInput() || (request.streaming() && request.body() == null && jdkRefusesBody(c));
  }

  /** Whether the JDK's {@code getOutputStream()} of {@code c} refuses before it connects. */
  private boolean jdkRefusesBody(HttpURLConnection c) {
    return !c.getDoOutput()
        || ("TRACE".equals(c.getRequestMethod()) && "http".equals(request.scheme()));
  }

  /**
   * The status the server answered the request's {@code Expect: 100-continue} with, when that is
   * why {@code getOutputStream()} of {@code c} threw {@code failure}; else -1. In a streaming mode
   * the JDK sends the head, waits for {@code 100 Continue}, and on any other status throws {@code
   * ProtocolException("Server rejected operation")} (its only use of that message, in JDK 11-25)
   * and keeps the status for {@code getResponseCode()}, which answers it without I/O. The host
   * answered: that status is the attempt's outcome (a 417 or a 401 is not the host's failure, a 503
   * may be retried: nothing of the body was sent), where the JDK's exception counted as a transport
   * failure of the host. One case costs a request: a reply whose status line the JDK could not
   * parse leaves no status, and JDK 17's {@code getResponseCode()} then sends the request again, as
   * the application's own call would.
   */
  private int rejectedExpectation(HttpURLConnection c, Throwable failure) {
    if (c == null || !isRejection(failure)) {
      return -1;
    }
    try {
      return c.getResponseCode();
    } catch (IOException | RuntimeException e) {
      return -1;
    }
  }

  /**
   * Whether {@code failure} is the JDK's refusal of a streaming request's {@code Expect:
   * 100-continue} ({@link #rejectedExpectation}).
   */
  private boolean isRejection(Throwable failure) {
    return failure instanceof ProtocolException
        && "Server rejected operation".equals(failure.getMessage())
        && request.streaming();
  }

  /**
   * Every line of {@code c}'s {@code Retry-After} ({@code ResponseAccess#header}), where {@code
   * getHeaderField(name)} answers with the last. Each look-up (by name, by index, of the whole map)
   * asks the connection for its response again: for an error status that makes a new exception, and
   * after the JDK's rejection of a streaming request's {@code Expect: 100-continue} it sends the
   * request again, one request more than without the agent for each look-up after the first. So,
   * when {@code byNameFirst}, asked by name first and the map read only for a response that has the
   * header (nothing allocated for one without it); for a rejection ({@code byNameFirst} false), the
   * map alone: one look-up.
   */
  private static String retryAfter(HttpURLConnection c, boolean byNameFirst) {
    String last = byNameFirst ? c.getHeaderField("Retry-After") : null;
    if (byNameFirst && last == null) {
      return null;
    }
    String lines = null;
    for (java.util.Map.Entry<String, java.util.List<String>> e : c.getHeaderFields().entrySet()) {
      if (e.getKey() != null && e.getKey().equalsIgnoreCase("Retry-After")) {
        for (String value : e.getValue()) {
          lines = FieldLines.add(lines, value);
        }
      }
    }
    return lines == null ? last : lines;
  }

  /**
   * The method {@code c} sends when its response is asked for. In a streaming mode the JDK opens
   * the body itself when the application did not ({@code getInputStream()} calls its own {@code
   * getOutputStream()}), and that turns a GET with {@code doOutput} into a POST, as the
   * application's own {@code getOutputStream()} would: judged as a GET, that POST was retried.
   */
  private String sentMethod(HttpURLConnection c) {
    String m = c.getRequestMethod();
    return request.streaming() && c.getDoOutput() && "GET".equals(m) ? "POST" : m;
  }

  /**
   * The final attempt: the application's calls go to its connection, and the first response method
   * that throws throws its exception. An attempt that failed before the server answered (a fresh
   * connection that could not connect) is not handed over: asked again, the JDK would connect once
   * more, a request the engine would never see.
   *
   * <p>One whose resent body the server refused with a final status instead of {@code 100 Continue}
   * ({@code answered}) is handed over: the JDK's connection answers as it answers the application
   * after its own rejected body, {@code getResponseCode()} the status, the rejection's headers,
   * {@code getInputStream()} the rejection (read in JDK 17 and 25). Before, every response method
   * threw the rejection, where the application without the agent is answered the status.
   *
   * @param answered the attempt reached the response, or the server answered its Expect
   */
  private void settle(HttpURLConnection c, Throwable failure, boolean answered) {
    if (answered || failure == null) {
      current = c;
      unseen = failure;
    } else {
      current = noResponse(failure, c != null ? c : settingsOf(current));
      if (c != null) {
        // Nor can the application's disconnect() reach it: a body write that failed leaves the
        // JDK's socket open.
        letGo(c);
      }
    }
    done = true;
  }

  // ---- the engine's steps -------------------------------------------------------------------

  /** Starts the call at the first network step; false when the engine is off (all pass through). */
  private boolean start() {
    if (call == null) {
      endDropped();
      call = engine.newCall(request);
      if (call.passThrough()) {
        done = true; // every call goes to the template, as without the agent
        return false;
      }
      call.cancelledWhen(new Disconnected());
    }
    return !call.passThrough();
  }

  /**
   * The rate limit and the breaker, then a new attempt starts. Throws what ends the call.
   *
   * @return the attempt's number
   */
  private int begin() throws IOException {
    if (cancelled) {
      // Disconnected as its step began (runs()): the attempt neither asks for a permit nor
      // goes out, as after a disconnect during the wait for one.
      throw abandon(new SocketException("Socket closed"));
    }
    try {
      long wait = permitWait >= 0 ? permitWait : call.reservePermit();
      permitWait = -1;
      while (wait > 0) {
        waitToRetry(wait);
        // A 429 pause that began during the wait holds this attempt too.
        wait = call.reservePermitAfterWait();
      }
      call.acquireBreaker();
    } catch (IOException e) {
      if (call.permitRefusedRetry()) {
        // No permit for a retry: the call ends with the attempt before it, as if not retried, as
        // after a retry's wait that ended past the deadline (its response released: the engine's
        // exception, which says so).
        throw late();
      }
      throw end(e); // the engine ended the call
    }
    if (cancelled) {
      throw abandon(new SocketException("Socket closed"));
    }
    return call.startAttempt();
  }

  /**
   * Attempt {@code n}'s connection: the template first, later a fresh one configured as the
   * application configured the template.
   */
  private HttpURLConnection open(int n) throws IOException {
    HttpURLConnection c;
    if (!templateUsed) {
      // The first attempt is the template, already the connection in use: nothing is copied, so
      // no setter can be lost, and no monitor is taken on a call's ordinary path.
      templateUsed = true;
      c = template;
      prepare(c, n);
      current = c;
    } else {
      // Opened outside the settings' monitor: the transport is the library's public API (user
      // code in library mode), which may wait for a lock of the application's own that a thread
      // of the application holds while it calls one of the setters taking this monitor: held
      // here, the two waited for each other.
      c = opened();
      // Under the settings' monitor (ConnectionView#settings): a setter from another thread while
      // connect() retries reaches this attempt, copied or written to it, never the previous one
      // alone.
      synchronized (request) {
        request.applyTo(c, current instanceof NoResponse ? template : current);
        prepare(c, n);
        current = c;
      }
    }
    if (cancelled) {
      letGo(c); // disconnect() raced with the switch to this connection
    }
    return c;
  }

  /** A retry's connection, not yet configured: {@link UrlTransport#open}. */
  private HttpURLConnection opened() throws IOException {
    java.net.URLConnection opened = transport.open(request.url(), proxy);
    if (!(opened instanceof HttpURLConnection)) {
      throw new IOException("not an HttpURLConnection: " + opened.getClass().getName());
    }
    return (HttpURLConnection) opened;
  }

  /** The attempt header and the attempt's timeouts. */
  private void prepare(HttpURLConnection c, int attempt) {
    String header = call.policy().retry().attemptHeader();
    if (header != null) {
      attemptHeader = header;
      try {
        c.setRequestProperty(header, Integer.toString(attempt));
      } catch (IllegalStateException e) {
        // A step the JDK refused (a response without doInput, a body without doOutput) left the
        // template "connecting": it refuses request properties from then on, and sends without
        // the header what the application asks next, as it would without the agent.
      }
    }
    long timeout = call.attemptTimeoutNanos();
    if (timeout >= 0 || c != template) {
      int connect =
          Connections.attemptTimeout(
              request.connectTimeout(), "sun.net.client.defaultConnectTimeout", timeout);
      if (connect >= 0) {
        c.setConnectTimeout(connect);
      }
      int read =
          Connections.attemptTimeout(
              request.readTimeout(), "sun.net.client.defaultReadTimeout", timeout);
      if (read >= 0) {
        c.setReadTimeout(read);
      }
    }
  }

  /**
   * The agent's own disconnect of an attempt's connection that the application's {@code
   * disconnect()} no longer reaches: before a retry, or as the call ends with another outcome. It
   * never throws: a JDK disconnect that throws (a failing progress listener, a library's
   * connection) came out of the application's step in place of its outcome (the engine's exception,
   * the attempt's own failure, or a retry's response). Reported as the agent's own failure; the
   * application's own {@code disconnect()} still throws as the JDK's does ({@link #disconnect}).
   */
  private void letGo(HttpURLConnection c) {
    try {
      c.disconnect();
    } catch (RuntimeException e) {
      cleanUpFailed(e);
    }
  }

  /** {@link Connections#discard}, never throwing: as {@link #letGo}. */
  private void discard(HttpURLConnection c, int status, Throwable failure) {
    try {
      Connections.discard(c, status, failure);
    } catch (RuntimeException e) {
      cleanUpFailed(e);
    }
  }

  private void cleanUpFailed(RuntimeException e) {
    engine.internalError(
        "letting an attempt's connection go",
        e,
        "the call goes on; the application gets its own outcome");
  }

  /** Waits {@code nanos} before the next attempt; {@code disconnect()} or an interrupt ends it. */
  private void waitToRetry(long nanos) throws IOException {
    try {
      long left = nanos;
      while (left > 0 && !cancelled) {
        long slice = Math.min(left, CANCEL_POLL_NANOS);
        engine.sleeper().sleep(slice);
        left -= slice;
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      // The target only, as the agent's other exceptions name it: the application logs this
      // message, and a path may hold a session's parameter or a segment redact.pathSegments masks.
      InterruptedIOException ie =
          new InterruptedIOException(
              "retry-agent: interrupted while waiting to retry "
                  + request.method()
                  + " "
                  + request.target());
      ie.initCause(e);
      throw abandon(ie);
    }
    if (cancelled) {
      // What a thread reading the response sees when another one disconnects the connection.
      throw abandon(new SocketException("Socket closed"));
    }
  }

  private IOException abandon(IOException e) {
    call.onAbandoned();
    return end(e);
  }

  /** The call ended without a connection the application may ask: it gets {@code e}. */
  private IOException end(IOException e) {
    current = noResponse(e, settingsOf(current));
    done = true;
    return e;
  }

  /**
   * The connection the application's calls go to once the call ended with {@code failure} and no
   * connection to answer; {@code settings} has the request's settings. Its method is the one the
   * JDK's connection has after the step that failed: the JDK turns a GET with {@code doOutput} into
   * a POST as it opens the body, and in a streaming mode as it asks the response (it opens the body
   * itself), before it connects; a call the engine refused there never reached the JDK's step, and
   * the connection answered GET where the JDK's answers POST.
   */
  private NoResponse noResponse(Throwable failure, HttpURLConnection settings) {
    String m = settings.getRequestMethod();
    if ("GET".equals(m)
        && settings.getDoOutput()
        && (step == BODY || (step == RESPONSE && request.streaming()))) {
      m = "POST";
    }
    return new NoResponse(
        request.url(), failure, settings, m, request, connectedOnce, settings == responded);
  }

  /** The connection with the request's settings: {@code c}, or the one a failed call kept. */
  private HttpURLConnection settingsOf(HttpURLConnection c) {
    return c instanceof NoResponse ? ((NoResponse) c).settings() : c;
  }

  // ---- what the facades ask -------------------------------------------------------------------

  /** The final attempt's own exception, once: the first response method that throws gets it. */
  Throwable takeUnseen() {
    Throwable t = unseen;
    unseen = null;
    return t;
  }

  /**
   * How many {@code disconnect()} calls so far: read by the application's step that may run the
   * call before it takes the lock, for {@link #stepBegins}.
   */
  int disconnectCount() {
    return disconnects;
  }

  /**
   * The application's step that may run the call took the lock (under it); {@code seen}: the {@link
   * #disconnectCount} it read before taking it. Not the count read here: a disconnect counted
   * between the step taking the lock and this read found the lock held (no end) and the call not
   * running (no cancel), and the call then ran as if it had come before the step.
   */
  private void stepBegins(int seen) {
    Runnable hook = atStepBegins;
    if (hook != null) {
      hook.run();
    }
    applyTimeouts(); // a setter that returned before this step is the step's configuration
    disconnectsAtStep = seen;
    if (pending && disconnects == seen) {
      // A disconnect counted before the step, through its JDK disconnect, found the lock held (a
      // setter, another thread's step): it is taken as made before this step, as it would have
      // been had it got the lock (the JDK's no-op before connect(), else the call ends). One
      // counted since is this step's cancel ({@link #runs}).
      pending = false;
      abandonLive();
    }
  }

  /** Test only: run as a step that took the lock begins. Null outside the tests. */
  static volatile Runnable atStepBegins;

  /**
   * The call runs from here: a {@code disconnect()} now cancels it. One made since its step took
   * the lock ({@link #stepBegins}) cancels it too: the application gave the call up as it started,
   * from another thread, and {@link #disconnect} did not see it running (nor could it end it: the
   * step holds the lock). Before, the call went on unaware, and a retry sent the request again
   * after the application had disconnected. Either the disconnect sees {@link #running} or this
   * sees its count (both volatile, each written before the other is read).
   */
  private void runs() {
    Runnable hook = beforeRunning;
    if (hook != null) {
      hook.run();
    }
    running = true;
    // A disconnect under way (its JDK disconnect may yet close this attempt's socket), or one that
    // found the lock held since the step began, is this call's cancel too.
    int counted = disconnects;
    if (counted != disconnectsAtStep || counted != disconnectsDone || pending) {
      cancelled = true;
    }
  }

  /** Test only: run as a step is about to mark the call running. Null outside the tests. */
  static volatile Runnable beforeRunning;

  /**
   * Test only: run once {@code connect()} or {@code getOutputStream()} no longer marks the call
   * running, its step still holding the lock. Null outside the tests.
   */
  static volatile Runnable afterRunning;

  /**
   * The application's step ({@code connect()}, {@code getOutputStream()}) released the lock: a
   * {@code disconnect()} counted since it began ({@link #stepBegins}) that found the call no longer
   * running ends it here, as one between the steps does ({@link #abandonLive}). That disconnect
   * could not end it: the step still held the lock (its {@code tryLock} failed). Before, the call
   * stayed open and the next step ran it through the engine: the JDK's connection, whose socket the
   * disconnect had closed, connected again and sent, and a 503 was retried after the application
   * had given the call up. Checked after the lock is released, not before: a disconnect counted
   * after a check made under the lock could still find it held; one counted after this read finds
   * it free (the application's next step comes on this thread, after this). Its own tryLock failing
   * here means that disconnect holds the lock and ends the call itself. {@link #disconnected},
   * written after the count, spares the lock on the way of a call never disconnected.
   */
  void stepEnded() {
    Runnable hook = atStepEnded;
    if (hook != null) {
      hook.run();
    }
    if (disconnected && lock.tryLock()) {
      try {
        if (disconnects != disconnectsAtStep && !running) {
          abandonLive();
        }
      } finally {
        lock.unlock();
      }
    }
    released();
  }

  /**
   * Test only: run as a step that released the lock begins {@link #stepEnded}. Null outside the
   * tests.
   */
  static volatile Runnable atStepEnded;

  /**
   * The lock was released (by a setter, a step, a disconnect): a {@code disconnect()} that found it
   * held ({@link #pending}) ends the call here as it would have with the lock ({@link
   * #abandonLive}: not while running, nor once done). Without this nobody ended it: a setter
   * between the steps (or another thread's) held the lock, the disconnect closed the socket {@code
   * connect()} opened, and the next step ran the call through the engine: the JDK's connection
   * connected again, sent, and a 503 was retried after the application had given the call up. The
   * disconnect sets the mark before it tries the lock; this reads it after the release: either it
   * gets the lock or this sees the mark. A release inside an outer hold of this thread leaves it to
   * that one's release. So too a timeout set while the lock was held ({@link
   * #timeoutSetMeanwhile}), written to the connection in use. A call never disconnected, its
   * timeouts set with the lock, reads three volatile fields.
   */
  void released() {
    while ((pending || connectTimeoutUnapplied || readTimeoutUnapplied)
        && !lock.isHeldByCurrentThread()
        && lock.tryLock()) {
      try {
        if (pending) {
          pending = false;
          abandonLive();
        }
        applyTimeouts();
      } finally {
        lock.unlock();
      }
    }
  }

  /**
   * {@code setConnectTimeout} ({@code connect}) or {@code setReadTimeout} found the lock held
   * (another thread's call running, for as long as it runs): as the JDK's setter, a field write, it
   * returns at once. The value is recorded, so the getter answers it and the call's later attempts
   * are prepared with it ({@link #prepare}), and written to the connection in use by the next
   * holder of the lock, on its release or as a step begins ({@link #applyTimeouts}), as if the
   * setter had waited for it: the running attempt keeps its own, as the JDK's running socket keeps
   * the timeout it connected with. A negative value gets the JDK's own refusal, from the JDK's
   * connection (its check comes before its write). The mark is set before the lock is tried again:
   * either that succeeds or the holder's release sees the mark.
   */
  void timeoutSetMeanwhile(boolean connect, int millis) {
    if (millis < 0) {
      if (connect) {
        template.setConnectTimeout(millis); // throws: "timeouts can't be negative"
      } else {
        template.setReadTimeout(millis);
      }
    }
    if (connect) {
      request.connectTimeout(millis);
      connectTimeoutUnapplied = true;
    } else {
      request.readTimeout(millis);
      readTimeoutUnapplied = true;
    }
    released();
  }

  /**
   * Under the lock: writes a timeout set meanwhile ({@link #timeoutSetMeanwhile}) to the connection
   * in use, as the setter would have with the lock. Never throws: it runs in another of the
   * application's calls.
   */
  private void applyTimeouts() {
    try {
      if (connectTimeoutUnapplied) {
        connectTimeoutUnapplied = false;
        current.setConnectTimeout(Math.max(0, request.connectTimeout()));
      }
      if (readTimeoutUnapplied) {
        readTimeoutUnapplied = false;
        current.setReadTimeout(Math.max(0, request.readTimeout()));
      }
    } catch (RuntimeException e) {
      // a value the connection in use refuses: the JDK's own refusal came from the setter
    }
  }

  /**
   * {@code disconnect()}: while the call runs, it is cancelled (a wait ends, no further attempt
   * starts); the connection in use is disconnected as the JDK's would be. Between the application's
   * steps (after {@code connect()} or the body, before the response) it ends the call ({@link
   * #abandonLive}).
   */
  void disconnect() {
    DISCONNECTS.incrementAndGet(this); // before running is read (runs)
    disconnected = true; // after the count: a step that sees it sees the count (stepEnded)
    if (running) {
      cancelled = true;
    }
    try {
      current.disconnect();
    } finally {
      // Also when the JDK's disconnect() threw (a progress listener's failure, a stream's close):
      // the application gets that exception, as without the agent, and the disconnect still
      // counts as made. Before, its count was never marked done and no mark was set: the call
      // between the steps stayed open, and every later step of the connection took it for a
      // disconnect still under way (runs) and cancelled its call, nothing sent, where the JDK's
      // connection sends.
      DISCONNECTS_DONE.incrementAndGet(this);
      // Not under the lock when another thread makes a step: that step hears of it as a cancel,
      // or (a thread about to start one) finds the connection disconnected, as the JDK's would.
      // The lock held (a setter, a step about to run or just run): its holder ends the call on
      // release.
      pending = true;
      if (running) {
        cancelled = true; // a step marked it running after the first look: one of the two sees it
      }
      released(); // never throws: the JDK's exception, if any, is the one the application gets
    }
  }

  /**
   * The application disconnected the live attempt between its steps: it will not ask for that
   * response, so the call ends here, cancelled (no retry; the breaker's permit, a half-open trial
   * among them, goes back without an outcome), and after a buffered body the JDK sends only with
   * the response, as an attempt that sent nothing (its retry goes back to the budget). Without this
   * the call never ended: the permit stayed held (a half-open breaker refused the host's calls
   * until its trial timed out, then counted it failed), the log and metrics never heard, the call's
   * span never ended. The connection then answers as the JDK's does after a disconnect: a later
   * response method connects again and sends the request, as without the agent, not through the
   * engine.
   *
   * <p>After {@code connect()} alone (the attempt not begun, {@link #liveBegun}) nothing was sent
   * and the engine was asked for nothing: the application changed its mind before the call started,
   * so it ends as one that never happened, as a connection connected and then dropped does. Only
   * its context ends (made with {@code connect()}, whose step it covered). Ended as cancelled, it
   * was logged as given up, written as a dead letter and counted as a failed call.
   */
  private void abandonLive() {
    HttpURLConnection c = live;
    if (running || done || c == null) {
      return;
    }
    live = null;
    current = c;
    done = true;
    try {
      if (!liveBegun) {
        callOver();
        return;
      }
      try {
        steps.countResends(call, liveRepeats, c);
        if (request.body() == null || !request.streaming()) {
          call.attemptNotSent(); // nothing of the request reached the socket
        }
      } finally {
        call.onAbandoned();
        callOver();
      }
    } catch (RuntimeException bug) {
      // Ours (a transport's look at the JDK's connection, the call's context), never the
      // application's: this runs in a setter, a step, a disconnect() or a look at dropped
      // connections, none of which throws it on the JDK's connection. Before, it came out of the
      // application's setReadTimeout(), disconnect() or getResponseCode(). The connection counts
      // the call over (done) either way, and the engine was told in the finally above unless
      // that telling is what failed.
      engine.internalError(
          "ending a call the application disconnected or dropped",
          bug,
          "the call ends; the application's connection goes on as the JDK's");
    }
  }

  /** The call is over: its context ends, once, and it is no longer watched. */
  private void callOver() {
    steps.callOver(call);
    Watch w = watch;
    if (w != null) {
      watch = null;
      WATCHED.remove(w);
      w.clear();
    }
  }

  /**
   * {@code connect()} or {@code getOutputStream()} of {@code view} returned with the call open
   * between the application's steps: until it is over, the call is watched through {@code view},
   * which only the application's connection holds. An application that lets that connection go
   * without a response or {@code disconnect()} (its own code failed between its body and its
   * response) would otherwise hold the attempt's breaker permit (a half-open trial, until the
   * breaker gives up on it and counts it failed) and never end the call: no log line, end event or
   * call span. Under the lock.
   */
  void watch(Object view) {
    if (watch == null && live != null && !done && call != null) {
      watch = new Watch(view, this);
      WATCHED.add(watch);
      lookWhileWatched();
    }
  }

  /**
   * Makes sure a look at the queue is scheduled while a call is watched: without it a connection
   * dropped in an application that makes no further call held its call open for good (its breaker
   * permit, a half-open trial among them; a buffered body's rate-limit permit; its call span). On
   * the shared scheduler's threads ({@link Scheduler#shared()}): no thread of the agent's per
   * connection, and none at all while no call is watched. A look that finds calls still watched
   * schedules the next.
   */
  private static void lookWhileWatched() {
    if (!LOOKING.get() && LOOKING.compareAndSet(false, true)) {
      boolean scheduled = false;
      try {
        Scheduler forTests = lookSchedulerForTests;
        (forTests != null ? forTests : Scheduler.shared()).schedule(LOOK, LOOK_NANOS);
        scheduled = true;
      } catch (RuntimeException refused) {
        // Not the application's failure: its call goes on, and the next watch tries again.
      } finally {
        if (!scheduled) {
          LOOKING.set(false); // else no look would ever be scheduled again
        }
      }
    }
  }

  /** One look: {@link #lookWhileWatched}. A class, not a lambda: no linkage on a call's path. */
  private static final class Look implements Runnable {
    @Override
    public void run() {
      try {
        ENDING.lock();
        try {
          lookEnding = true; // before the queue is polled: endDropped reads it after its poll
          endQueued();
        } finally {
          lookEnding = false;
          ENDING.unlock();
        }
      } finally {
        LOOKING.set(false);
        // After the flag: a watch added since is seen here, or sees the flag down and schedules.
        // Not WATCHED.isEmpty(): it sums counts other threads change as it reads them, and could
        // answer empty while a dropped connection's watch stays (another added on one thread and
        // removed on another meanwhile): its call then stayed open, its breaker permit held, until
        // the application's next HttpURLConnection call. The iterator finds a watch that is there.
        if (WATCHED.iterator().hasNext()) {
          lookWhileWatched();
        }
      }
    }
  }

  /** Whether a look is scheduled, for a test: {@link #LOOKING}. */
  static boolean looking() {
    return LOOKING.get();
  }

  /** The watch of the open call, for a test to queue it as the collector does; or null. */
  Reference<?> watched() {
    return watch;
  }

  /**
   * Ends the call of each connection the collector found dropped ({@link #watch}), as the
   * application's {@code disconnect()} between its steps does ({@link #abandonLive}): cancelled,
   * the breaker's permit back without an outcome, the log, metrics and call span told; after {@code
   * connect()} alone, only its context ends. The JDK's connection is left as the application left
   * it (it may still write to the body stream it holds): its socket is the JDK's to close. Called
   * as each call starts, on its thread, and by each look ({@link #lookWhileWatched}); the queue
   * hands each out once. A call that starts while a look ends a dropped one (a half-open breaker's
   * trial) waits for its permit to be back, as when the call itself ended it, for at most a second
   * ({@link #awaitLook}). With nothing dropped and no look ending one, as nearly always, a call
   * takes no lock here: an empty queue's poll is a volatile read, and every HttpURLConnection call
   * of the JVM starts through this method.
   */
  static void endDropped() {
    Reference<?> first = DROPPED.poll();
    if (first != null) {
      // Handed out once by the queue, so ended here alone; the look may be ending others.
      end((Watch) first);
      endQueued();
    }
    if (lookEnding) {
      awaitLook();
    }
  }

  /**
   * Waits for the look ending what it polled, at most {@link #LOOK_WAIT_NANOS}. The look tells the
   * listeners while it holds {@link #ENDING}: one slow, or waiting for an HttpURLConnection call of
   * another thread, must not hold every call of the JVM, nor deadlock with it.
   */
  private static void awaitLook() {
    try {
      if (ENDING.tryLock(LOOK_WAIT_NANOS, TimeUnit.NANOSECONDS)) {
        ENDING.unlock();
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt(); // the application's: its call goes on, and sees it
    }
  }

  /** Ends what the queue holds. */
  private static void endQueued() {
    for (Reference<?> r; (r = DROPPED.poll()) != null; ) {
      end((Watch) r);
    }
  }

  private static void end(Watch w) {
    WATCHED.remove(w);
    w.exchange.dropped(w);
  }

  private void dropped(Watch w) {
    if (!lock.tryLock()) {
      return; // a step of it in progress: the connection was not dropped after all
    }
    try {
      if (watch == w) {
        abandonLive(); // never throws: its own failure is said, not the call's that found it
      }
    } finally {
      lock.unlock();
      released();
    }
  }

  /** A weak reference to an application's connection whose call is open: {@link #watch}. */
  private static final class Watch extends WeakReference<Object> {
    final UrlExchange exchange;

    Watch(Object view, UrlExchange exchange) {
      super(view, DROPPED);
      this.exchange = exchange;
    }
  }

  /** {@code toString()}: the JDK connection's, as without the agent. */
  String describe() {
    HttpURLConnection c = current;
    return (c instanceof NoResponse ? template : c).toString();
  }

  /** The caller gave up: the application disconnected while the call ran. */
  private final class Disconnected implements BooleanSupplier {
    @Override
    public boolean getAsBoolean() {
      return cancelled;
    }
  }
}
