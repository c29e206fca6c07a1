package dev.retryagent.jdk;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retryagent.engine.RetryEvent;
import dev.retryagent.policy.CircuitBreakerPolicy;
import dev.retryagent.policy.Mode;
import dev.retryagent.testing.FakeTime;
import dev.retryagent.testing.PushingH2cServer;
import dev.retryagent.testing.TestEngines;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** HTTP/2 server pushes of a call that is retried, against a loopback h2c server that pushes. */
class ServerPushTest {
  private PushingH2cServer server;
  private final List<RetryEvent> events = new CopyOnWriteArrayList<>();
  private final HttpClient real =
      HttpClient.newBuilder().version(HttpClient.Version.HTTP_2).build();

  @BeforeEach
  void start() throws Exception {
    server = new PushingH2cServer();
  }

  @AfterEach
  void stop() throws Exception {
    server.close();
  }

  private HttpClient client() {
    return RetryingHttpClient.wrap(
        real,
        TestEngines.engine(
            new FakeTime(), Mode.ENFORCE, b -> b, CircuitBreakerPolicy.defaults(), events));
  }

  /**
   * What the application's push-promise handler and the pushed responses show of the requests, for
   * a GET of {@code client} with its own timeout (the URIs aside, which name the stream).
   */
  private List<String> requestsShown(HttpClient client) throws Exception {
    HttpRequest get =
        HttpRequest.newBuilder(URI.create(server.url("/page")))
            .timeout(Duration.ofSeconds(30))
            .header("Accept", "text/plain")
            .build();
    List<String> shown = new CopyOnWriteArrayList<>();
    List<CompletableFuture<HttpResponse<String>>> pushes = new CopyOnWriteArrayList<>();
    HttpResponse<String> r =
        client
            .sendAsync(
                get,
                HttpResponse.BodyHandlers.ofString(),
                (initiating, push, acceptor) -> {
                  shown.add(
                      "initiating " + initiating.headers().map() + " " + initiating.timeout());
                  shown.add("promised " + push.timeout() + " " + push.bodyPublisher().isPresent());
                  pushes.add(acceptor.apply(HttpResponse.BodyHandlers.ofString()));
                })
            .get(20, TimeUnit.SECONDS);
    shown.add("response " + r.request().headers().map() + " " + r.request().timeout());
    assertThat(pushes).hasSize(1);
    HttpRequest pushed = pushes.get(0).get(20, TimeUnit.SECONDS).request();
    shown.add("pushed " + pushed.timeout() + " " + pushed.bodyPublisher().isPresent());
    return shown;
  }

  /**
   * The JDK shows the request it sent as the initiating one, and makes the promised request (the
   * pushed response's) from it: with an attempt header and an attempt timeout the application saw
   * the agent's copy there (the header, the attempt's timeout), where without the agent it sees its
   * own request's headers and timeout.
   */
  @Test
  void thePushesShowTheApplicationsRequestAsWithoutTheAgent() throws Exception {
    HttpClient client =
        RetryingHttpClient.wrap(
            real,
            TestEngines.engine(
                new FakeTime(),
                Mode.ENFORCE,
                b -> b.attemptHeader("X-Retry-Attempt").perAttemptTimeout(Duration.ofSeconds(20)),
                CircuitBreakerPolicy.defaults(),
                events));

    List<String> plain = requestsShown(real);
    assertThat(requestsShown(client)).isEqualTo(plain);
    assertThat(plain).contains("response {Accept=[text/plain]} Optional[PT30S]");
  }

  /**
   * A call not retried: its pushes reach the application's handler, bodies and all, as without the
   * agent, though they were held back until its response was decided on (they came before it).
   */
  @Test
  void theApplicationsPushHandlerGetsThePushesOfACallNotRetried() throws Exception {
    Map<String, CompletableFuture<HttpResponse<String>>> pushes = new ConcurrentHashMap<>();
    HttpResponse<String> r =
        client()
            .sendAsync(
                HttpRequest.newBuilder(URI.create(server.url("/page"))).build(),
                HttpResponse.BodyHandlers.ofString(),
                (initiating, push, acceptor) ->
                    pushes.put(
                        push.uri().getPath(), acceptor.apply(HttpResponse.BodyHandlers.ofString())))
            .get(20, TimeUnit.SECONDS);

    assertThat(r.body()).isEqualTo("status 200");
    assertThat(pushes).containsOnlyKeys("/pushed-1");
    HttpResponse<String> pushed = pushes.get("/pushed-1").get(20, TimeUnit.SECONDS);
    assertThat(pushed.statusCode()).isEqualTo(200);
    assertThat(pushed.body()).isEqualTo("pushed for stream 1");
  }

