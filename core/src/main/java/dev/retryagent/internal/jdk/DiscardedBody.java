package dev.retryagent.internal.jdk;

import dev.retryagent.engine.ResponseAccess;
import dev.retryagent.engine.RetryCall;
import dev.retryagent.engine.Scheduler;
import dev.retryagent.internal.Discards;
import java.net.http.HttpResponse;
import java.net.http.HttpResponse.BodySubscriber;
import java.nio.ByteBuffer;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Executor;
import java.util.concurrent.Flow;

/**
 * The body of a response that will be retried: read and dropped, so that its connection serves
 * again (HTTP/1.1), up to {@link Discards#LIMIT} bytes; past them the subscription is cancelled,
 * which closes an HTTP/1.1 connection (resets an HTTP/2 stream), and the response is done. The
 * JDK's {@code BodySubscribers.replacing} read every byte before the response completed: a retry
 * waited for a 1 GB or endless error body.
 *
 * <p>For a retry (made with the response's {@code ResponseInfo}) it also keeps the first {@link
 * ResponseAccess#GIVE_BACK_LIMIT} bytes, read anyway: a body that ends within them completes the
 * response's {@code body()} with this, from which {@link GivenBack} gives the response to the
 * application's own handler if the retry's wait ends past the deadline (the call then ends as if
 * not retried). Held by the response, not by the call: nothing on a call that is not retried.
 * Otherwise it completes with null.
 *
 * <p>The JDK hands the response to the retry only once its body is complete, and java.net.http has
 * no read timeout: a body whose head had arrived but whose rest the server held kept the retry (and
 * the application's call) waiting for as long as the server held it, where without the agent an
 * application reading the body as a stream has the 503 at its head. So the body is waited for only
 * as long as the retry waits anyway ({@link #grace}: its backoff, within bounds); a body not
 * complete by then is let go as one past the limit is (its subscription cancelled, the response
 * done with nothing kept: it cannot be given back whole).
 */
final class DiscardedBody<T> implements BodySubscriber<T>, Runnable {
  /** The least a body is waited for, for a retry with no backoff: one already on its way. */
  static final long MIN_GRACE_NANOS = Discards.GRACE_NANOS;

  /** The most, for a long backoff, which the retry waits again once the response is done. */
  static final long MAX_GRACE_NANOS = 2_000_000_000L;

  /**
   * Where graces are scheduled when not on {@link Scheduler#shared()}: set by tests only, to end a
   * grace by hand (no real wait); null otherwise. Read once per retried response, as {@code
   * Discards.Grace.schedulerForTests} is.
   */
  static volatile Scheduler schedulerForTests;

  private final CompletableFuture<T> body = new CompletableFuture<>();
  private final HttpResponse.ResponseInfo info; // null: nothing kept (the call ends, not retried)
  private final HttpResponse.BodyHandler<T> handler; // the caller's, for a give-back
  // The call's client, whose executor a give-back and a hand-over by the grace run on; let go by
  // giveBack, as the kept bytes are: the response given back holds this, and must hold neither
  // the client nor the copy.
  private JdkTransport transport;
  private Flow.Subscription subscription; // set by onSubscribe, before anything else is called
  private long read;
  private byte[] kept; // the bytes read, while within the limit; null before the first, or past it
  private final long graceNanos; // how long the body is waited for from its head (grace)
  // The request's body copy (null: none of ours), fixed for the retry as this response stops being
  // one that can be given back (fixBody). Let go (guarded by this) once the response is whole
  // within the give-back limit (it can be given back: nothing to fix here), and by giveBack: a
  // response the application keeps must hold neither the copy (up to the replay limit) nor,
  // through it, the call. A response that cannot be given back is dropped with this.
  private ReplayableBody requestBody;
  // The call, asked to end with this response when the copy is found not whole as the response
  // would be let go (endsWithThis); null: never (no teed copy not fixed yet, or nothing kept to
  // give).
  private final RetryCall call;
  // The call this response was decided for a retry of (null: none), told when the body fails
  // after the application's shutdownNow() (onError).
  private final RetryCall retried;
  // Set once the call ends with this response after all: the body goes on to the caller's handler
  // (onNext, past the limit). Volatile: read by the JDK's signals without the lock; set under it.
  private volatile Relay relay;
  // The step that passes the limit is deciding whether the call ends with this response (guarded
  // by this): the grace, firing meanwhile, leaves the response to it (graceDue), rather than let it
  // go as the call may end with it.
  private boolean deciding;
  private boolean graceDue;
  // Set once, by the first of the body's end, its failure, the limit and the grace: the others
  // then change nothing (the grace's task runs on our scheduler, beside the JDK's reads).
  private boolean done;

