package dev.retryagent.internal.jdk;

import java.io.IOException;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpResponse.BodyHandler;
import java.net.http.HttpResponse.BodySubscriber;
import java.nio.ByteBuffer;
import java.util.Collections;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executor;
import java.util.concurrent.Flow;
import java.util.function.BiConsumer;

/**
 * A response released for a retry whose wait then ended past the call's deadline, given to the
 * application as without the agent. The JDK had read its body into the agent's {@link
 * DiscardedBody} (at most {@code GIVE_BACK_LIMIT} bytes, kept with the JDK's {@code ResponseInfo});
 * the application's own {@link BodyHandler} was never applied to it: a handler has effects ({@code
 * ofFile} writes), so it is applied only here, once the call has ended with this response, and the
 * kept bytes are replayed into its subscriber ({@link Replay}).
 *
 * <p>Before {@link #deliver} it is the marker the retry loop hands back ({@code body()} null);
 * after, the application's response: the attempt's status, headers, version, URI, TLS session and
 * {@code request()} / {@code previousResponse()} as the application gets them ({@link
 * CallersResponse}), {@code body()} the handler's value. Made only on a retry's path.
 */
final class GivenBack<T> extends AttemptsResponse<T> {
  /**
   * Whether the JDK tells the body's subscriber {@code onError(IOException("Request cancelled"))}
   * when the call is cancelled ({@code cancel(true)}, an interrupted {@code send}) while its body
   * is read: since JDK-8294916 (JDK 20; 17.0.17), on the cancelling thread; before, it stops
   * silently ({@code Http1Exchange.cancelImpl}; seen told on 25, not on 17.0.15).
   */
  static final boolean CANCEL_TELLS_SUBSCRIBER = cancelTellsSubscriber(Runtime.version());

  private final ResponseInfo info; // the JDK's, as its handler was to get it
  private final BodyHandler<T> handler; // the application's
  private final JdkTransport transport; // the client's: where its executor is
  private final byte[] bytes;
  private final int length;
  private final T body;

  GivenBack(
      HttpResponse<T> attempts,
      ResponseInfo info,
      BodyHandler<T> handler,
      JdkTransport transport,
      byte[] bytes,
      int length) {
    this(attempts, info, handler, transport, bytes, length, null);
  }

  private GivenBack(
      HttpResponse<T> attempts,
      ResponseInfo info,
      BodyHandler<T> handler,
      JdkTransport transport,
      byte[] bytes,
      int length,
      T body) {
    super(attempts); // as the application gets it: CallersResponse's view
    this.info = info;
    this.handler = handler;
    this.transport = transport;
    this.bytes = bytes;
    this.length = length;
    this.body = body;
  }

  static boolean cancelTellsSubscriber(Runtime.Version v) {
    return v.feature() >= 20 || (v.feature() == 17 && v.update() >= 17);
  }

  /** The application's response, {@code body()} its handler's value. */
  private GivenBack<T> with(T value) {
    return new GivenBack<>(attempts, null, null, null, null, 0, value);
  }

  /**
   * The response as {@code HttpClient.send} gives it with {@code handler}: the handler applied to
   * the kept head and its subscriber given the kept bytes as it asks for them, on the client's
   * executor as the JDK does it ({@link ClientExecutor}; here when out of reach), its {@code
   * getBody()} awaited as {@code send} awaits it. An interrupt then: {@code send}'s {@link
   * InterruptedException}, the replay stopped as the JDK stops the exchange ({@link
   * Delivery#stop}). What the handler or its subscriber throws, or completes its body with, fails
   * the call as {@code send} fails it ({@link #asSendThrowsIt}); a subscriber's method that throws
   * is told {@code onError} first, as the JDK tells it.
   */
  HttpResponse<T> deliver() throws IOException, InterruptedException {
    Delivery delivery = new Delivery(false);
    delivery.start();
    try {
      return delivery.get();
    } catch (InterruptedException e) {
      delivery.stop(); // as send's cancel(true) of its future
      throw e;
    } catch (ExecutionException e) {
      throw asSendThrowsIt(e.getCause());
    }
  }

  /**
   * The response as {@code HttpClient.sendAsync} completes its future with {@code handler}: as
   * {@link #deliver}, the handler applied and the bytes replayed on the client's executor, the
   * future completed on the JDK's async pool, where the JDK completes its own. What the handler
   * throws, or its body fails with, fails the future as the JDK's fails ({@code
   * CompletionException} around it); a {@code cancel(true)} stops the replay as the JDK stops the
   * exchange ({@link Delivery#stop}), a {@code cancel(false)} lets it go on, as the JDK's does.
   */
  CompletableFuture<HttpResponse<T>> deliverAsync() {
    return new Delivery(true); // started by start(), once the caller's cancel reaches it
  }

