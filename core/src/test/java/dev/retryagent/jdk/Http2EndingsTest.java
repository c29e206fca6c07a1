package dev.retryagent.jdk;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retryagent.engine.RetryEvent;
import dev.retryagent.policy.CircuitBreakerPolicy;
import dev.retryagent.policy.Mode;
import dev.retryagent.testing.FakeTime;
import dev.retryagent.testing.PushingH2cServer;
import dev.retryagent.testing.ScriptedHttpServer;
import dev.retryagent.testing.TestEngines;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Consumer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

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

  /**
   * A POST without key after the upgrading GET, refused unprocessed by a GOAWAY below its stream,
   * the server then listening no more. JDK 17 gives the GOAWAY back ("GOAWAY received"), with and
   * without us, and nothing is retried (a reset). JDK 24+ sends the POST again by itself on a new
   * connection, which is refused: the attempt fails with a {@code ConnectException}. On a client
   * that follows redirects the send watch knows the POST went out, and the engine takes it as sent:
   * no retry, the ConnectException as without us (one retry too few). On a client that follows none
   * (the JDK's default) nothing watches, the ConnectException reads as "never sent", and the engine
   * retries: the server had not processed the refused stream, so the retry is the first request its
   * application can see. Here the server is back for that retry (on the same port, as a restarted
   * one): the application has the POST once, and the call a 200 where the plain client had the
   * ConnectException (a failure the policy retries become a later success). Without us, the same
   * exceptions and a POST that never reached the application. The decorator runs the agent's
   * java.net.http code (JdkRetrying).
   */
  @ParameterizedTest
  @EnumSource(
      value = HttpClient.Redirect.class,
      names = {"NEVER", "NORMAL"})
  void aRefusedPostTheJdkSendsAgainOntoARefusedConnectionReachesTheApplicationAtMostOnce(
      HttpClient.Redirect redirects) throws Exception {
    List<String> outcomes = new ArrayList<>();
    List<ScriptedHttpServer> restarted = new CopyOnWriteArrayList<>();
    for (boolean ours : new boolean[] {false, true}) {
      try (PushingH2cServer h2 = PushingH2cServer.withoutPushes().answeringWholeRequests()) {
        int port = URI.create(h2.url("/")).getPort();
        List<RetryEvent> seen =
            new CopyOnWriteArrayList<RetryEvent>() {
              @Override
              public boolean add(RetryEvent e) {
                if (e.type() == RetryEvent.Type.RETRY && restarted.isEmpty()) {
                  try {
                    restarted.add(ScriptedHttpServer.onPort(port)); // before the retry is sent
                  } catch (IOException failed) {
                    throw new java.io.UncheckedIOException(failed);
                  }
                }
                return super.add(e);
              }
            };
        HttpClient real =
            HttpClient.newBuilder()
                .version(HttpClient.Version.HTTP_2)
                .followRedirects(redirects)
                .build();
        HttpClient c =
            ours
                ? RetryingHttpClient.wrap(
                    real,
                    TestEngines.engine(
                        new FakeTime(),
                        Mode.ENFORCE,
                        b -> b,
                        CircuitBreakerPolicy.defaults(),
                        seen))
                : real;
        HttpResponse<String> first =
            c.send(
                HttpRequest.newBuilder(URI.create(h2.url("/v1/first"))).build(),
                HttpResponse.BodyHandlers.ofString());
        assertThat(first.version()).isEqualTo(HttpClient.Version.HTTP_2);
        h2.enqueueGoAwayThenRefuseConnections();
        String outcome;
        try {
          HttpResponse<String> r =
              c.send(
                  HttpRequest.newBuilder(URI.create(h2.url("/v1/charges")))
                      .POST(HttpRequest.BodyPublishers.ofString("{}"))
                      .build(),
                  HttpResponse.BodyHandlers.ofString());
          outcome = Integer.toString(r.statusCode());
        } catch (IOException e) {
          outcome = e.getClass().getName();
        }
        // Every POST stream the server got (stream 1 is the upgrading GET) was refused unprocessed.
        assertThat(h2.requestStreams()).as("streams").hasSize(2);
        int handled = 0;
        for (ScriptedHttpServer s : restarted) {
          handled += (int) s.requests().stream().filter(q -> q.method.equals("POST")).count();
          s.close();
        }
        restarted.clear();
        outcomes.add(outcome + ", POSTs the application had: " + handled);
        if (ours) {
          events.addAll(seen);
        }
      }
    }
    String plain = outcomes.get(0);
    boolean jdkResends = plain.startsWith("java.net.ConnectException");
    assertThat(jdkResends).as("the JDK resends").isEqualTo(Runtime.version().feature() >= 24);
    boolean watched = redirects != HttpClient.Redirect.NEVER;
    assertThat(plain).endsWith("POSTs the application had: 0");
    assertThat(outcomes.get(1))
        .as("with us")
        .isEqualTo(jdkResends && !watched ? "200, POSTs the application had: 1" : plain);
    assertThat(events.stream().filter(e -> e.type() == RetryEvent.Type.RETRY))
        .hasSize(jdkResends && !watched ? 1 : 0);
  }
}
