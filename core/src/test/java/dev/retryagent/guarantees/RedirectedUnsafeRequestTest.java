package dev.retryagent.guarantees;

import static dev.retryagent.testing.ScriptedHttpServer.Action.status;
import static org.assertj.core.api.Assertions.assertThat;

import dev.retryagent.apache4.RetryingCloseableHttpClient;
import dev.retryagent.apache5.RetryExecHandler;
import dev.retryagent.engine.RetryEngine;
import dev.retryagent.engine.RetryEvent;
import dev.retryagent.jdk.RetryingHttpClient;
import dev.retryagent.policy.CircuitBreakerPolicy;
import dev.retryagent.policy.Mode;
import dev.retryagent.policy.UnsafeMethods;
import dev.retryagent.testing.FakeTime;
import dev.retryagent.testing.RefusingPort;
import dev.retryagent.testing.ScriptedHttpServer;
import dev.retryagent.testing.TestEngines;
import dev.retryagent.urlconnection.RetryingUrlConnections;
import java.io.IOException;
import java.io.OutputStream;
import java.net.HttpURLConnection;
import java.net.URI;
import java.net.URL;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.apache.http.impl.client.LaxRedirectStrategy;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * A POST without key that the client follows with a redirect (303: a GET; 307: the POST again)
 * whose {@code Location} refuses the connection: the attempt fails with the client's connect
 * failure, which alone reads as "the request was never sent". It was sent, and answered: the server
 * may have acted on it. Before, every adapter retried the call (the default {@code unsafeMethods:
 * if-not-sent} retries a connect failure), and the server got the POST three times where the client
 * alone sent it once. Side by side, each client alone and with the library's adapter (the agent's,
 * for the JDK's clients and Apache's, run the same code), on the same loopback server, which counts
 * what reached it. OkHttp: {@code okhttp.RedirectedPostTest}, run on each OkHttp version.
 */
class RedirectedUnsafeRequestTest {
  enum Client {
    JDK_SEND,
    JDK_SEND_ASYNC,
    URL_CONNECTION,
    APACHE5,
    APACHE4
  }

  private ScriptedHttpServer server;
  private final FakeTime time = new FakeTime();
  private final List<RetryEvent> events = new CopyOnWriteArrayList<>();
  private RefusingPort refusing;
  private String dead;

  @BeforeEach
  void start() throws IOException {
    server = new ScriptedHttpServer();
    refusing = new RefusingPort();
    dead = refusing.url("/gone");
  }

  @AfterEach
  void stop() throws IOException {
    server.close();
    refusing.close();
  }

  private RetryEngine engine(UnsafeMethods unsafe) {
    return TestEngines.engine(
        time,
        Mode.ENFORCE,
        r -> r.maxAttempts(3).unsafeMethods(unsafe),
        CircuitBreakerPolicy.defaults(),
        events);
  }

  static List<Arguments> clientsAndRedirects() {
    List<Arguments> all = new java.util.ArrayList<>();
    for (Client c : Client.values()) {
      for (int code : new int[] {303, 307}) {
        all.add(Arguments.of(c, code));
      }
    }
    return all;
  }

  /**
   * The paths the server got, then what the application got: the status, or the failure's class.
   */
  private List<String> post(Client client, RetryEngine engine, String url, String key)
      throws Exception {
    int before = server.requestCount();
    String got = call(client, engine, url, key);
    List<String> seen =
        server.requests().subList(before, server.requestCount()).stream()
            .map(r -> r.method + " " + r.path)
            .collect(Collectors.toList());
    seen.add(got);
    return seen;
  }

  private String call(Client client, RetryEngine engine, String url, String key) throws Exception {
    try {
      switch (client) {
        case JDK_SEND:
        case JDK_SEND_ASYNC:
          return jdk(client, engine, url, key);
        case URL_CONNECTION:
          return urlConnection(engine, url, key);
        case APACHE5:
          return apache5(engine, url, key);
        default:
          return apache4(engine, url, key);
      }
    } catch (IOException e) {
      return e.getClass().getName();
    }
  }

  private static String jdk(Client way, RetryEngine engine, String url, String key)
      throws Exception {
    HttpClient real = HttpClient.newBuilder().followRedirects(HttpClient.Redirect.NORMAL).build();
    HttpClient client = engine == null ? real : RetryingHttpClient.wrap(real, engine);
    HttpRequest.Builder b =
        HttpRequest.newBuilder(URI.create(url)).POST(HttpRequest.BodyPublishers.ofString("{}"));
    if (key != null) {
      b.header("Idempotency-Key", key);
    }
    if (way == Client.JDK_SEND) {
      return "" + client.send(b.build(), HttpResponse.BodyHandlers.ofString()).statusCode();
    }
    try {
      return ""
          + client
              .sendAsync(b.build(), HttpResponse.BodyHandlers.ofString())
              .get(20, TimeUnit.SECONDS)
              .statusCode();
    } catch (ExecutionException e) {
      throw (Exception) e.getCause();
    }
  }

