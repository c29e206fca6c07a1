package dev.retryagent.agent;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.retryagent.bootstrap.JdkHttpBridge;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

class JdkHttpInterceptorTest {
  private static final HttpRequest REQUEST =
      HttpRequest.newBuilder(URI.create("http://127.0.0.1:9/x")).build();
  private static final HttpResponse.BodyHandler<String> BODY = HttpResponse.BodyHandlers.ofString();

  private final FakeHttpClient client = new FakeHttpClient();

  @AfterEach
  void reset() {
    FakeHttpClient.Bodies.sendResult = null;
    FakeHttpClient.Bodies.SEND_RUNS.set(0);
    JdkHttpBridge.clearPassThrough();
  }

  /** JdkCalls that fail the way the engine fails when it gives up. */
  private static JdkCalls failingWith(Exception e) {
    return new JdkCalls() {
      @Override
      public <T> HttpResponse<T> send(
          ClientTransport t, HttpRequest r, HttpResponse.BodyHandler<T> h)
          throws IOException, InterruptedException {
        if (e instanceof IOException) {
          throw (IOException) e;
        }
        throw (InterruptedException) e;
      }

      @Override
      public <T> CompletableFuture<HttpResponse<T>> sendAsync(
          ClientTransport t,
          HttpRequest r,
          HttpResponse.BodyHandler<T> h,
          HttpResponse.PushPromiseHandler<T> p) {
        throw new IllegalArgumentException("bad request", e);
      }
    };
  }

  @Test
  void passThroughMakesExactlyOneAttemptOnTheInterceptedClient() throws Throwable {
    JdkHttpInterceptor interceptor = new JdkHttpInterceptor(PassThroughJdkCalls::new);

    Object outcome = interceptor.send(client, REQUEST, BODY);

    assertThat(JdkHttpBridge.deliver(outcome)).isNull();
    assertThat(FakeHttpClient.Bodies.SEND_RUNS).hasValue(1);
  }

  @Test
  void theEnginesIoExceptionBecomesAThrownOutcomeUnchanged() {
    IOException gaveUp = new IOException("gave up");
    JdkHttpInterceptor interceptor = new JdkHttpInterceptor(() -> failingWith(gaveUp));

    Object outcome = interceptor.send(client, REQUEST, BODY);

    assertThatThrownBy(() -> JdkHttpBridge.deliver(outcome)).isSameAs(gaveUp);
  }

  @Test
  void anInterruptBecomesAThrownOutcomeUnchanged() {
    InterruptedException interrupted = new InterruptedException();
    JdkHttpInterceptor interceptor = new JdkHttpInterceptor(() -> failingWith(interrupted));

    Object outcome = interceptor.send(client, REQUEST, BODY);

    assertThatThrownBy(() -> JdkHttpBridge.deliver(outcome)).isSameAs(interrupted);
  }

  @Test
  void aSynchronousExceptionOfSendAsyncBecomesAThrownOutcome() {
    JdkHttpInterceptor interceptor =
        new JdkHttpInterceptor(() -> failingWith(new IOException("x")));

    Object outcome = interceptor.sendAsync(client, REQUEST, BODY, null);

    assertThatThrownBy(() -> JdkHttpBridge.deliver(outcome))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("bad request");
  }

  @Test
  void aFailureBeforeTheFirstAttemptEscapesSoTheBridgeRunsTheOriginal() {
    JdkHttpInterceptor interceptor =
        new JdkHttpInterceptor(
            () -> {
              throw new IllegalStateException("engine could not start");
            });

    assertThatThrownBy(() -> interceptor.send(client, REQUEST, BODY))
        .isInstanceOf(IllegalStateException.class);
    assertThat(FakeHttpClient.Bodies.SEND_RUNS).hasValue(0);
  }

  @Test
  void theCallsAreCreatedOnceOnFirstUse() {
    AtomicInteger created = new AtomicInteger();
    JdkHttpInterceptor interceptor =
        new JdkHttpInterceptor(
            () -> {
              created.incrementAndGet();
              return new PassThroughJdkCalls();
            });
    assertThat(created).hasValue(0);

    interceptor.send(client, REQUEST, BODY);
    interceptor.send(client, REQUEST, BODY);

    assertThat(created).hasValue(1);
  }

  @Test
  void anUnconsumedPassThroughTokenIsClearedAfterTheAttempt() throws Exception {
    // FakeHttpClient here is not instrumented, so nothing consumes the token
    new ClientTransport(client).send(REQUEST, BODY);
    JdkHttpBridge.setHandler(new JdkHttpInterceptor(PassThroughJdkCalls::new));
    try {
      // with a token left over, the bridge would consume it and answer null
      assertThat(JdkHttpBridge.send(client, REQUEST, BODY)).isNotNull();
    } finally {
      JdkHttpBridge.setHandler(null);
    }
  }
}
