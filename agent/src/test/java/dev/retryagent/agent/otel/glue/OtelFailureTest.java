package dev.retryagent.agent.otel.glue;

import static org.assertj.core.api.Assertions.assertThat;

import com.sun.net.httpserver.HttpServer;
import dev.retryagent.engine.RetryEngine;
import dev.retryagent.engine.Scheduler;
import dev.retryagent.jdk.RetryingHttpClient;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.context.Context;
import io.opentelemetry.context.ContextKey;
import io.opentelemetry.context.Scope;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.lang.reflect.Proxy;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * OpenTelemetry failing under a call (issue 14, "The agent failing"): the glue links to the
 * OpenTelemetry agent's relocated API method by method, at first use, so an agent whose API differs
 * throws a {@code NoSuchMethodError} from making a context current, closing its scope or ending the
 * call's span. A real java.net.http client through the engine, against a loopback server that
 * answers 503 then 200: the application gets the 200 as without tracing, synchronously and
 * asynchronously, and one line says so.
 */
class OtelFailureTest {
  private HttpServer server;
  private final AtomicInteger requests = new AtomicInteger();
  private final ExecutorService retries = Executors.newSingleThreadExecutor();
  private final ByteArrayOutputStream err = new ByteArrayOutputStream();
  private PrintStream stderr;

  @BeforeEach
  void setUp() throws Exception {
    server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
    server.createContext(
        "/",
        exchange -> {
          int status = requests.incrementAndGet() == 1 ? 503 : 200;
          byte[] body = ("status " + status).getBytes(StandardCharsets.UTF_8);
          exchange.sendResponseHeaders(status, body.length);
          exchange.getResponseBody().write(body);
          exchange.close();
        });
    server.start();
    OtelCallContexts.FAILURE_SAID.set(false);
    stderr = System.err;
    System.setErr(new PrintStream(err, true, StandardCharsets.UTF_8));
  }

  @AfterEach
  void tearDown() {
    System.setErr(stderr);
    server.stop(0);
    retries.shutdownNow();
  }

  /** Where the OpenTelemetry agent's API does not have what the glue calls. */
  private static NoSuchMethodError missing(String method) {
    return new NoSuchMethodError("io.opentelemetry.javaagent.shaded..." + method);
  }

  /** A context whose {@code makeCurrent} fails, or whose scope fails to close. */
  private static Context failingContext(boolean failOnClose) {
    Context root = Context.root();
    return new Context() {
      @Override
      public <V> V get(ContextKey<V> key) {
        return root.get(key);
      }

      @Override
      public <V> Context with(ContextKey<V> key, V value) {
        return root.with(key, value);
      }

      @Override
      public Scope makeCurrent() {
        if (!failOnClose) {
          throw missing("Context.makeCurrent()");
        }
        return () -> {
          throw missing("Scope.close()");
        };
      }
    };
  }

  /** A span whose every method fails. */
  private static Span failingSpan() {
    return (Span)
        Proxy.newProxyInstance(
            Span.class.getClassLoader(),
            new Class<?>[] {Span.class},
            (proxy, method, args) -> {
              throw missing("Span." + method.getName() + "()");
            });
  }

  /** Retries at once, on a thread of its own: the test does not wait for a backoff. */
  private final Scheduler atOnce =
      (task, delayNanos) -> {
        Future<?> f = retries.submit(task);
        return () -> f.cancel(false);
      };

  private HttpClient client(boolean failOnClose) {
    Span span = failingSpan();
    RetryEngine engine =
        RetryEngine.builder()
            .sleeper(nanos -> {})
            .scheduler(atOnce)
            .callContexts(
                call ->
                    new OtelCall(
                        null,
                        call.request(),
                        failingContext(failOnClose),
                        failingContext(failOnClose),
                        span,
                        span))
            .build();
    return RetryingHttpClient.wrap(HttpClient.newHttpClient(), engine);
  }

  private HttpRequest request() {
    return HttpRequest.newBuilder(
            URI.create("http://127.0.0.1:" + server.getAddress().getPort() + "/charges"))
        .timeout(Duration.ofSeconds(10))
        .build();
  }

  @ParameterizedTest(name = "failing on {0}")
  @ValueSource(strings = {"makeCurrent", "close"})
  void aSendGetsItsResponseWhenTracingFails(String where) throws Exception {
    HttpResponse<String> r =
        client(where.equals("close")).send(request(), HttpResponse.BodyHandlers.ofString());

    assertThat(r.statusCode()).isEqualTo(200);
    assertThat(r.body()).isEqualTo("status 200");
    assertThat(requests).hasValue(2);
    assertThat(stderrLines())
        .as("said once, by the class and frame, never the message")
        .startsWith("retry-agent: OpenTelemetry failed while ")
        .contains("(java.lang.NoSuchMethodError at ")
        .endsWith("); calls go on, untraced where it fails (said once)" + System.lineSeparator())
        .doesNotContain("javaagent.shaded");
  }

  @ParameterizedTest(name = "failing on {0}")
  @ValueSource(strings = {"makeCurrent", "close"})
  void aSendAsyncCompletesWithItsResponseWhenTracingFails(String where) throws Exception {
    HttpResponse<String> r =
        client(where.equals("close"))
            .sendAsync(request(), HttpResponse.BodyHandlers.ofString())
            .get(10, TimeUnit.SECONDS);

    assertThat(r.statusCode()).isEqualTo(200);
    assertThat(requests).hasValue(2);
  }

  private String stderrLines() {
    return err.toString(StandardCharsets.UTF_8);
  }
}
