package dev.retryagent.jdk;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retryagent.engine.RetryEvent;
import dev.retryagent.policy.CircuitBreakerPolicy;
import dev.retryagent.policy.Mode;
import dev.retryagent.testing.FakeTime;
import dev.retryagent.testing.PushingH2cServer;
import dev.retryagent.testing.TestEngines;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Consumer;
import org.junit.jupiter.api.Test;

/**
 * How java.net.http ends an HTTP/2 stream the server did not answer, and what the agent makes of
 * it, side by side with the plain client, against a loopback h2c server (reached by the JDK's
 * upgrade on a first GET). JDK 17 fails every stream of a connection the server ended with GOAWAY
 * with "GOAWAY received"; JDK 24+ sends a stream above the GOAWAY's last stream id, or one refused
 * (REFUSED_STREAM), again once itself, and says "request not processed by peer" when the server
 * refuses that too. Both read as other exceptions: a GET so ended was never retried.
 */
class Http2EndingsTest {
  private final List<RetryEvent> events = new CopyOnWriteArrayList<>();

  /** What the GET after the upgrading one came to, with the plain client or with ours. */
  private String secondGet(boolean ours, Consumer<PushingH2cServer> script) throws Exception {
    HttpClient real = HttpClient.newBuilder().version(HttpClient.Version.HTTP_2).build();
    HttpClient c =
        ours
            ? RetryingHttpClient.wrap(
                real,
                TestEngines.engine(
                    new FakeTime(), Mode.ENFORCE, b -> b, CircuitBreakerPolicy.defaults(), events))
            : real;
    try (PushingH2cServer h2 = PushingH2cServer.withoutPushes()) {
      HttpResponse<String> first =
          c.send(
              HttpRequest.newBuilder(URI.create(h2.url("/v1/first"))).build(),
              HttpResponse.BodyHandlers.ofString());
      assertThat(first.version()).isEqualTo(HttpClient.Version.HTTP_2);
      script.accept(h2);
      try {
        HttpResponse<String> r =
            c.send(
                HttpRequest.newBuilder(URI.create(h2.url("/v1/items"))).build(),
                HttpResponse.BodyHandlers.ofString());
        return r.statusCode() + " " + r.version();
      } catch (IOException e) {
        return "failed: " + e.getMessage();
      }
    }
  }

  @Test
  void aGetWhoseConnectionTheServerEndedWithGoAwayIsRetried() throws Exception {
    Consumer<PushingH2cServer> goAway = h2 -> h2.enqueueGoAway(true);

    assertThat(secondGet(false, goAway)).startsWith("failed: ");
    assertThat(secondGet(true, goAway)).isEqualTo("200 HTTP_2");
    assertThat(events)
        .singleElement()
        .satisfies(e -> assertThat(e.type()).isEqualTo(RetryEvent.Type.RETRY))
        .satisfies(e -> assertThat(e.toString()).contains("outcome=reset"));
  }

  @Test
  void aGetWhoseStreamTheServerRefusedTwiceIsRetried() throws Exception {
    Consumer<PushingH2cServer> refuseTwice =
        h2 ->
            h2.enqueueReset(PushingH2cServer.REFUSED_STREAM)
                .enqueueReset(PushingH2cServer.REFUSED_STREAM);

    assertThat(secondGet(false, refuseTwice)).startsWith("failed: ");
    assertThat(secondGet(true, refuseTwice)).isEqualTo("200 HTTP_2");
    assertThat(events)
        .isNotEmpty()
        .allSatisfy(e -> assertThat(e.type()).isEqualTo(RetryEvent.Type.RETRY))
        .allSatisfy(e -> assertThat(e.toString()).contains("outcome=reset"));
  }
}
