package dev.retryagent.internal.jdk;

import dev.retryagent.internal.Discards;
import java.net.http.HttpResponse.BodySubscriber;
import java.nio.ByteBuffer;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Flow;

/**
 * The body of a response that will be retried: read and dropped, so that its connection serves
 * again (HTTP/1.1), up to {@link Discards#LIMIT} bytes; past them the subscription is cancelled,
 * which closes an HTTP/1.1 connection (resets an HTTP/2 stream), and the response is done. The
 * JDK's {@code BodySubscribers.replacing} read every byte before the response completed: a retry
 * waited for a 1 GB or endless error body. Completes with null.
 */
final class DiscardedBody<T> implements BodySubscriber<T> {
  private final CompletableFuture<T> body = new CompletableFuture<>();
  private Flow.Subscription subscription; // the JDK calls onSubscribe, then onNext, in order
  private long read;

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
      read += b.remaining();
    }
    if (read > Discards.LIMIT) {
      subscription.cancel();
      body.complete(null);
    }
  }

  @Override
  public void onError(Throwable failure) {
    body.completeExceptionally(failure);
  }

  @Override
  public void onComplete() {
    body.complete(null);
  }
}
