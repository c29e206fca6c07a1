package dev.retryagent.internal.jdk;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retryagent.engine.RetryEngine;
import dev.retryagent.policy.Mode;
import dev.retryagent.testing.FakeTime;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpHeaders;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import javax.net.ssl.SSLSession;
import org.junit.jupiter.api.Test;

/**
 * The release {@link CallersResponse} makes of a response whose future the caller cancelled as the
 * JDK completed it: what the release throws is our own failure, said once.
 */
class CallersResponseReleaseTest {
  private static final URI URL = URI.create("http://127.0.0.1:9/v1/items");

  @Test
  void aReleaseThatThrowsAnErrorAfterTheCallerCancelledIsSaidOnce() {
    // A sendAsync whose attempt sent the agent's copy of the request (an attempt header): the
    // caller cancelled its future as the JDK's completed, and the body (the application's handler
    // made it AutoCloseable) threw an Error as it was closed (a class missing). It failed the stage
    // whenComplete returns, which nobody reads: said nowhere. Now said once, as the retry loops
    // say a release of a response the caller does not get.
    List<String> errors = new CopyOnWriteArrayList<>();
    FakeTime time = new FakeTime();
    RetryEngine engine =
        RetryEngine.builder()
            .clock(time)
            .sleeper(time)
            .scheduler(time)
            .mode(Mode.ENFORCE)
            .errors(errors::add)
            .build();
    JdkRequest<Object> call = engine.begin(new JdkRequest<>(HttpRequest.newBuilder(URL).build()));
    AtomicInteger closes = new AtomicInteger();
    AutoCloseable body =
        () -> {
          closes.incrementAndGet();
          throw new NoClassDefFoundError("app/Body");
        };

    for (int i = 0; i < 2; i++) {
      CompletableFuture<HttpResponse<Object>> jdks = new CompletableFuture<>();
      CompletableFuture<HttpResponse<Object>> mine = CallersResponse.of(jdks, call, "X-Attempt");
      mine.cancel(false);
      jdks.complete(response(body));
      assertThat(mine).isCancelled();
    }

    assertThat(closes).as("released each time").hasValue(2);
    assertThat(errors)
        .singleElement()
        .asString()
        .contains("while releasing a response the caller does not get (java.lang.NoClassDefFound")
        .endsWith("; the call goes on (said once for this cause)");
  }

  private static HttpResponse<Object> response(Object body) {
    return new HttpResponse<Object>() {
      @Override
      public int statusCode() {
        return 200;
      }

      @Override
      public HttpRequest request() {
        return HttpRequest.newBuilder(URL).build();
      }

      @Override
      public Optional<HttpResponse<Object>> previousResponse() {
        return Optional.empty();
      }

      @Override
      public HttpHeaders headers() {
        return HttpHeaders.of(Map.of(), (a, b) -> true);
      }

      @Override
      public Object body() {
        return body;
      }

      @Override
      public Optional<SSLSession> sslSession() {
        return Optional.empty();
      }

      @Override
      public URI uri() {
        return URL;
      }

      @Override
      public HttpClient.Version version() {
        return HttpClient.Version.HTTP_1_1;
      }
    };
  }
}