  /**
   * {@code info} null: nothing kept; else {@code handler} is the caller's and {@code transport} the
   * call's, for a give-back. {@code delayNanos}: the retry's backoff (0 for a call that ends).
   */
  DiscardedBody(
      HttpResponse.ResponseInfo info,
      HttpResponse.BodyHandler<T> handler,
      JdkTransport transport,
      long delayNanos) {
    this(info, handler, transport, delayNanos, null);
  }

  /**
   * As {@link #DiscardedBody(HttpResponse.ResponseInfo, HttpResponse.BodyHandler, JdkTransport,
   * long)}; {@code requestBody}: the call's copy of its request body (null: none), fixed for the
   * retry as this response stops being one that can be given back ({@link #fixBody}).
   */
  DiscardedBody(
      HttpResponse.ResponseInfo info,
      HttpResponse.BodyHandler<T> handler,
      JdkTransport transport,
      long delayNanos,
      ReplayableBody requestBody) {
    this(info, handler, transport, delayNanos, requestBody, null);
  }

  /**
   * As {@link #DiscardedBody(HttpResponse.ResponseInfo, HttpResponse.BodyHandler, JdkTransport,
   * long, ReplayableBody)}; {@code call}: the call, which ends with this response when the copy is
   * found not whole as the response would be let go ({@link #endsWithThis}); null: never.
   */
  DiscardedBody(
      HttpResponse.ResponseInfo info,
      HttpResponse.BodyHandler<T> handler,
      JdkTransport transport,
      long delayNanos,
      ReplayableBody requestBody,
      RetryCall call) {
    this.info = info;
    this.handler = handler;
    this.transport = transport;
    this.graceNanos = grace(delayNanos);
    this.requestBody = requestBody;
    this.retried = info != null ? call : null;
    // Only a teed copy can be found not whole (fixEarly false): a file is read again from disk,
    // so a response to a file-bodied request is never handed over and is read all at once.
    this.call =
        info != null && handler != null && requestBody != null && requestBody.canFailToFix()
            ? call
            : null;
  }

  /**
   * This retried response can no longer be given back (its body is past the give-back limit, or was
   * not complete within the grace): the request body's copy, whole now, is fixed for the retry here
   * ({@link ReplayableBody#fixEarly}), before the response is dropped. Checked only after the wait,
   * a source that failed during it (after its completion, breaking Flow's rules) left the retry
   * unmade with no response to end the call with: the caller got the engine's IOException where
   * without the agent it has the response (a 503's page over 8 KiB). Now the retry is sent from the
   * copy the host already got whole, and the failure after it is not the call's, as any once the
   * copy was fixed. A response that can be given back leaves the check after the wait, which ends
   * the call with it. False when the copy is not fixed (not whole, or not settled: {@link
   * ReplayableBody#fixEarly}); true when it is, or there is none. Never throws (fixEarly does not).
   */
  private boolean fixBody() {
    ReplayableBody b;
    synchronized (this) {
      // Kept: a copy not settled now may be by the grace after the limit, if it fires before the
      // body ends; a body that ends first leaves it to the check after the wait.
      b = requestBody;
    }
    // The body's own locks taken outside this one.
    return b == null || info == null || b.fixEarly();
  }

