package dev.retryagent.internal.jdk;

import static org.assertj.core.api.Assertions.assertThat;

import com.sun.net.httpserver.HttpServer;
import dev.retryagent.engine.RetryEngine;
import dev.retryagent.jdk.RetryingHttpClient;
import dev.retryagent.policy.CircuitBreakerPolicy;
import dev.retryagent.policy.Mode;
import dev.retryagent.policy.Policy;
import dev.retryagent.testing.FakeTime;
import dev.retryagent.testing.TestEngines;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.lang.reflect.Field;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * A response the application keeps after a call whose streamed body was teed: the JDK's response
 * keeps the request it sent, and so the attempt's publisher (the tee, or a watch around it). Once
 * the call is over the tee keeps no copy and no call: before, every kept response of a 64 KiB POST
 * held the 64 KiB copy (up to {@code replayBodyLimit}) and the call with its attempts' exceptions.
 * HTTP/1.1 on loopback; the engine's time injected.
 */
class KeptResponseBodyCopyTest {
  private static final int SIZE = 64 * 1024;

  private final FakeTime time = new FakeTime();
  private final AtomicInteger requests = new AtomicInteger();
  private final List<Integer> received = new CopyOnWriteArrayList<>();
  private volatile int failFirst;
  private HttpServer server;

  @BeforeEach
  void start() throws IOException {
    server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
    server.createContext(
        "/",
        ex -> {
          byte[] in = ex.getRequestBody().readAllBytes();
          received.add(in.length);
          int status = requests.incrementAndGet() <= failFirst ? 503 : 200;
          byte[] out = "ok".getBytes();
          ex.sendResponseHeaders(status, out.length);
          ex.getResponseBody().write(out);
          ex.close();
        });
    server.start();
  }

  @AfterEach
  void stop() {
    server.stop(0);
  }

  /**
   * POSTs of 64 KiB from an input stream (teed), sent and sent asynchronously, on a client that
   * follows redirects (the attempts' bodies watched: {@code JdkRequest.SendWatch}) and one that
   * does not, answered 200; and PUTs answered 503 then 200 (retried from the copy). The kept
   * response's publisher keeps no copy (and the tee no call). Before: the tee's chunks held the 64
   * KiB and its call the RetryCall.
   */
  @ParameterizedTest
  @CsvSource({
    "false, false, 0",
    "true, false, 0",
    "false, true, 0",
    "true, true, 0",
    "false, false, 1",
    "true, true, 1"
  })
  void aKeptResponseHoldsNeitherTheCopyNorTheCall(boolean async, boolean follows, int fails)
      throws Exception {
    failFirst = fails;
    HttpClient real =
        HttpClient.newBuilder()
            .version(HttpClient.Version.HTTP_1_1)
            .followRedirects(follows ? HttpClient.Redirect.NORMAL : HttpClient.Redirect.NEVER)
            .build();
    HttpClient client = RetryingHttpClient.wrap(real, engine());
    byte[] bytes = new byte[SIZE];
    Arrays.fill(bytes, (byte) 'x');
    HttpRequest post =
        HttpRequest.newBuilder(
                URI.create("http://127.0.0.1:" + server.getAddress().getPort() + "/v1/items"))
            // A POST is not retried after a 503: the retried call is a PUT (never watched).
            .method(
                fails == 0 ? "POST" : "PUT",
                HttpRequest.BodyPublishers.ofInputStream(() -> stream(bytes)))
            .build();

    HttpResponse<String> response =
        async
            ? client.sendAsync(post, HttpResponse.BodyHandlers.ofString()).get(10, TimeUnit.SECONDS)
            : client.send(post, HttpResponse.BodyHandlers.ofString());

    assertThat(response.statusCode()).isEqualTo(200);
    assertThat(response.body()).isEqualTo("ok");
    assertThat(received).hasSize(fails + 1).allMatch(n -> n == SIZE);
    HttpRequest.BodyPublisher sent = jdks(response).request().bodyPublisher().orElseThrow();
    if (follows && fails == 0) {
      // A redirect's watch (it still holds the call, not the copy: JdkRequest.SendWatch).
      assertThat(sent).isInstanceOf(JdkRequest.SendWatch.class);
      sent = (HttpRequest.BodyPublisher) field(sent, "source");
    }
    if (fails == 0) {
      assertThat(sent).isInstanceOf(ReplayableBody.Tee.class);
      assertThat(field(sent, "chunks")).as("the copy").isNull();
      assertThat(field(sent, "call")).as("the call").isNull();
    } else {
      // The retry sent the copy: that is its body, which the response holds as the JDK's would.
      assertThat(sent).isInstanceOf(ReplayableBody.BufferedPublisher.class);
    }
  }

  private static InputStream stream(byte[] bytes) {
    return new ByteArrayInputStream(bytes);
  }

  /** The JDK's own response under the application's view of it. */
  private static HttpResponse<?> jdks(HttpResponse<?> response) {
    HttpResponse<?> r = response;
    while (r instanceof AttemptsResponse) {
      r = ((AttemptsResponse<?>) r).attempts;
    }
    assertThat(r.getClass().getName()).startsWith("jdk.internal.net.http.");
    return r;
  }

  private static Object field(Object o, String name) throws ReflectiveOperationException {
    Field f = o.getClass().getDeclaredField(name);
    f.setAccessible(true);
    return f.get(o);
  }

  private RetryEngine engine() {
    return TestEngines.builder(
            time,
            Mode.ENFORCE,
            b -> b,
            Policy.defaults().budget(),
            CircuitBreakerPolicy.defaults(),
            Policy.defaults().rateLimit())
        .build();
  }
}
