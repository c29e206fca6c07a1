package dev.retryagent.internal.observe;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.retryagent.engine.FleetLimits;
import dev.retryagent.engine.FleetRouteCounters;
import dev.retryagent.engine.PermitLimiter;
import dev.retryagent.policy.CircuitBreakerPolicy;
import dev.retryagent.policy.Policy;
import dev.retryagent.policy.RateLimitPolicy;
import dev.retryagent.testing.FakeRequest;
import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

class PrometheusServerTest {
  private static final Pattern SAMPLE =
      Pattern.compile(
          "([a-zA-Z_:][a-zA-Z0-9_:]*)(\\{(?:[a-zA-Z_][a-zA-Z0-9_]*=\"(?:\\\\.|[^\"\\\\])*\""
              + "(?:,[a-zA-Z_][a-zA-Z0-9_]*=\"(?:\\\\.|[^\"\\\\])*\")*)?\\})? (-?[0-9]+)");
  private static final Pattern TYPE = Pattern.compile("# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*) (\\S+)");
  private static final Pattern HELP = Pattern.compile("# HELP ([a-zA-Z_:][a-zA-Z0-9_:]*) .+");

  private final List<String> errors = new CopyOnWriteArrayList<>();
  private final HttpClient client =
      HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
  private PrometheusServer server;

  @AfterEach
  void stop() {
    if (server != null) {
      server.stop();
    }
  }