  /**
   * As the response would be let go, its copy was found not whole ({@link #fixBody} false): true
   * when the call ends with this response after all ({@link RetryCall#retryTooLate}, whose check of
   * the body refuses such a copy: given up as the body not replayable), which then goes on to the
   * caller's handler ({@link Relay}). False when the call goes on with the retry (a copy fixed
   * since). Never throws.
   */
  private boolean endsWithThis() {
    try {
      return call.retryTooLate();
    } catch (RuntimeException bug) {
      return false; // the retry goes on, as before
    }
  }

  /** The bytes kept so far, as the first buffer the caller's handler gets. Under the lock. */
  private List<ByteBuffer> keptSoFar() {
    List<ByteBuffer> first = new ArrayList<>();
    if (kept != null && read > 0) {
      first.add(ByteBuffer.wrap(kept, 0, (int) read));
    }
    return first;
  }

  /**
   * How long a retried body is waited for: the retry's backoff, which it waits anyway, at least
   * {@link #MIN_GRACE_NANOS} and at most {@link #MAX_GRACE_NANOS} (the backoff is waited again once
   * the response is done: a long one must not be waited twice in full).
   */
  static long grace(long delayNanos) {
    return Math.min(MAX_GRACE_NANOS, Math.max(MIN_GRACE_NANOS, delayNanos));
  }

  @Override
  public CompletionStage<T> getBody() {
    return body;
  }

  @Override
  public void onSubscribe(Flow.Subscription s) {
    subscription = s; // before the grace's task is handed to the scheduler, which publishes it
    // A task of our shared scheduler, which holds this (and so the client) no longer than the
    // grace; it finds the body done and does nothing when the body came in time. Not the JDK's
    // CompletableFuture.delayedExecutor: its one thread is made by the JVM's first user, whose
    // context class loader and inheritable thread-locals it keeps for good (a webapp's, when the
    // discard ran on the webapp's executor); ours inherit nothing (AgentThreads).
    try {
      Scheduler forTests = schedulerForTests;
      (forTests != null ? forTests : Scheduler.shared()).schedule(this, graceNanos);
    } catch (RuntimeException refused) {
      // No thread to be had (the JVM is ending): the body is waited for, as before the grace.
    }
    // Stepped while the call may still end with this response (endsWithThis): the rest then waits
    // for the caller's handler to ask for it, as without the agent; all at once otherwise, as
    // before.
    s.request(call != null ? 1 : Long.MAX_VALUE);
  }

  /** The grace is over: a body not complete by now is let go (not waited for, not given back). */
  @Override
  public void run() {
    List<ByteBuffer> first = null;
    synchronized (this) {
      if (done) {
        return;
      }
      if (deciding) {
        graceDue = true; // done by the step deciding, if the call goes on with the retry
        return;
      }
      if (call != null && read <= ResponseAccess.GIVE_BACK_LIMIT) {
        // The call may end with this response (a copy not whole): decided here, the JDK's signals
        // meanwhile waiting for it (awaitDecided), so that none is lost to the caller's handler.
        deciding = true;
        first = keptSoFar();
      } else {
        done = true;
        kept = null;
      }
    }
    if (first == null) {
      fixBody();
    } else {
      boolean ends = !fixBody() && endsWithThis();
      Relay r = null;
      JdkTransport t = null;
      synchronized (this) {
        deciding = false;
        notifyAll();
        done = true;
        kept = null;
        if (ends) {
          requestBody = null;
          t = transport;
          transport = null;
          r = new Relay(first, 1); // the one buffer asked of the JDK (stepped) and not had yet
          relay = r;
        }
      }
      if (r != null) {
        // On our scheduler's thread here: the handler and its subscriber go to the client's
        // executor, where the JDK runs them (and a give-back does: GivenBack), not on the shared
        // pool every client's retry waits run on, with the agent's thread context. The JDK's
        // signals meanwhile wait in the relay, which sends them once started.
        startOn(executorOf(t), r);
        return;
      }
    }
    subscription.cancel();
    body.complete(null);
  }

