package dev.retryagent.internal.jdk;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.http.HttpResponse.BodySubscriber;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Flow;
import java.util.function.Consumer;
import org.junit.jupiter.api.Test;

/**
 * The kept body replayed into the application's subscriber after a late wait ({@link
 * GivenBack.Replay}): only as much as it asks for, nothing after its cancel, serial signals.
 */
class GivenBackReplayTest {
  /** Records its signals; {@code onNextDoes} runs inside onNext. */
  static final class Recording implements BodySubscriber<String> {
    final List<String> signals = new CopyOnWriteArrayList<>();
    Flow.Subscription subscription;
    Consumer<Flow.Subscription> onSubscribeDoes = s -> {};
    Consumer<Flow.Subscription> onNextDoes = s -> {};
    private boolean inSignal;

    @Override
    public CompletionStage<String> getBody() {
      return new CompletableFuture<>();
    }

    private void enter(String signal) {
      if (inSignal) {
        signals.add("reentered by " + signal); // a signal inside another: not serial
      }
      inSignal = true;
      signals.add(signal);
    }

    @Override
    public void onSubscribe(Flow.Subscription s) {
      enter("subscribe");
      subscription = s;
      try {
        onSubscribeDoes.accept(s);
      } finally {
        inSignal = false;
      }
    }

    @Override
    public void onNext(List<ByteBuffer> item) {
      StringBuilder b = new StringBuilder();
      for (ByteBuffer x : item) {
        b.append(StandardCharsets.UTF_8.decode(x));
      }
      enter("next " + b);
      try {
        onNextDoes.accept(subscription);
      } finally {
        inSignal = false;
      }
    }

    @Override
    public void onError(Throwable t) {
      enter("error " + t.getClass().getSimpleName());
      inSignal = false;
    }

    @Override
    public void onComplete() {
      enter("complete");
      inSignal = false;
    }
  }

  private static GivenBack.Replay replay(Recording r, String body) {
    byte[] b = body.getBytes(StandardCharsets.UTF_8);
    return new GivenBack.Replay(r, b, b.length);
  }

  @Test
  void nothingIsSentBeforeItIsAskedFor() {
    Recording r = new Recording();
    replay(r, "busy").start();
    assertThat(r.signals).containsExactly("subscribe");
    r.subscription.request(1);
    assertThat(r.signals).containsExactly("subscribe", "next busy", "complete");
    r.subscription.request(5);
    assertThat(r.signals).hasSize(3);
  }

  @Test
  void anEmptyBodyCompletesWithoutDemandAsTheJdkCompletesOne() {
    Recording r = new Recording();
    replay(r, "").start();
    assertThat(r.signals).containsExactly("subscribe", "complete");
  }

  @Test
  void aRequestInsideASignalAddsDemandAndTheSignalsStaySerial() {
    Recording r = new Recording();
    r.onSubscribeDoes = s -> s.request(1);
    r.onNextDoes = s -> s.request(1);
    replay(r, "busy").start();
    assertThat(r.signals).containsExactly("subscribe", "next busy", "complete");
  }

  @Test
  void nothingIsSentAfterACancel() {
    Recording r = new Recording();
    r.onSubscribeDoes = Flow.Subscription::cancel;
    replay(r, "busy").start();
    r.subscription.request(1);
    assertThat(r.signals).containsExactly("subscribe");

    Recording empty = new Recording();
    empty.onSubscribeDoes = Flow.Subscription::cancel;
    replay(empty, "").start();
    assertThat(empty.signals).containsExactly("subscribe");
  }

  @Test
  void aRequestOfZeroOrLessIsAnErrorAndEndsTheReplay() {
    Recording r = new Recording();
    replay(r, "busy").start();
    r.subscription.request(0);
    r.subscription.request(1);
    assertThat(r.signals).containsExactly("subscribe", "error IllegalArgumentException");
  }

  @Test
  void aSignalThatThrowsIsToldAsAnErrorAndNothingFollows() {
    Recording r = new Recording();
    r.onSubscribeDoes = s -> s.request(1);
    r.onNextDoes =
        s -> {
          throw new IllegalStateException("broke");
        };
    replay(r, "busy").start();
    assertThat(r.signals).containsExactly("subscribe", "next busy", "error IllegalStateException");
  }

  @Test
  void theResponseGivenBackHoldsNeitherTheKeptBytesNorTheClient() throws Exception {
    // Before: the response given back kept the retried one, whose body (the agent's subscriber)
    // held the 8 KiB kept, and the client's transport, for as long as the application held it.
    JdkTransport transport =
        new JdkTransport() {
          @Override
          public <T> java.net.http.HttpResponse<T> send(
              java.net.http.HttpRequest request, java.net.http.HttpResponse.BodyHandler<T> h) {
            throw new UnsupportedOperationException();
          }

          @Override
          public <T> CompletableFuture<java.net.http.HttpResponse<T>> sendAsync(
              java.net.http.HttpRequest request,
              java.net.http.HttpResponse.BodyHandler<T> h,
              java.net.http.HttpResponse.PushPromiseHandler<T> p) {
            throw new UnsupportedOperationException();
          }
        };
    java.net.http.HttpResponse.ResponseInfo info =
        new java.net.http.HttpResponse.ResponseInfo() {
          @Override
          public int statusCode() {
            return 503;
          }

          @Override
          public java.net.http.HttpHeaders headers() {
            return java.net.http.HttpHeaders.of(java.util.Map.of(), (a, b) -> true);
          }

          @Override
          public java.net.http.HttpClient.Version version() {
            return java.net.http.HttpClient.Version.HTTP_1_1;
          }
        };
    DiscardedBody<String> kept =
        new DiscardedBody<>(info, java.net.http.HttpResponse.BodyHandlers.ofString(), transport, 0);
    kept.onSubscribe(
        new Flow.Subscription() {
          @Override
          public void request(long n) {}

          @Override
          public void cancel() {}
        });
    kept.onNext(List.of(ByteBuffer.wrap("busy".getBytes(StandardCharsets.UTF_8))));
    kept.onComplete();

    kept.giveBack(null);

    for (String field : new String[] {"kept", "transport"}) {
      java.lang.reflect.Field f = DiscardedBody.class.getDeclaredField(field);
      f.setAccessible(true);
      assertThat(f.get(kept)).as(field).isNull();
    }
  }
}
