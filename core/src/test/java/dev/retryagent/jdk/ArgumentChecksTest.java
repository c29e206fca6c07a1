package dev.retryagent.jdk;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retryagent.engine.RetryEngine;
import dev.retryagent.policy.Mode;
import dev.retryagent.policy.Policy;
import dev.retryagent.testing.FakeTime;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.concurrent.Callable;
import org.junit.jupiter.api.Test;

/**
 * A null request or handler, and a send on an interrupted thread: ours throws what the JDK's client
 * throws (before: NullPointerException "request"/"handler" where the JDK's has no message, and a
 * NullPointerException where the JDK, checking the interrupt first, throws InterruptedException).
 */
class ArgumentChecksTest {
  private static final HttpRequest REQUEST =
      HttpRequest.newBuilder(URI.create("http://127.0.0.1:9/")).build();

  @Test
  void nullArgumentsAndAnInterruptedSendFailAsTheJdksClientFails() {
    FakeTime time = new FakeTime();
    RetryEngine engine =
        RetryEngine.builder()
            .clock(time)
            .sleeper(time)
            .scheduler(time)
            .mode(Mode.ENFORCE)
            .policy(Policy.defaults())
            .build();
    HttpClient plain = HttpClient.newHttpClient();
    HttpClient ours = RetryingHttpClient.wrap(HttpClient.newHttpClient(), engine);
    assertThat(checks(ours)).isEqualTo(checks(plain));
    assertThat(checks(plain))
        .isEqualTo(
            "send(null, h): java.lang.NullPointerException null; "
                + "send(r, null): java.lang.NullPointerException null; "
                + "sendAsync(null, h): java.lang.NullPointerException null; "
                + "sendAsync(r, null): java.lang.NullPointerException null; "
                + "interrupted send(null, h): java.lang.InterruptedException null, flag false");
  }

  private static String checks(HttpClient client) {
    HttpResponse.BodyHandler<Void> h = HttpResponse.BodyHandlers.discarding();
    Thread.currentThread().interrupt();
    String interrupted = thrown(() -> client.send(null, h));
    interrupted += ", flag " + Thread.interrupted(); // and cleared, whatever happened
    return "send(null, h): "
        + thrown(() -> client.send(null, h))
        + "; send(r, null): "
        + thrown(() -> client.send(REQUEST, null))
        + "; sendAsync(null, h): "
        + thrown(() -> client.sendAsync(null, h))
        + "; sendAsync(r, null): "
        + thrown(() -> client.sendAsync(REQUEST, null))
        + "; interrupted send(null, h): "
        + interrupted;
  }

  private static String thrown(Callable<?> c) {
    try {
      c.call();
      return "returned";
    } catch (Exception e) {
      return e.getClass().getName() + " " + e.getMessage();
    }
  }
}