  /**
   * Each attempt is a sendAsync of its own, and the JDK hands every push promise of an attempt to
   * the push-promise handler it was given: the application's handler got the pushes of the 503 the
   * retry replaced, besides those of the 200 it received. Without the agent it gets the pushes of
   * the one response it receives; with it, those of the response it receives, and only those.
   */
  @Test
  void theApplicationsPushHandlerGetsThePushesOfTheResponseItReceivesOnly() throws Exception {
    server.enqueue(503);
    HttpClient client = client();
    Map<String, CompletableFuture<HttpResponse<String>>> pushes = new ConcurrentHashMap<>();
    List<String> promised = new CopyOnWriteArrayList<>();
    HttpResponse.PushPromiseHandler<String> handler =
        (initiating, push, acceptor) -> {
          promised.add(push.uri().getPath());
          pushes.put(push.uri().getPath(), acceptor.apply(HttpResponse.BodyHandlers.ofString()));
        };

    HttpResponse<String> r =
        client
            .sendAsync(
                HttpRequest.newBuilder(URI.create(server.url("/page"))).build(),
                HttpResponse.BodyHandlers.ofString(),
                handler)
            .get(20, TimeUnit.SECONDS);

    assertThat(r.statusCode()).isEqualTo(200);
    assertThat(server.requestStreams()).containsExactly(1, 3);
    assertThat(promised).containsExactly("/pushed-3");
    assertThat(pushes.get("/pushed-3").get(20, TimeUnit.SECONDS).body())
        .isEqualTo("pushed for stream 3");
  }

  /**
   * HTTP/2: a 503 released for a retry whose wait ends past the deadline (40 s late, 10 s deadline)
   * is given back as the plain client gives it (status, headers, body), but without its pushes:
   * they were settled as not the caller's (refused) as its head arrived, so the application's
   * push-promise handler hears none (guarantees.md, Load and time 6: a documented difference).
   */
  @Test
  void aResponseGivenBackAfterALateWaitComesWithoutItsPushes() throws Exception {
    FakeTime time = new FakeTime();
    HttpClient client =
        RetryingHttpClient.wrap(
            real,
            TestEngines.engine(
                time,
                Mode.ENFORCE,
                b -> b.deadline(Duration.ofSeconds(10)).retryAfterMax(Duration.ofSeconds(5)),
                CircuitBreakerPolicy.defaults(),
                events));
    time.late(40_000_000_000L);
    List<String> promised = new CopyOnWriteArrayList<>();
    HttpResponse.PushPromiseHandler<String> handler =
        (initiating, push, acceptor) -> promised.add(push.uri().getPath());
    HttpRequest get = HttpRequest.newBuilder(URI.create(server.url("/page"))).build();

    server.enqueue(503, "retry-after", "5");
    HttpResponse<String> plain =
        real.sendAsync(get, HttpResponse.BodyHandlers.ofString(), handler)
            .get(20, TimeUnit.SECONDS);
    assertThat(promised).as("the plain client's").hasSize(1);
    promised.clear();
    server.enqueue(503, "retry-after", "5");
    HttpResponse<String> ours =
        client
            .sendAsync(get, HttpResponse.BodyHandlers.ofString(), handler)
            .get(20, TimeUnit.SECONDS);

    assertThat(ours.statusCode()).isEqualTo(503);
    assertThat(ours.headers().map()).isEqualTo(plain.headers().map());
    assertThat(ours.body()).isEqualTo(plain.body());
    assertThat(ours.version()).isEqualTo(HttpClient.Version.HTTP_2);
    assertThat(promised).isEmpty();
    assertThat(server.requestStreams()).as("one request each, none retried").hasSize(2);
  }
}