  private HttpResponse<String> get(String path, String method) throws Exception {
    HttpRequest request =
        HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + server.port() + path))
            .timeout(Duration.ofSeconds(5))
            .method(method, HttpRequest.BodyPublishers.noBody())
            .build();
    return client.send(request, HttpResponse.BodyHandlers.ofString());
  }

  @Test
  void aScrapeReturnsEveryCountInTheTextFormat() throws Exception {
    RetryMetrics m = new RetryMetrics();
    Rig llm = new Rig(Rig.policy("llm"), m);
    llm.call(FakeRequest.get("api.example.com", "/v1/x"), 503, 200);
    Rig search = new Rig(Rig.breakerPolicy("search", CircuitBreakerPolicy.Scope.HOST), m);
    for (int i = 0; i < 4; i++) {
      search.call(FakeRequest.get("search.example.com", "/q"), 503);
    }
    server = new PrometheusServer(m, search.engine, "127.0.0.1", 0, errors::add);

    assertThat(server.start()).isTrue();
    HttpResponse<String> r = get("/metrics", "GET");

    assertThat(r.statusCode()).isEqualTo(200);
    assertThat(r.headers().firstValue("Content-Type"))
        .hasValue("text/plain; version=0.0.4; charset=utf-8");
    String body = r.body();
    assertWellFormed(body);
    assertThat(body.lines())
        .contains(
            "retryagent_calls_total{route=\"llm\",host=\"https://api.example.com:443\"} 1",
            "retryagent_attempts_total{route=\"llm\",host=\"https://api.example.com:443\"} 2",
            "retryagent_retries_total{route=\"llm\",host=\"https://api.example.com:443\"} 1",
            "retryagent_successes_total{route=\"llm\",host=\"https://api.example.com:443\"} 1",
            "retryagent_give_ups_total{route=\"search\",host=\"https://search.example.com:443\","
                + "reason=\"attempts\"} 4",
            "retryagent_breaker_transitions_total{route=\"search\","
                + "host=\"https://search.example.com:443\",from=\"closed\",to=\"open\"} 1",
            "retryagent_breaker_state{host=\"https://search.example.com:443\",state=\"open\"} 1",
            "retryagent_breaker_state{host=\"https://search.example.com:443\",state=\"closed\"} 0",
            "retryagent_breakers{state=\"open\"} 1",
            "retryagent_pending_async_retries 0",
            "retryagent_tracked_hosts 2",
            "# TYPE retryagent_calls_total counter",
            "# TYPE retryagent_pending_async_retries gauge");
    assertThat(get("/", "GET").body()).isEqualTo(server.scrape());
  }

  @Test
  void otherPathsAndMethodsAreRefused() throws Exception {
    server = new PrometheusServer(new RetryMetrics(), null, "127.0.0.1", 0, errors::add);
    server.start();

    assertThat(get("/nope", "GET").statusCode()).isEqualTo(404);
    assertThat(get("/metrics", "POST").statusCode()).isEqualTo(405);
    HttpResponse<String> head = get("/metrics", "HEAD");
    assertThat(head.statusCode()).isEqualTo(200);
    assertThat(head.body()).isEmpty();
  }

  @Test
  void anErrorInAScrapeAnswers500AndIsReportedOnce() throws Exception {
    // The JDK server logs a handler's Error only at TRACE and sent no response: the connection
    // just closed, and nothing said why.
    Rig rig = new Rig(Rig.policy("llm"), new RetryMetrics());
    rig.engine.useFleet(
        new FleetLimits() {
          @Override
          public PermitLimiter limiter(String route, RateLimitPolicy limit, Duration max) {
            throw new UnsupportedOperationException();
          }

          @Override
          public List<FleetRouteCounters> counters() {
            return List.of();
          }

          @Override
          public boolean shared() {
            throw new OutOfMemoryError("the test's");
          }
        });
    server = new PrometheusServer(new RetryMetrics(), rig.engine, "127.0.0.1", 0, errors::add);
    server.start();

    // More scrapes than serving threads: none takes its thread down, each says 500.
    for (int i = 0; i < 3; i++) {
      assertThat(get("/metrics", "GET").statusCode()).isEqualTo(500);
    }
    assertThat(errors)
        .containsExactly("retry-agent: a Prometheus scrape failed: java.lang.OutOfMemoryError");
  }

  @Test
  void anExceptionAfterTheAnswerBeganIsSaidOnceAndNoSecondStatusIsSent() throws Exception {
    // A RuntimeException while the body was written (the 200's headers sent) tried a 500 on top:
    // the JDK server refuses a second status line, so that was only an IOException out of the
    // handler. Now, as for an Error, the 500 only when nothing was sent.
    server = new PrometheusServer(new RetryMetrics(), null, "127.0.0.1", 0, errors::add);
    PrometheusServer.Deadlined serving =
        new PrometheusServer.Deadlined(TimeUnit.SECONDS.toNanos(10), (task, delay) -> () -> true);
    FailingBody exchange = new FailingBody();

    server.handle(exchange, serving);

    assertThat(exchange.statuses).containsExactly(200);
    assertThat(exchange.closed).isTrue();
    assertThat(errors)
        .containsExactly(
            "retry-agent: a Prometheus scrape failed: java.lang.IllegalStateException");
  }

  /** A GET /metrics whose body fails with a RuntimeException at its first write. */
  private static final class FailingBody extends com.sun.net.httpserver.HttpExchange {
    final List<Integer> statuses = new ArrayList<>();
    final com.sun.net.httpserver.Headers responseHeaders = new com.sun.net.httpserver.Headers();
    boolean closed;

    @Override
    public void sendResponseHeaders(int rCode, long responseLength) throws IOException {
      if (!statuses.isEmpty()) {
        throw new IOException("headers already sent"); // as the JDK's exchange
      }
      statuses.add(rCode);
    }

    @Override
    public int getResponseCode() {
      return statuses.isEmpty() ? -1 : statuses.get(0);
    }

    @Override
    public java.io.OutputStream getResponseBody() {
      return new java.io.OutputStream() {
        @Override
        public void write(int b) {
          throw new IllegalStateException("the test's body");
        }

        @Override
        public void write(byte[] b, int off, int len) {
          throw new IllegalStateException("the test's body");
        }
      };
    }

    @Override
    public com.sun.net.httpserver.Headers getResponseHeaders() {
      return responseHeaders;
    }

    @Override
    public URI getRequestURI() {
      return URI.create("/metrics");
    }

    @Override
    public String getRequestMethod() {
      return "GET";
    }

    @Override
    public void close() {
      closed = true;
    }

    @Override
    public com.sun.net.httpserver.Headers getRequestHeaders() {
      return new com.sun.net.httpserver.Headers();
    }

    @Override
    public com.sun.net.httpserver.HttpContext getHttpContext() {
      return null;
    }

    @Override
    public java.io.InputStream getRequestBody() {
      return java.io.InputStream.nullInputStream();
    }

    @Override
    public java.net.InetSocketAddress getRemoteAddress() {
      return null;
    }

    @Override
    public java.net.InetSocketAddress getLocalAddress() {
      return null;
    }

    @Override
    public String getProtocol() {
      return "HTTP/1.1";
    }

    @Override
    public Object getAttribute(String name) {
      return null;
    }

    @Override
    public void setAttribute(String name, Object value) {}

    @Override
    public void setStreams(java.io.InputStream i, java.io.OutputStream o) {}

    @Override
    public com.sun.net.httpserver.HttpPrincipal getPrincipal() {
      return null;
    }
  }

  @Test
  void aClientThatSendsHalfARequestIsDroppedAtTheDeadlineWithoutWaitingForAnotherConnection()
      throws Exception {
    server =
        new PrometheusServer(
            new RetryMetrics(), null, "127.0.0.1", 0, errors::add, null, 200_000_000L, null);
    server.start();

    try (Socket slow = new Socket(InetAddress.getLoopbackAddress(), server.port())) {
      slow.getOutputStream().write("GET /metr".getBytes(StandardCharsets.US_ASCII));
      slow.getOutputStream().flush();
      // No other connection comes: the server closes this one by itself (end of stream, or a
      // reset), rather than holding it and its serving thread until one does.
      slow.setSoTimeout(30_000);
      int read;
      try {
        read = slow.getInputStream().read();
      } catch (java.net.SocketException reset) {
        read = -1;
      }
      assertThat(read).isEqualTo(-1);

      // Nor does it hold the endpoint for later scrapes.
      assertThat(get("/metrics", "GET").statusCode()).isEqualTo(200);
    }
  }

  @Test
  void stalledClientsDoNotDelayAScrapeAndAreClosedByTheirDeadline() throws Exception {
    // Old: one serving thread took exchanges in turn, so six clients that each sent half a request
    // held a scrape 6 x 2 s behind them (its 5 s request timeout expired first). Now a newer
    // connection takes back the thread of the oldest one still reading its request.
    long deadlineNanos = TimeUnit.SECONDS.toNanos(2);
    server =
        new PrometheusServer(
            new RetryMetrics(), null, "127.0.0.1", 0, errors::add, null, deadlineNanos, null);
    server.start();
    List<Socket> stalled = new ArrayList<>();
    try {
      for (int i = 0; i < 6; i++) {
        Socket slow = new Socket(InetAddress.getLoopbackAddress(), server.port());
        stalled.add(slow);
        slow.getOutputStream().write("GET /metr".getBytes(StandardCharsets.US_ASCII));
        slow.getOutputStream().flush();
      }
      // Also clients that connect and send nothing: they hold no serving thread.
      for (int i = 0; i < 4; i++) {
        stalled.add(new Socket(InetAddress.getLoopbackAddress(), server.port()));
      }

      CompletableFuture<Integer> scrape =
          CompletableFuture.supplyAsync(
              () -> {
                try {
                  return get("/metrics", "GET").statusCode();
                } catch (Exception e) {
                  throw new CompletionException(e);
                }
              });
      // Well under the six deadlines it waited behind.
      await().atMost(Duration.ofSeconds(4)).until(scrape::isDone);
      assertThat(scrape.get()).isEqualTo(200);

      // Every half request is closed by the server, at the latest at its deadline (the oldest
      // ones earlier, as newer connections took their threads back), not held.
      for (Socket slow : stalled.subList(0, 6)) {
        slow.setSoTimeout(10_000);
        assertThat(readOrReset(slow)).isEqualTo(-1);
      }
    } finally {
      for (Socket s : stalled) {
        s.close();
      }
    }
  }

  @Test
  void connectionsHoldingHalfARequestAreBoundedTheOldestClosedAtOnce() throws Exception {
    // Old: all of them stayed open until their turn and deadline, so enough stalled clients held
    // any number of file descriptors. No deadline nor read grace ever passes here (a scheduler
    // that never runs its tasks): past its grace the newest reader is as stalled as the others,
    // and its thread is taken back in turn (under a busy CI that came before the check).
    server =
        new PrometheusServer(
            new RetryMetrics(),
            null,
            "127.0.0.1",
            0,
            errors::add,
            null,
            TimeUnit.MINUTES.toNanos(1),
            (task, delayNanos) -> () -> true);
    server.start();
    int bound = PrometheusServer.Deadlined.SERVING_THREADS + PrometheusServer.Deadlined.QUEUED;
    List<Socket> stalled = new ArrayList<>();
    try {
      for (int i = 0; i < bound + 8; i++) {
        stalled.add(halfRequest());
      }
      Set<Socket> closed = new HashSet<>();
      awaitOpenAtMost(stalled, closed, bound);
      // The newest, which a scraper would be, is kept. Opened once the others were dispatched:
      // the JDK server's selector dispatches connections ready together in no set order.
      Socket newest = halfRequest();
      stalled.add(newest);
      awaitOpenAtMost(stalled, closed, bound);
      assertThat(get("/metrics", "GET").statusCode()).isEqualTo(200);
      assertThat(isClosedByServer(newest)).as("the newest closed").isFalse();
    } finally {
      for (Socket s : stalled) {
        s.close();
      }
    }
  }

  /** A connection that sent half a request line and waits, reads timing out at once. */
  private Socket halfRequest() throws IOException {
    Socket slow = new Socket(InetAddress.getLoopbackAddress(), server.port());
    slow.getOutputStream().write("GET /metr".getBytes(StandardCharsets.US_ASCII));
    slow.getOutputStream().flush();
    slow.setSoTimeout(1);
    return slow;
  }

  /** Waits until at most {@code bound} of {@code sockets} are open, adding the closed ones. */
  private static void awaitOpenAtMost(List<Socket> sockets, Set<Socket> closed, int bound) {
    await()
        .atMost(Duration.ofSeconds(20))
        .until(
            () -> {
              for (Socket s : sockets) {
                if (!closed.contains(s) && isClosedByServer(s)) {
                  closed.add(s);
                }
              }
              return sockets.size() - closed.size() <= bound;
            });
  }

  /** True when the server closed {@code s}; false when the read timed out (it is still open). */
  private static boolean isClosedByServer(Socket s) throws IOException {
    try {
      return readOrReset(s) == -1;
    } catch (java.net.SocketTimeoutException open) {
      return false;
    }
  }

  private static int readOrReset(Socket s) throws IOException {
    try {
      return s.getInputStream().read();
    } catch (java.net.SocketException reset) {
      return -1;
    }
  }

  @Test
  void labelValuesAreEscaped() {
    RetryMetrics m = new RetryMetrics();
    Policy p = Rig.policy("we\"ird\\route\nname");
    new Rig(p, m).call(FakeRequest.get("api.example.com", "/v1/x"), 200);

    String text = PrometheusText.render(m, null);

    assertWellFormed(text);
    assertThat(text)
        .contains(
            "retryagent_calls_total{route=\"we\\\"ird\\\\route\\nname\","
                + "host=\"https://api.example.com:443\"} 1");
  }

  @Test
  void aTakenPortNamesTheKeysAndTheFileThatSetIt() throws IOException {
    try (ServerSocket taken = new ServerSocket(0, 1, InetAddress.getByName("127.0.0.1"))) {
      int port = taken.getLocalPort();
      server =
          new PrometheusServer(
              new RetryMetrics(), null, "127.0.0.1", port, errors::add, "/etc/app/retry.yml");

      assertThat(server.start()).isFalse();

      assertThat(errors).hasSize(1);
      assertThat(errors.get(0))
          .startsWith("retry-agent: cannot serve Prometheus metrics on 127.0.0.1:" + port + " (")
          .contains("BindException")
          .contains(
              "check agent.metrics.prometheus.host and agent.metrics.prometheus.port in"
                  + " /etc/app/retry.yml; the application goes on without it");
    }
  }

  @Test
  void aTakenPortIsOneClearErrorAndNoException() throws IOException {
    try (ServerSocket taken = new ServerSocket(0, 1, InetAddress.getByName("127.0.0.1"))) {
      int port = taken.getLocalPort();
      server = new PrometheusServer(new RetryMetrics(), null, "127.0.0.1", port, errors::add);

      assertThat(server.start()).isFalse();
      assertThat(server.start()).isFalse();

      assertThat(server.isRunning()).isFalse();
      assertThat(server.port()).isEqualTo(-1);
      assertThat(errors).hasSize(1);
      assertThat(errors.get(0))
          .startsWith("retry-agent: cannot serve Prometheus metrics on 127.0.0.1:" + port + " (")
          .contains("BindException");
    }
  }

  @Test
  void itsThreadsAreDaemonsSoTheJvmCanExit() {
    Set<Thread> before = new HashSet<>(Thread.getAllStackTraces().keySet());
    server = new PrometheusServer(new RetryMetrics(), null, "127.0.0.1", 0, errors::add);

    server.start();

    Set<Thread> started =
        Thread.getAllStackTraces().keySet().stream()
            .filter(t -> !before.contains(t))
            .collect(Collectors.toSet());
    assertThat(started)
        .extracting(Thread::getName)
        .contains("retry-agent-prometheus-http-dispatcher");
    assertThat(started).allMatch(Thread::isDaemon);
  }

  @Test
  void itsThreadsTheJdkServersOwnIncludedAreTheAgentsWithTheSystemLoader() throws Exception {
    // issue 11: every thread the agent starts is named retry-agent-* and does not keep the loader
    // of the application thread that started it (here, the thread that starts the server).
    Set<Thread> before = new HashSet<>(Thread.getAllStackTraces().keySet());
    server = new PrometheusServer(new RetryMetrics(), null, "127.0.0.1", 0, errors::add);
    ClassLoader application =
        new java.net.URLClassLoader(new java.net.URL[0], getClass().getClassLoader());
    Thread starting = new Thread(server::start, "app-thread");
    starting.setContextClassLoader(application);
    starting.start();
    starting.join();
    assertThat(server.isRunning()).isTrue();
    server.scrape();

    Set<Thread> started =
        Thread.getAllStackTraces().keySet().stream()
            .filter(t -> !before.contains(t) && t != starting)
            .collect(Collectors.toSet());
    assertThat(started).isNotEmpty();
    assertThat(started).allSatisfy(t -> assertThat(t.getName()).startsWith("retry-agent-"));
    assertThat(started)
        .allSatisfy(
            t ->
                assertThat(t.getContextClassLoader()).isSameAs(ClassLoader.getSystemClassLoader()));
  }

  @Test
  void stopFreesThePort() throws Exception {
    server = new PrometheusServer(new RetryMetrics(), null, "127.0.0.1", 0, errors::add);
    server.start();
    int port = server.port();

    server.stop();

    assertThat(server.port()).isEqualTo(-1);
    try (ServerSocket again = new ServerSocket(port, 1, InetAddress.getByName("127.0.0.1"))) {
      assertThat(again.getLocalPort()).isEqualTo(port);
    }
  }

  @Test
  void aBadPortIsRejectedAtConstruction() {
    assertThatThrownBy(
            () -> new PrometheusServer(new RetryMetrics(), null, "127.0.0.1", 70000, null))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("70000");
  }

  /**
   * Every line is a HELP, a TYPE or a sample; HELP and TYPE come once per family, before its
   * samples; no series appears twice.
   */
  static void assertWellFormed(String text) {
    assertThat(text).endsWith("\n");
    Set<String> typed = new HashSet<>();
    Set<String> helped = new HashSet<>();
    Set<String> series = new HashSet<>();
    for (String line : text.split("\n", -1)) {
      if (line.isEmpty()) {
        continue;
      }
      Matcher help = HELP.matcher(line);
      Matcher type = TYPE.matcher(line);
      Matcher sample = SAMPLE.matcher(line);
      if (help.matches()) {
        assertThat(helped.add(help.group(1))).as("HELP once: %s", line).isTrue();
      } else if (type.matches()) {
        assertThat(type.group(2)).isIn("counter", "gauge");
        assertThat(helped).as("HELP before TYPE: %s", line).contains(type.group(1));
        assertThat(typed.add(type.group(1))).as("TYPE once: %s", line).isTrue();
      } else {
        assertThat(sample.matches()).as("a sample: %s", line).isTrue();
        assertThat(typed).as("TYPE before sample: %s", line).contains(sample.group(1));
        assertThat(series.add(sample.group(1) + sample.group(2)))
            .as("series once: %s", line)
            .isTrue();
      }
    }
  }
}