  private static String urlConnection(RetryEngine engine, String url, String key) throws Exception {
    URL u = new URL(url);
    HttpURLConnection c =
        (HttpURLConnection)
            (engine == null ? u.openConnection() : RetryingUrlConnections.open(u, engine));
    c.setInstanceFollowRedirects(true);
    c.setRequestMethod("POST");
    c.setDoOutput(true);
    if (key != null) {
      c.setRequestProperty("Idempotency-Key", key);
    }
    try (OutputStream out = c.getOutputStream()) {
      out.write("{}".getBytes(StandardCharsets.UTF_8));
    }
    return "" + c.getResponseCode();
  }

  private static String apache5(RetryEngine engine, String url, String key) throws Exception {
    org.apache.hc.client5.http.impl.classic.HttpClientBuilder b =
        org.apache.hc.client5.http.impl.classic.HttpClients.custom();
    try (org.apache.hc.client5.http.impl.classic.CloseableHttpClient c =
        engine == null ? b.build() : RetryExecHandler.addTo(b, engine).build()) {
      org.apache.hc.client5.http.classic.methods.HttpPost post =
          new org.apache.hc.client5.http.classic.methods.HttpPost(url);
      if (key != null) {
        post.setHeader("Idempotency-Key", key);
      }
      post.setEntity(new org.apache.hc.core5.http.io.entity.StringEntity("{}"));
      return c.execute(post, r -> "" + r.getCode());
    }
  }

  private static String apache4(RetryEngine engine, String url, String key) throws Exception {
    // HttpClient 4.5 follows a 307 of a POST only with the lax strategy (a 303 always).
    org.apache.http.impl.client.HttpClientBuilder b =
        org.apache.http.impl.client.HttpClients.custom()
            .setRedirectStrategy(new LaxRedirectStrategy());
    try (org.apache.http.impl.client.CloseableHttpClient c =
        engine == null ? b.build() : RetryingCloseableHttpClient.wrap(b, engine)) {
      org.apache.http.client.methods.HttpPost post =
          new org.apache.http.client.methods.HttpPost(url);
      if (key != null) {
        post.setHeader("Idempotency-Key", key);
      }
      post.setEntity(new org.apache.http.entity.StringEntity("{}", "UTF-8"));
      return c.execute(post, r -> "" + r.getStatusLine().getStatusCode());
    }
  }

  private long retries() {
    return events.stream().filter(e -> e.type() == RetryEvent.Type.RETRY).count();
  }

  @ParameterizedTest
  @MethodSource("clientsAndRedirects")
  void aPostRedirectedToARefusingHostIsNotSentAgain(Client client, int code) throws Exception {
    server.otherwise(status(code).header("Location", dead));
    String url = server.url("/pay");

    List<String> plain = post(client, null, url, null);
    List<String> ours = post(client, engine(UnsafeMethods.IF_NOT_SENT), url, null);

    assertThat(plain).startsWith("POST /pay").endsWith(plain.get(plain.size() - 1));
    assertThat(plain.get(plain.size() - 1)).endsWith("ConnectException");
    // Before: POST /pay three times, then the ConnectException.
    assertThat(ours).isEqualTo(plain);
    assertThat(retries()).isZero();
  }

  @ParameterizedTest
  @EnumSource(Client.class)
  void aPostWhoseOwnConnectionIsRefusedIsStillRetried(Client client) throws Exception {
    // The same client, redirects followed: nothing of the POST went out, so the policy's retry of
    // a connect failure still holds (the watch for a redirect's hop says nothing here).
    List<String> ours = post(client, engine(UnsafeMethods.IF_NOT_SENT), dead, null);

    assertThat(ours).hasSize(1);
    assertThat(ours.get(0)).endsWith("ConnectException");
    assertThat(retries()).isEqualTo(2);
  }

