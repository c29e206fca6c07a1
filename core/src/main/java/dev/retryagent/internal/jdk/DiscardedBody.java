package dev.retryagent.internal.jdk;

import dev.retryagent.engine.ResponseAccess;
import dev.retryagent.engine.Scheduler;
import dev.retryagent.internal.Discards;
import java.net.http.HttpResponse;
import java.net.http.HttpResponse.BodySubscriber;
import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
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

  private final CompletableFuture<T> body = new CompletableFuture<>();
  private final HttpResponse.ResponseInfo info; // null: nothing kept (the call ends, not retried)
  private final HttpResponse.BodyHandler<T> handler; // the caller's, for a give-back
  // The call's client, whose executor a give-back runs on; let go by giveBack, as the kept bytes
  // are: the response given back holds this, and must hold neither the client nor the copy.
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
    this.info = info;
    this.handler = handler;
    this.transport = transport;
    this.graceNanos = grace(delayNanos);
    this.requestBody = requestBody;
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
   * the call with it. Never throws (fixEarly does not).
   */
  private void fixBody() {
    ReplayableBody b;
    synchronized (this) {
      // Kept: a copy not settled now may be by the grace after the limit, if it fires before the
      // body ends; a body that ends first leaves it to the check after the wait.
      b = requestBody;
    }
    if (b != null && info != null) { // the body's own locks taken outside this one
      b.fixEarly();
    }
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
      Scheduler.shared().schedule(this, graceNanos);
    } catch (RuntimeException refused) {
      // No thread to be had (the JVM is ending): the body is waited for, as before the grace.
    }
    s.request(Long.MAX_VALUE);
  }

  /** The grace is over: a body not complete by now is let go (not waited for, not given back). */
  @Override
  public void run() {
    synchronized (this) {
      if (done) {
        return;
      }
      done = true;
      kept = null;
    }
    fixBody();
    subscription.cancel();
    body.complete(null);
  }

  @Override
  public void onNext(List<ByteBuffer> buffers) {
    boolean wasWithin;
    boolean within;
    boolean over; // past the discard's limit: the subscription is cancelled
    synchronized (this) {
      if (done) {
        return;
      }
      wasWithin = read <= ResponseAccess.GIVE_BACK_LIMIT;
      for (ByteBuffer b : buffers) {
        int n = b.remaining();
        if (info != null && read + n <= ResponseAccess.GIVE_BACK_LIMIT) {
          byte[] k = kept == null ? new byte[Math.max(n, 512)] : kept;
          if (read + n > k.length) {
            k = Arrays.copyOf(k, (int) Math.min(ResponseAccess.GIVE_BACK_LIMIT, (read + n) * 2));
          }
          b.get(k, (int) read, n);
          kept = k;
        } else {
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
    if (wasWithin && !within) {
      fixBody(); // outside the lock: the body's locks are taken on other threads too
    }
    if (!over) {
      return;
    }
    subscription.cancel();
    body.complete(null);
  }

  @Override
  public void onError(Throwable failure) {
    synchronized (this) {
      if (done) {
        return;
      }
      done = true;
      kept = null;
    }
    // The response can no longer be given back (its body failed): as past the limit, the copy is
    // fixed for the retry now, else a source failure during the wait left the call nothing.
    fixBody();
    body.completeExceptionally(failure);
  }

  @Override
  @SuppressWarnings("unchecked")
  public void onComplete() {
    boolean whole;
    synchronized (this) {
      if (done) {
        return;
      }
      done = true;
      // Within the limit: kept whole (an empty body too), so the response can be given back.
      whole = info != null && read <= ResponseAccess.GIVE_BACK_LIMIT;
      if (whole) {
        requestBody = null; // can be given back: the check after the wait decides the body
      }
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
}