  /** {@code t}'s executor ({@link JdkTransport#executor}), or null when out of reach. */
  private static Executor executorOf(JdkTransport t) {
    try {
      return t == null ? null : t.executor();
    } catch (RuntimeException e) {
      return null; // run here, as before
    }
  }

  /** Starts {@code r} on {@code executor}; here when out of reach (null) or refused. */
  private void startOn(Executor executor, Relay r) {
    if (executor != null) {
      try {
        executor.execute(r);
        return;
      } catch (RuntimeException refused) {
        // shut down meanwhile: run here, as a give-back does
      }
    }
    r.start();
  }

  /**
   * Waits, under the lock, while the grace decides whether the call ends with this response ({@link
   * #run}): a signal of the JDK's then goes to the caller's handler, or is dropped, as decided.
   * Microseconds: the copy's check and the call's.
   */
  private void awaitDecided() {
    boolean interrupted = false;
    while (deciding) {
      try {
        wait();
      } catch (InterruptedException e) {
        interrupted = true;
      }
    }
    if (interrupted) {
      Thread.currentThread().interrupt();
    }
  }

  @Override
  public void onNext(List<ByteBuffer> buffers) {
    Relay r;
    boolean wasWithin;
    boolean within;
    boolean over; // past the discard's limit: the subscription is cancelled
    List<ByteBuffer> first = null; // the bytes read so far, as the limit is passed here
    synchronized (this) {
      awaitDecided();
      r = relay;
      if (r == null && done) {
        return;
      }
      wasWithin = read <= ResponseAccess.GIVE_BACK_LIMIT;
      within = wasWithin;
      over = false;
      if (r == null) {
        for (int i = 0; i < buffers.size(); i++) {
          ByteBuffer b = buffers.get(i);
          int n = b.remaining();
          if (info != null && read + n <= ResponseAccess.GIVE_BACK_LIMIT) {
            byte[] k = kept == null ? new byte[Math.max(n, 512)] : kept;
            if (read + n > k.length) {
              k = Arrays.copyOf(k, (int) Math.min(ResponseAccess.GIVE_BACK_LIMIT, (read + n) * 2));
            }
            b.get(k, (int) read, n);
            kept = k;
          } else {
            if (call != null && first == null && read <= ResponseAccess.GIVE_BACK_LIMIT) {
              // The first buffer past the limit: this one and the rest are not read from yet.
              first = keptSoFar();
              first.addAll(buffers.subList(i, buffers.size()));
              deciding = true; // the grace waits for this step's decision (run)
            }
            kept = null; // too long to give back: dropped, as before
          }
          read += n;
        }
        within = read <= ResponseAccess.GIVE_BACK_LIMIT;
        over = read > Discards.LIMIT;
        if (over) {
          done = true;
        }
      }
    }
    if (r != null) {
      r.onNext(buffers);
      return;
    }
    if (first != null) {
      // Past the limit, the response cannot be given back: a copy not whole now ends the call with
      // it (handed over), else the retry goes on and the rest is discarded, all at once.
      // Outside the lock: the body's locks and the call's are taken on other threads too.
      boolean ends = !fixBody() && endsWithThis();
      boolean graceFired;
      synchronized (this) {
        deciding = false;
        graceFired = graceDue;
        if (ends) {
          done = true;
          kept = null;
          requestBody = null;
          transport = null;
          r = new Relay(first, 0);
          relay = r;
        } else if (graceFired && !over) {
          done = true; // the grace fired as this was decided: the response is let go now
        }
      }
      if (r != null) {
        r.start();
        return;
      }
      if (!over && !graceFired) {
        subscription.request(Long.MAX_VALUE); // discarded from here on: all at once, as before
        return;
      }
      subscription.cancel();
      body.complete(null);
      return;
    }
    if (wasWithin && !within) {
      fixBody(); // outside the lock: the body's locks are taken on other threads too
    } else if (call != null && within && !over) {
      subscription.request(1); // stepped, within the limit
    }
    if (!over) {
      return;
    }
    subscription.cancel();
    body.complete(null);
  }

