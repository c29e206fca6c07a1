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
import java.util.concurrent.Flow;

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
  private final ResponseInfo info; // the JDK's, as its handler was to get it
  private final BodyHandler<T> handler; // the application's
  private final byte[] bytes;
  private final int length;
  private final T body;

  GivenBack(
      HttpResponse<T> attempts,
      ResponseInfo info,
      BodyHandler<T> handler,
      byte[] bytes,
      int length) {
    this(attempts, info, handler, bytes, length, null);
  }

  private GivenBack(
      HttpResponse<T> attempts,
      ResponseInfo info,
      BodyHandler<T> handler,
      byte[] bytes,
      int length,
      T body) {
    super(attempts); // as the application gets it: CallersResponse's view
    this.info = info;
    this.handler = handler;
    this.bytes = bytes;
    this.length = length;
    this.body = body;
  }

  /** The application's response, {@code body()} its handler's value. */
  private GivenBack<T> with(T value) {
    return new GivenBack<>(attempts, null, null, null, 0, value);
  }

  /**
   * The response as {@code HttpClient.send} gives it with {@code handler}: the handler applied to
   * the kept head, its subscriber given the kept bytes as it asks for them, its {@code getBody()}
   * awaited as {@code send} awaits it (an interrupt then: {@code send}'s {@link
   * InterruptedException}, the replay cancelled). What the handler or its subscriber throws, or
   * completes its body with, fails the call as {@code send} fails it ({@link #asSendThrowsIt}); a
   * subscriber's method that throws is told {@code onError} first, as the JDK tells it.
   */
  HttpResponse<T> deliver() throws IOException, InterruptedException {
    CompletableFuture<T> value;
    Replay replay = null;
    try {
      BodySubscriber<T> subscriber = handler.apply(info);
      replay = new Replay(subscriber, bytes, length);
      replay.start();
      value = subscriber.getBody().toCompletableFuture();
    } catch (RuntimeException | Error e) {
      throw asSendThrowsIt(e);
    }
    try {
      return with(value.get());
    } catch (InterruptedException e) {
      replay.cancel();
      throw e;
    } catch (ExecutionException e) {
      throw asSendThrowsIt(e.getCause());
    }
  }

  /**
   * The response as {@code HttpClient.sendAsync} completes its future with {@code handler}: as
   * {@link #deliver}, the handler applied and the bytes replayed on this thread (the loop's: the
   * JDK's executor, where the JDK applies it), {@code getBody()} chained. What the handler throws,
   * or its body fails with, fails the future as the JDK's fails ({@code CompletionException} around
   * it); cancelling the future cancels the replay.
   */
  CompletableFuture<HttpResponse<T>> deliverAsync() {
    Replay replay;
    CompletionStage<T> value;
    try {
      BodySubscriber<T> subscriber = handler.apply(info);
      replay = new Replay(subscriber, bytes, length);
      replay.start();
      value = subscriber.getBody();
    } catch (RuntimeException | Error e) {
      return CompletableFuture.failedFuture(new CompletionException(e));
    }
    Delivery<T> delivery = new Delivery<>(replay);
    value.whenComplete(
        (v, e) -> {
          if (e != null) {
            // As the JDK's future fails: in a CompletionException, whatever the body failed with.
            delivery.completeExceptionally(
                e instanceof CompletionException ? e : new CompletionException(e));
          } else {
            delivery.complete(with(v));
          }
        });
    return delivery;
  }

  /** {@link #deliverAsync}'s future: a cancel stops the replay. */
  private static final class Delivery<T> extends CompletableFuture<HttpResponse<T>> {
    private final Replay replay;

    Delivery(Replay replay) {
      this.replay = replay;
    }

    @Override
    public boolean cancel(boolean mayInterruptIfRunning) {
      replay.cancel();
      return super.cancel(mayInterruptIfRunning);
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

    Replay(BodySubscriber<?> subscriber, byte[] bytes, int length) {
      this.subscriber = subscriber;
      this.bytes = bytes;
      this.length = length;
      this.sent = length == 0;
    }

    void start() {
      synchronized (this) {
        signalling = true;
      }
      try {
        subscriber.onSubscribe(this);
      } catch (RuntimeException | Error e) {
        fail(e, false);
        return;
      } finally {
        synchronized (this) {
          signalling = false;
        }
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
          synchronized (this) {
            signalling = false;
          }
        }
      }
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
      try {
        subscriber.onError(t);
      } catch (RuntimeException | Error ignored) {
        // nothing more to tell it; its getBody() says how the call ends
      }
    }
  }
}