  @ParameterizedTest
  @EnumSource(Client.class)
  void aKeyedPostRedirectedToARefusingHostIsRetriedAsAfterAnyFailureOnceSent(Client client)
      throws Exception {
    // With its key, under if-idempotency-key, a failure after sending is retried: the redirect's
    // connect failure too (the server deduplicates by the key).
    server.otherwise(status(307).header("Location", dead));

    List<String> ours =
        post(client, engine(UnsafeMethods.IF_IDEMPOTENCY_KEY), server.url("/pay"), "k-1");

    assertThat(ours)
        .containsExactly(
            "POST /pay", "POST /pay", "POST /pay", ours.get(3)); // the client's ConnectException
    assertThat(ours.get(3)).endsWith("ConnectException");
    assertThat(server.requests()).extracting(r -> r.header("Idempotency-Key")).containsOnly("k-1");
  }

  /**
   * java.net.http, an application's own {@code HttpRequest} POST without body publisher, answered
   * 307 to a refusing host: the JDK sends it, and the 307's hop, without asking anything of ours
   * once connected, so nothing watched it, the connect failure read as "never sent", and the server
   * got the POST three times where the client alone sent it once.
   */
  @ParameterizedTest
  @org.junit.jupiter.params.provider.ValueSource(booleans = {false, true})
  void aPostWithoutPublisherRedirectedToARefusingHostIsNotSentAgain(boolean async)
      throws Exception {
    server.otherwise(status(307).header("Location", dead));
    String url = server.url("/pay");

    List<String> plain = postWithoutPublisher(null, url, async);
    List<String> ours = postWithoutPublisher(engine(UnsafeMethods.IF_NOT_SENT), url, async);

    assertThat(plain).containsExactly("POST /pay", "java.net.ConnectException");
    // Before: POST /pay three times, then the ConnectException.
    assertThat(ours).isEqualTo(plain);
    assertThat(retries()).isZero();
  }

  @org.junit.jupiter.api.Test
  void aPostWithoutPublisherWhoseOwnConnectionIsRefusedIsNotRetriedEither() throws Exception {
    // The price of judging it unwatched: nothing tells a refused first connection from a refused
    // hop, so the POST is taken as possibly sent (one retry too few, never one too many). With
    // redirects not followed, it is retried as before.
    assertThat(postWithoutPublisher(engine(UnsafeMethods.IF_NOT_SENT), dead, false))
        .containsExactly("java.net.ConnectException");
    assertThat(retries()).isZero();

    HttpClient noRedirects = HttpClient.newHttpClient();
    HttpClient client = RetryingHttpClient.wrap(noRedirects, engine(UnsafeMethods.IF_NOT_SENT));
    try {
      client.send(new NoPublisher(URI.create(dead)), HttpResponse.BodyHandlers.ofString());
    } catch (IOException e) {
      assertThat(e).isInstanceOf(java.net.ConnectException.class);
    }
    assertThat(retries()).isEqualTo(2);
  }

  private List<String> postWithoutPublisher(RetryEngine engine, String url, boolean async)
      throws Exception {
    int before = server.requestCount();
    HttpClient real = HttpClient.newBuilder().followRedirects(HttpClient.Redirect.NORMAL).build();
    HttpClient client = engine == null ? real : RetryingHttpClient.wrap(real, engine);
    HttpRequest request = new NoPublisher(URI.create(url));
    String got;
    try {
      got =
          ""
              + (async
                  ? client
                      .sendAsync(request, HttpResponse.BodyHandlers.ofString())
                      .get(20, TimeUnit.SECONDS)
                      .statusCode()
                  : client.send(request, HttpResponse.BodyHandlers.ofString()).statusCode());
    } catch (ExecutionException e) {
      got = e.getCause().getClass().getName();
    } catch (IOException e) {
      got = e.getClass().getName();
    }
    List<String> seen =
        server.requests().subList(before, server.requestCount()).stream()
            .map(r -> r.method + " " + r.path)
            .collect(Collectors.toList());
    seen.add(got);
    return seen;
  }

  /** An application's own POST without body publisher. */
  private static final class NoPublisher extends HttpRequest {
    private final URI uri;

    NoPublisher(URI uri) {
      this.uri = uri;
    }

    @Override
    public java.util.Optional<BodyPublisher> bodyPublisher() {
      return java.util.Optional.empty();
    }

    @Override
    public String method() {
      return "POST";
    }

    @Override
    public java.util.Optional<java.time.Duration> timeout() {
      return java.util.Optional.empty();
    }

    @Override
    public boolean expectContinue() {
      return false;
    }

    @Override
    public URI uri() {
      return uri;
    }

    @Override
    public java.util.Optional<HttpClient.Version> version() {
      return java.util.Optional.empty();
    }

    @Override
    public java.net.http.HttpHeaders headers() {
      return java.net.http.HttpHeaders.of(java.util.Map.of(), (a, b) -> true);
    }
  }