  @Override
  public void onError(Throwable failure) {
    Relay r;
    JdkTransport t;
    synchronized (this) {
      awaitDecided();
      r = relay;
      t = transport;
      if (r == null) {
        if (done) {
          return;
        }
        done = true;
        kept = null;
      }
    }
    if (r != null) {
      r.onError(failure);
      return;
    }
    if (retried != null && t != null && t.shutDownNow()) {
      // The application's shutdownNow() aborted the exchange while this body was read: the JDK
      // fails a call in progress so (IOException "shutdownNow"), and without the agent the caller
      // was reading this response. The retry decided on its head is not made: the call ends with
      // this failure. Before, the attempt went to the retry's wait, which saw the caller gone, and
      // the call failed with the JDK's refusal of a new call ("closed").
      retried.retryForgone(failure);
    }
    // The response can no longer be given back (its body failed): as past the limit, the copy is
    // fixed for the retry now, else a source failure during the wait left the call nothing.
    fixBody();
    body.completeExceptionally(failure);
  }

  @Override
  @SuppressWarnings("unchecked")
  public void onComplete() {
    Relay r;
    boolean whole;
    synchronized (this) {
      awaitDecided();
      r = relay;
      if (r != null) {
        whole = false;
      } else if (done) {
        return;
      } else {
        done = true;
        // Within the limit: kept whole (an empty body too), so the response can be given back.
        whole = info != null && read <= ResponseAccess.GIVE_BACK_LIMIT;
        if (whole) {
          requestBody = null; // can be given back: the check after the wait decides the body
        }
      }
    }
    if (r != null) {
      r.onComplete();
      return;
    }
    body.complete(whole ? (T) this : null);
  }

  /**
   * {@code response}, whose {@code body()} is this, to give back after a late wait: its head as the
   * application gets it, the body kept. The JDK completes the response with its body after {@link
   * #onComplete}, so what is read here was all written before.
   */
  GivenBack<T> giveBack(HttpResponse<T> response) {
    byte[] k;
    JdkTransport t;
    int n;
    synchronized (this) {
      k = kept;
      t = transport;
      kept = null;
      transport = null;
      requestBody = null;
      n = (int) read;
    }
    return new GivenBack<>(response, info, handler, t, k == null ? new byte[0] : k, n);
  }

  /**
   * The response's body going on to the caller's handler once the call ends with it (onNext, past
   * the limit; or the grace, within it, which starts this on the client's executor): the handler
   * applied to the response's head, its subscriber given the bytes read so far, then what the JDK
   * sends, as it asks for it (the JDK is asked only for what the subscriber asked for and has not
   * had), then the JDK's end of the body. Signals are serial: one running on some thread sends what
   * came meanwhile before it lets go. A signal of the subscriber's that throws ends the body: the
   * JDK's subscription cancelled, the subscriber told {@code onError} with it. The value the
   * subscriber completes its body with is the response's ({@link #getBody}).
   */
  private final class Relay implements Flow.Subscription, Runnable {
    private final ArrayDeque<List<ByteBuffer>> pending = new ArrayDeque<>();
    private BodySubscriber<T> subscriber; // set by start, before any signal is sent
    private long demand; // asked by the subscriber, not sent yet (Long.MAX_VALUE: unbounded)
    private long owed; // asked of the JDK, not had yet (Long.MAX_VALUE: unbounded)
    private boolean completed;
    private Throwable failed;
    private boolean ended; // onComplete or onError told, or the subscriber cancelled
    private boolean signalling; // a signal to the subscriber is running on some thread

