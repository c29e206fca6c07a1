package dev.retryagent.internal.jdk;

import dev.retryagent.engine.ResponseAccess;
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
 */
final class DiscardedBody<T> implements BodySubscriber<T> {
  private final CompletableFuture<T> body = new CompletableFuture<>();
  private final HttpResponse.ResponseInfo info; // null: nothing kept (the call ends, not retried)
  private final HttpResponse.BodyHandler<T> handler; // the caller's, for a give-back
  // The call's client, whose executor a give-back runs on; let go by giveBack, as the kept bytes
  // are: the response given back holds this, and must hold neither the client nor the copy.
  private JdkTransport transport;
  private Flow.Subscription subscription; // the JDK calls onSubscribe, then onNext, in order
  private long read;
  private byte[] kept; // the bytes read, while within the limit; null before the first, or past it

  /**
   * {@code info} null: nothing kept; else {@code handler} is the caller's and {@code transport} the
   * call's, for a give-back.
   */
  DiscardedBody(
      HttpResponse.ResponseInfo info, HttpResponse.BodyHandler<T> handler, JdkTransport transport) {
    this.info = info;
    this.handler = handler;
    this.transport = transport;
  }

  @Override
  public CompletionStage<T> getBody() {
    return body;
  }

  @Override
  public void onSubscribe(Flow.Subscription s) {
    subscription = s;
    s.request(Long.MAX_VALUE);
  }

  @Override
  public void onNext(List<ByteBuffer> buffers) {
    if (body.isDone()) {
      return;
    }
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
    if (read > Discards.LIMIT) {
      subscription.cancel();
      body.complete(null);
    }
  }

  @Override
  public void onError(Throwable failure) {
    kept = null;
    body.completeExceptionally(failure);
  }

  @Override
  @SuppressWarnings("unchecked")
  public void onComplete() {
    // Within the limit: kept whole (an empty body too), so the response can be given back.
    boolean whole = info != null && read <= ResponseAccess.GIVE_BACK_LIMIT;
    body.complete(whole ? (T) this : null);
  }

  /**
   * {@code response}, whose {@code body()} is this, to give back after a late wait: its head as the
   * application gets it, the body kept. The JDK completes the response with its body after {@link
   * #onComplete}, so what is read here was all written before.
   */
  GivenBack<T> giveBack(HttpResponse<T> response) {
    byte[] k = kept;
    JdkTransport t = transport;
    kept = null;
    transport = null;
    int n = (int) read;
    return new GivenBack<>(response, info, handler, t, k == null ? new byte[0] : k, n);
  }
}