  /** Starts a give-back {@link #deliverAsync} made; anything else is left alone. */
  static void start(CompletionStage<?> given) {
    if (given instanceof GivenBack.Delivery) {
      ((GivenBack<?>.Delivery) given).start();
    }
  }

  /** The client's executor, or null when out of reach; never throws. */
  private Executor executor() {
    try {
      return transport == null ? null : transport.executor();
    } catch (RuntimeException e) {
      return null; // run here, as before
    }
  }

  /**
   * One give-back: the handler applied and the bytes replayed when it runs, on the client's
   * executor; the response's future for {@code sendAsync}, the value {@code send} awaits.
   */
  private final class Delivery extends CompletableFuture<HttpResponse<T>> implements Runnable {
    private final boolean async;
    private Replay replay; // guarded by this: set once the handler's subscriber is subscribed
    private boolean stopped; // guarded by this: the call was cancelled

    Delivery(boolean async) {
      this.async = async;
    }

    /** Runs on the client's executor; here when out of reach or refused (shut down meanwhile). */
    void start() {
      Executor executor = executor();
      if (executor == null) {
        run();
        return;
      }
      try {
        executor.execute(this);
      } catch (RuntimeException refused) {
        run();
      }
    }

    @Override
    public void run() {
      CompletionStage<T> value;
      Replay r;
      try {
        synchronized (this) {
          if (stopped) {
            return; // cancelled before its head reached the handler: never applied, as the JDK's
          }
        }
        BodySubscriber<T> subscriber = handler.apply(info);
        r = new Replay(subscriber, bytes, length);
        synchronized (this) {
          if (stopped) {
            return;
          }
          replay = r;
        }
        r.start();
        value = subscriber.getBody();
      } catch (RuntimeException | Error e) {
        completeExceptionally(async ? new CompletionException(e) : e);
        return;
      }
      BiConsumer<T, Throwable> end =
          (v, e) -> {
            if (e == null) {
              complete(with(v));
            } else if (async && !(e instanceof CompletionException)) {
              // As the JDK's future fails: in a CompletionException, whatever the body failed with.
              completeExceptionally(new CompletionException(e));
            } else {
              completeExceptionally(e); // send unwraps it as get() does
            }
          };
      if (async) {
        value.whenCompleteAsync(end, JdkRetrying.JDK_ASYNC_POOL);
      } else {
        value.whenComplete(end);
      }
    }

    @Override
    public boolean cancel(boolean mayInterruptIfRunning) {
      if (mayInterruptIfRunning) {
        stop(); // the JDK's cancel(false) leaves its exchange alone (MultiExchange.cancel)
      }
      return super.cancel(mayInterruptIfRunning);
    }

    /**
     * The call was cancelled: the replay stops, its subscriber told {@code onError} on this thread
     * when the JDK tells it ({@link #CANCEL_TELLS_SUBSCRIBER}).
     */
    void stop() {
      Replay r;
      synchronized (this) {
        stopped = true;
        r = replay;
      }
      if (r != null) {
        r.stop(CANCEL_TELLS_SUBSCRIBER ? new IOException("Request cancelled") : null);
      }
    }
  }

  /**
   * A failure of the handler or its subscriber as {@code HttpClient.send} throws it (JDK 11 to 25:
   * it unwraps its future's failure and throws a new exception of the same kind around it): an
   * {@code IllegalArgumentException} or {@code SecurityException} as such, anything else an {@code
   * IOException}. (The JDK's other kinds, timeouts, connect and TLS failures, are the network's;
   * bytes replayed from memory meet none.)
   */
  static IOException asSendThrowsIt(Throwable t) {
    String msg = t.getMessage();
    if (t instanceof IllegalArgumentException) {
      throw new IllegalArgumentException(msg, t);
    }
    if (t instanceof SecurityException) {
      throw new SecurityException(msg, t);
    }
    return new IOException(msg, t);
  }

  @Override
  public HttpRequest request() {
    return attempts.request();
  }

  @Override
  public Optional<HttpResponse<T>> previousResponse() {
    return attempts.previousResponse(); // a redirect's: its body is null
  }

  @Override
  public T body() {
    return body;
  }