    /** {@code first}: the bytes read so far; {@code owed}: what was asked of the JDK, not had. */
    Relay(List<ByteBuffer> first, long owed) {
      if (!first.isEmpty()) {
        pending.add(first);
      }
      this.owed = owed;
    }

    /** {@link #start}, on the client's executor. */
    @Override
    public void run() {
      start();
    }

    void start() {
      BodySubscriber<T> s;
      try {
        s = handler.apply(info);
      } catch (RuntimeException | Error e) {
        subscription.cancel(); // as the JDK fails the exchange with a handler's throw
        body.completeExceptionally(e);
        return;
      }
      s.getBody()
          .whenComplete(
              (v, e) -> {
                if (e == null) {
                  body.complete(v);
                } else {
                  body.completeExceptionally(e);
                }
              });
      synchronized (this) {
        subscriber = s;
        signalling = true;
      }
      try {
        s.onSubscribe(this);
      } catch (RuntimeException | Error e) {
        synchronized (this) {
          signalling = false;
        }
        fail(e);
        return;
      }
      synchronized (this) {
        signalling = false;
      }
      drain();
    }

    @Override
    public void request(long n) {
      if (n <= 0) {
        fail(new IllegalArgumentException("non-positive subscription request: " + n));
        return;
      }
      synchronized (this) {
        long d = demand + n;
        demand = d < 0 ? Long.MAX_VALUE : d;
      }
      drain();
    }

    @Override
    public void cancel() {
      synchronized (this) {
        if (ended) {
          return;
        }
        ended = true;
        pending.clear();
      }
      subscription.cancel();
    }

    void onNext(List<ByteBuffer> buffers) {
      synchronized (this) {
        if (owed != Long.MAX_VALUE && owed > 0) {
          owed--;
        }
        if (ended) {
          return;
        }
        pending.add(buffers);
      }
      drain();
    }

    void onComplete() {
      synchronized (this) {
        completed = true;
      }
      drain();
    }

    void onError(Throwable t) {
      synchronized (this) {
        failed = t;
      }
      drain();
    }

    /** Sends what is due, unless a signal is running (it sends it as it returns). */
    private void drain() {
      while (true) {
        List<ByteBuffer> next = null;
        Throwable failure = null;
        long ask = 0;
        synchronized (this) {
          if (signalling || ended || subscriber == null) {
            return;
          }
          if (!pending.isEmpty() && demand > 0) {
            next = pending.poll();
            if (demand != Long.MAX_VALUE) {
              demand--;
            }
            signalling = true;
          } else if (pending.isEmpty() && (completed || failed != null)) {
            failure = failed;
            ended = true;
            signalling = true;
          } else if (pending.isEmpty() && owed != Long.MAX_VALUE && demand > owed) {
            ask = demand == Long.MAX_VALUE ? Long.MAX_VALUE : demand - owed;
            owed = ask == Long.MAX_VALUE ? Long.MAX_VALUE : owed + ask;
          } else {
            return;
          }
        }
        if (ask > 0) {
          subscription.request(ask); // what comes is sent by the signal that brings it
          continue;
        }
        boolean end = next == null;
        try {
          if (!end) {
            subscriber.onNext(next);
          } else if (failure == null) {
            subscriber.onComplete();
          } else {
            subscriber.onError(failure);
          }
        } catch (RuntimeException | Error e) {
          synchronized (this) {
            signalling = false;
          }
          if (!end) {
            fail(e);
          }
          return; // after an end: nothing more to tell it; its getBody() says how it ended
        }
        synchronized (this) {
          signalling = false;
        }
      }
    }

    /** Ends the body with {@code t}: the JDK's subscription cancelled, the subscriber told. */
    private void fail(Throwable t) {
      synchronized (this) {
        if (ended) {
          return;
        }
        ended = true;
        pending.clear();
      }
      subscription.cancel();
      try {
        subscriber.onError(t);
      } catch (RuntimeException | Error ignored) {
        // nothing more to tell it; its getBody() says how the body ended
      }
    }
  }
}
