package dev.retryagent.guarantees;

import static dev.retryagent.testing.ScriptedHttpServer.Action.ok;
import static dev.retryagent.testing.ScriptedHttpServer.Action.status;
import static org.assertj.core.api.Assertions.assertThat;

import dev.retryagent.engine.RetryEngine;
import dev.retryagent.engine.RetryEvent;
import dev.retryagent.policy.CircuitBreakerPolicy;
import dev.retryagent.policy.Mode;
import dev.retryagent.testing.FakeTime;
import dev.retryagent.testing.ScriptedHttpServer;
import dev.retryagent.testing.TestEngines;
import java.io.IOException;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * A 503 with two {@code Retry-After} lines, 2 and 7 seconds, in either order, then a 200:
 * java.net.http and Apache HttpClient read the first line, OkHttp and HttpURLConnection the last,
 * and each adapter took its client's, so one response was waited for 2 s or 7 s depending on the
 * client. Every client now waits the longest, 7 s, through a real loopback server.
 */
class RetryAfterLinesTest {
  private static final long SEVEN_SECONDS = TimeUnit.SECONDS.toNanos(7);

  private ScriptedHttpServer server;
  private final FakeTime time = new FakeTime();
  private final List<RetryEvent> events = new CopyOnWriteArrayList<>();
  private RetryEngine engine;

  /** The server's script for {@code order} ("2,7": those lines in that order); the url to call. */
  private String start(String order) throws IOException {
    server = new ScriptedHttpServer();
    server.enqueue(status(503).headerLines("Retry-After", order.split(",")), ok("done"));
    engine =
        TestEngines.engine(time, Mode.ENFORCE, r -> r, CircuitBreakerPolicy.defaults(), events);
    return server.url("/x");
  }

  @AfterEach
  void stop() throws IOException {
    server.close();
  }

  /** Every client, each with the lines in both orders. */
  static Stream<Arguments> clientsAndOrders() {
    Stream.Builder<Arguments> b = Stream.builder();
    for (EveryClient client : EveryClient.values()) {
      b.add(Arguments.of(client, "2,7")).add(Arguments.of(client, "7,2"));
    }
    return b.build();
  }

  @ParameterizedTest(name = "{0} {1}")
  @MethodSource("clientsAndOrders")
  void everyClientWaitsTheLongestLine(EveryClient client, String order) throws Exception {
    String url = start(order);
    assertThat(client.send(engine, "GET", url)).isEqualTo(200);
    assertWaitedTheLongest();
  }

  /** One retry, after 7 s whichever line came first. */
  private void assertWaitedTheLongest() {
    assertThat(server.requestCount()).isEqualTo(2);
    assertThat(events)
        .filteredOn(e -> e.type() == RetryEvent.Type.RETRY)
        .extracting(RetryEvent::delayNanos)
        .containsExactly(SEVEN_SECONDS);
  }
}