  /**
   * HttpURLConnection, a POST answered 307 to its own URL, whose listener has closed by then: the
   * JDK follows to the very same URL and its connection is refused. The watch compared the
   * connection's {@code getURL()} with the request's as text, and saw no redirect: the failure read
   * as "never sent", and the call was retried (the listener back by then), the server getting the
   * POST twice where the client alone sent it once.
   */
  @org.junit.jupiter.api.Test
  void aPostRedirectedToItsOwnUrlThatThenRefusesIsNotSentAgain() throws Exception {
    try (SelfRedirect plainServer = new SelfRedirect()) {
      String plain = call(Client.URL_CONNECTION, null, plainServer.url(), null);
      assertThat(plain).endsWith("ConnectException");
      assertThat(plainServer.posts()).isEqualTo(1);
    }
    try (SelfRedirect server = new SelfRedirect()) {
      // Were the call retried, its next attempt would find the host listening again.
      RetryEngine engine =
          dev.retryagent.engine.RetryEngine.builder()
              .clock(time)
              .sleeper(time)
              .scheduler(time)
              .mode(Mode.ENFORCE)
              .policy(
                  new dev.retryagent.policy.Policy(
                      "test",
                      dev.retryagent.policy.RetryPolicy.builder()
                          .maxAttempts(3)
                          .unsafeMethods(UnsafeMethods.IF_NOT_SENT)
                          .build(),
                      dev.retryagent.policy.Policy.defaults().budget(),
                      CircuitBreakerPolicy.defaults(),
                      dev.retryagent.policy.Policy.defaults().rateLimit()))
              .listener(
                  new dev.retryagent.engine.RetryListener() {
                    @Override
                    public void onRetry(RetryEvent e) {
                      events.add(e);
                      server.listenAgain();
                    }
                  })
              .build();

      String ours = call(Client.URL_CONNECTION, engine, server.url(), null);

      // Before: 200 from the second attempt, the server having got the POST twice.
      assertThat(ours).endsWith("ConnectException");
      assertThat(server.posts()).isEqualTo(1);
      assertThat(retries()).isZero();
    }
  }

  /**
   * A loopback host that answers the first POST with a 307 to the same URL, having stopped
   * listening first (so the JDK's follow-up is refused), and every POST after {@link #listenAgain}
   * with a 200; it counts the POSTs it read.
   */
  private static final class SelfRedirect implements AutoCloseable {
    private final java.util.concurrent.atomic.AtomicInteger posts =
        new java.util.concurrent.atomic.AtomicInteger();
    private final int port;
    private volatile java.net.ServerSocket listening;
    private final List<Thread> threads = new CopyOnWriteArrayList<>();

    SelfRedirect() throws IOException {
      java.net.ServerSocket s = new java.net.ServerSocket();
      s.setReuseAddress(true);
      s.bind(new java.net.InetSocketAddress(java.net.InetAddress.getByName("127.0.0.1"), 0));
      port = s.getLocalPort();
      serve(s, true);
    }

    String url() {
      return "http://127.0.0.1:" + port + "/pay";
    }

    int posts() {
      return posts.get();
    }

    void listenAgain() {
      try {
        java.net.ServerSocket s = new java.net.ServerSocket();
        s.setReuseAddress(true);
        s.bind(new java.net.InetSocketAddress(java.net.InetAddress.getByName("127.0.0.1"), port));
        serve(s, false);
      } catch (IOException e) {
        throw new java.io.UncheckedIOException(e);
      }
    }

    private void serve(java.net.ServerSocket s, boolean redirectOnce) {
      listening = s;
      Thread t =
          new Thread(
              () -> {
                try {
                  while (true) {
                    try (java.net.Socket c = s.accept()) {
                      RawRequests.read(c.getInputStream());
                      posts.incrementAndGet();
                      String head;
                      if (redirectOnce) {
                        s.close(); // the follow-up to the same URL is refused
                        head = "HTTP/1.1 307 Temporary Redirect\r\nLocation: " + url() + "\r\n";
                      } else {
                        head = "HTTP/1.1 200 OK\r\n";
                      }
                      c.getOutputStream()
                          .write(
                              (head + "Content-Length: 0\r\nConnection: close\r\n\r\n")
                                  .getBytes(StandardCharsets.US_ASCII));
                      c.getOutputStream().flush();
                    }
                  }
                } catch (IOException closed) {
                  // the listener closed: done
                }
              },
              "self-redirect-" + port);
      t.setDaemon(true);
      threads.add(t);
      t.start();
    }

    @Override
    public void close() throws IOException {
      listening.close();
      for (Thread t : threads) {
        try {
          t.join(5_000);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      }
    }
  }
}