  /**
   * The kept bytes as the JDK publishes a body: one {@code onSubscribe}, then the bytes in one
   * {@code onNext} when asked for, then {@code onComplete} (an empty body: {@code onComplete} at
   * once, as the JDK completes one without demand). Signals are serial: a {@code request} made
   * inside a signal adds demand, and the signal running goes on with it when it returns; none is
   * sent after a {@code cancel}, a request of zero or less ({@code onError} with an {@code
   * IllegalArgumentException}, as the reactive-streams rule says) or a signal that threw ({@code
   * onError} with its exception).
   */
  static final class Replay implements Flow.Subscription {
    private final BodySubscriber<?> subscriber;
    private final byte[] bytes;
    private final int length;
    private long demand;
    private boolean sent; // the bytes went (or there are none)
    private boolean ended; // onComplete or onError told (onError may follow a failed onComplete)
    private boolean cancelled;
    private boolean signalling; // a signal is running on some thread
    private Thread subscribing; // the thread in onSubscribe, until it returns
    private Throwable stopping; // the call's cancel, to tell once the signal running returns

    Replay(BodySubscriber<?> subscriber, byte[] bytes, int length) {
      this.subscriber = subscriber;
      this.bytes = bytes;
      this.length = length;
      this.sent = length == 0;
    }

    void start() {
      synchronized (this) {
        signalling = true;
        subscribing = Thread.currentThread();
      }
      try {
        subscriber.onSubscribe(this);
      } catch (RuntimeException | Error e) {
        fail(e, false);
        return;
      } finally {
        signalled();
      }
      drain();
    }

    @Override
    public void request(long n) {
      if (n <= 0) {
        fail(new IllegalArgumentException("non-positive subscription request: " + n), false);
        return;
      }
      synchronized (this) {
        long d = demand + n;
        demand = d < 0 ? Long.MAX_VALUE : d;
      }
      drain();
    }

    @Override
    public synchronized void cancel() {
      cancelled = true;
    }

    /**
     * The call's cancel: nothing more is sent, and the subscriber is told {@code onError(told)}
     * unless {@code told} is null or it ended, even after its own {@code cancel}, as the JDK tells
     * it; after a signal running on another thread returns, so that signals stay serial. An {@code
     * onSubscribe} running on another thread is waited for, then {@code onError} is told here, as
     * the JDK's cancel waits for it ({@code HttpBodySubscriberWrapper.subscriptionLock}) and tells
     * it on the cancelling thread before the cancel returns. Before, the cancel returned at once
     * and {@code onError} came later, on the executor's thread.
     */
    void stop(Throwable told) {
      boolean interrupted = false;
      try {
        synchronized (this) {
          if (ended || stopping != null) {
            cancelled = true;
            return;
          }
          cancelled = true;
          if (told == null) {
            return;
          }
          // As the JDK's lock: not interruptible, and no wait on the thread in onSubscribe itself.
          while (subscribing != null && subscribing != Thread.currentThread()) {
            try {
              wait();
            } catch (InterruptedException e) {
              interrupted = true;
            }
          }
          if (ended || stopping != null) {
            return; // told meanwhile (another stop, or onSubscribe failed)
          }
          if (signalling) {
            stopping = told; // the signal running tells it as it returns
            return;
          }
          ended = true;
        }
        tell(told);
      } finally {
        if (interrupted) {
          Thread.currentThread().interrupt();
        }
      }
    }

    /** Sends what is due unless a signal is running already (it goes on with it). */
    private void drain() {
      while (true) {
        boolean next;
        synchronized (this) {
          if (signalling || ended || cancelled) {
            return;
          }
          if (!sent) {
            if (demand == 0) {
              return;
            }
            demand--;
            sent = true;
            next = true;
          } else {
            ended = true;
            next = false;
          }
          signalling = true;
        }
        try {
          if (next) {
            subscriber.onNext(Collections.singletonList(ByteBuffer.wrap(bytes, 0, length)));
          } else {
            subscriber.onComplete();
          }
        } catch (RuntimeException | Error e) {
          fail(e, !next);
          return;
        } finally {
          signalled();
        }
      }
    }

    /** A signal returned: a cancel of the call that came meanwhile is told now. */
    private void signalled() {
      Throwable told;
      synchronized (this) {
        signalling = false;
        if (subscribing != null) {
          subscribing = null;
          notifyAll(); // a stop() waits for onSubscribe to return
        }
        told = stopping;
        if (told == null || ended) {
          return;
        }
        ended = true;
      }
      tell(told);
    }

    /**
     * Tells the subscriber {@code onError(t)} once, unless it ended or cancelled; after an {@code
     * onComplete} that threw ({@code afterComplete}) too, as the JDK's wrapper of a subscriber
     * does.
     */
    private void fail(Throwable t, boolean afterComplete) {
      synchronized (this) {
        if ((ended && !afterComplete) || cancelled) {
          return;
        }
        ended = true;
      }
      tell(t);
    }

    private void tell(Throwable t) {
      try {
        subscriber.onError(t);
      } catch (RuntimeException | Error ignored) {
        // nothing more to tell it; its getBody() says how the call ends
      }
    }
  }
}
