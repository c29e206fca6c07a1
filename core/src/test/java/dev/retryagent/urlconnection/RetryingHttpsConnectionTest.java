package dev.retryagent.urlconnection;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.sun.net.httpserver.HttpsConfigurator;
import com.sun.net.httpserver.HttpsServer;
import dev.retryagent.engine.RetryEngine;
import dev.retryagent.engine.RetryEvent;
import dev.retryagent.policy.CircuitBreakerPolicy;
import dev.retryagent.policy.Mode;
import dev.retryagent.policy.UnsafeMethods;
import dev.retryagent.testing.FakeTime;
import dev.retryagent.testing.TestEngines;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URL;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyStore;
import java.security.cert.X509Certificate;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import javax.net.ssl.HostnameVerifier;
import javax.net.ssl.HttpsURLConnection;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLHandshakeException;
import javax.net.ssl.SSLSocketFactory;
import javax.net.ssl.TrustManagerFactory;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * https: the facade is an {@link HttpsURLConnection}; every attempt trusts the server exactly as
 * the application's connection was told to (its own socket factory and hostname verifier), and the
 * TLS answers come from the final attempt. The certificate is made for the test by {@code keytool}
 * and trusted by nothing else.
 */
class RetryingHttpsConnectionTest {
  private static final char[] PASSWORD = "changeit".toCharArray();

  @TempDir static Path dir;
  private static HttpsServer server;
  private static SSLContext trusting;
  private static SSLContext serverContext;
  private static final AtomicInteger served = new AtomicInteger();
  private static final List<String> bodies = new CopyOnWriteArrayList<>();
  private static volatile int failFirst;

  @BeforeAll
  static void start() throws Exception {
    Path keystore = dir.resolve("server.p12");
    Process keytool =
        new ProcessBuilder(
                Path.of(System.getProperty("java.home"), "bin", "keytool").toString(),
                "-genkeypair",
                "-keystore",
                keystore.toString(),
                "-storetype",
                "PKCS12",
                "-storepass",
                new String(PASSWORD),
                "-alias",
                "server",
                "-keyalg",
                "EC",
                "-dname",
                "CN=retry-agent-test",
                "-ext",
                "SAN=ip:127.0.0.1",
                "-validity",
                "2")
            .redirectErrorStream(true)
            .start();
    assertThat(keytool.waitFor(60, TimeUnit.SECONDS)).isTrue();
    assertThat(keytool.exitValue())
        .as(new String(keytool.getInputStream().readAllBytes()))
        .isZero();
    KeyStore ks = KeyStore.getInstance("PKCS12");
    try (InputStream in = Files.newInputStream(keystore)) {
      ks.load(in, PASSWORD);
    }
    KeyManagerFactory kmf = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
    kmf.init(ks, PASSWORD);
    serverContext = SSLContext.getInstance("TLS");
    serverContext.init(kmf.getKeyManagers(), null, null);

    KeyStore trust = KeyStore.getInstance("PKCS12");
    trust.load(null, null);
    trust.setCertificateEntry("server", ks.getCertificate("server"));
    TrustManagerFactory tmf =
        TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
    tmf.init(trust);
    trusting = SSLContext.getInstance("TLS");
    trusting.init(null, tmf.getTrustManagers(), null);

    server = HttpsServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
    server.setHttpsConfigurator(new HttpsConfigurator(serverContext));
    server.createContext(
        "/",
        exchange -> {
          int n = served.incrementAndGet();
          bodies.add(new String(exchange.getRequestBody().readAllBytes(), StandardCharsets.UTF_8));
          byte[] body = (n <= failFirst ? "busy" : "secure").getBytes(StandardCharsets.UTF_8);
          exchange.sendResponseHeaders(n <= failFirst ? 503 : 200, body.length);
          try (OutputStream out = exchange.getResponseBody()) {
            out.write(body);
          }
        });
    server.start();
  }

  @AfterAll
  static void stop() {
    server.stop(0);
  }

  private final FakeTime time = new FakeTime();
  private final List<RetryEvent> events = new CopyOnWriteArrayList<>();

  private HttpsURLConnection open(String path) throws IOException {
    served.set(0);
    bodies.clear();
    RetryEngine engine =
        TestEngines.engine(
            time,
            Mode.ENFORCE,
            b -> b.unsafeMethods(UnsafeMethods.ALWAYS),
            CircuitBreakerPolicy.defaults(),
            events);
    URL url = new URL("https://127.0.0.1:" + server.getAddress().getPort() + path);
    return (HttpsURLConnection) RetryingUrlConnections.open(url, engine);
  }

  @Test
  void everyAttemptTrustsTheServerAsTheApplicationsConnectionWasTold() throws Exception {
    failFirst = 2;
    HttpsURLConnection c = open("/v1/items");
    javax.net.ssl.SSLSocketFactory factory = trusting.getSocketFactory();
    c.setSSLSocketFactory(factory);
    c.setHostnameVerifier((host, session) -> host.equals("127.0.0.1"));

    assertThat(c.getResponseCode()).isEqualTo(200);
    assertThat(c.getCipherSuite()).isNotEmpty();
    assertThat(((X509Certificate) c.getServerCertificates()[0]).getSubjectX500Principal().getName())
        .isEqualTo("CN=retry-agent-test");
    assertThat(c.getSSLSocketFactory()).isSameAs(factory);
    try (InputStream in = c.getInputStream()) {
      assertThat(new String(in.readAllBytes(), StandardCharsets.UTF_8)).isEqualTo("secure");
    }
    assertThat(served).hasValue(3);
  }

  @Test
  void aFixedLengthBodyIsSentWholeOnEveryAttempt() throws Exception {
    failFirst = 1;
    HttpsURLConnection c = open("/v1/upload");
    c.setSSLSocketFactory(trusting.getSocketFactory());
    c.setHostnameVerifier((host, session) -> true);
    c.setRequestMethod("PUT");
    c.setDoOutput(true);
    byte[] body = "x".repeat(4096).getBytes(StandardCharsets.UTF_8);
    c.setFixedLengthStreamingMode(body.length);
    try (OutputStream out = c.getOutputStream()) {
      out.write(body);
    }

    assertThat(c.getResponseCode()).isEqualTo(200);
    assertThat(bodies).hasSize(2).allSatisfy(b -> assertThat(b).hasSize(4096));
  }

  @Test
  void withoutTheApplicationsTrustTheHandshakeFailsAndIsNotRetried() throws Exception {
    failFirst = 0;
    HttpsURLConnection c = open("/v1/items");

    assertThatThrownBy(c::getResponseCode).isInstanceOf(SSLHandshakeException.class);
    assertThat(served).hasValue(0);
    assertThat(events).filteredOn(e -> e.type() == RetryEvent.Type.RETRY).isEmpty();
  }

  @Test
  void aSocketFactorySetAfterARetriedConnectIsStillAnsweredAfterACallThatEndedWithoutAResponse()
      throws Exception {
    // connect() is refused, retried, and attempt 2 connects (the server starts during the wait);
    // the application sets another factory and verifier, which the JDK takes after connect() and
    // answers. The response, a 503, is retried, and that wait is interrupted: the call ends with
    // an exception of the agent's and no connection to hand over. The getters answered the
    // template's, what attempt 1 had, where the application's own connection answers what it was
    // given last.
    int port;
    // Bound, never listening: refused, and no one else's, until the wait starts the server on it
    // (a port found free and closed could be taken meanwhile; RefusingPort).
    java.net.Socket reserved = new java.net.Socket();
    reserved.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
    port = reserved.getLocalPort();
    HttpsServer[] late = new HttpsServer[1];
    AtomicInteger sleeps = new AtomicInteger();
    RetryEngine engine =
        RetryEngine.builder()
            .clock(time)
            .sleeper(
                nanos -> {
                  if (sleeps.incrementAndGet() > 1) {
                    throw new InterruptedException(); // interrupted while it waits to retry
                  }
                  try {
                    reserved.close();
                    late[0] = busyServer(port);
                  } catch (IOException e) {
                    throw new IllegalStateException(e);
                  }
                })
            .scheduler(time)
            .build();
    try {
      URL url = new URL("https://127.0.0.1:" + port + "/v1/items");
      HttpsURLConnection c = (HttpsURLConnection) RetryingUrlConnections.open(url, engine);
      c.setSSLSocketFactory(trusting.getSocketFactory());
      c.setHostnameVerifier((host, session) -> true);
      c.connect();
      SSLSocketFactory after = new Delegating(trusting.getSocketFactory());
      c.setSSLSocketFactory(after);
      HostnameVerifier verifier = (host, session) -> true;
      c.setHostnameVerifier(verifier);
      try {
        assertThatThrownBy(c::getResponseCode).isInstanceOf(java.io.InterruptedIOException.class);
      } finally {
        Thread.interrupted();
      }

      assertThat(sleeps).hasValue(2);
      assertThat(c.getSSLSocketFactory()).isSameAs(after);
      assertThat(c.getHostnameVerifier()).isSameAs(verifier);
    } finally {
      reserved.close();
      if (late[0] != null) {
        late[0].stop(0);
      }
    }
  }

  /** An https server on {@code port} that answers every request 503. */
  private static HttpsServer busyServer(int port) throws IOException {
    HttpsServer s =
        HttpsServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), port), 0);
    s.setHttpsConfigurator(new HttpsConfigurator(serverContext));
    s.createContext(
        "/",
        exchange -> {
          exchange.getRequestBody().readAllBytes();
          exchange.sendResponseHeaders(503, -1);
          exchange.close();
        });
    s.start();
    return s;
  }

  /** Another factory, the same trust. */
  private static final class Delegating extends SSLSocketFactory {
    private final SSLSocketFactory f;

    Delegating(SSLSocketFactory f) {
      this.f = f;
    }

    @Override
    public String[] getDefaultCipherSuites() {
      return f.getDefaultCipherSuites();
    }

    @Override
    public String[] getSupportedCipherSuites() {
      return f.getSupportedCipherSuites();
    }

    @Override
    public java.net.Socket createSocket(java.net.Socket s, String host, int port, boolean close)
        throws IOException {
      return f.createSocket(s, host, port, close);
    }

    @Override
    public java.net.Socket createSocket(String host, int port) throws IOException {
      return f.createSocket(host, port);
    }

    @Override
    public java.net.Socket createSocket(String host, int port, InetAddress local, int localPort)
        throws IOException {
      return f.createSocket(host, port, local, localPort);
    }

    @Override
    public java.net.Socket createSocket(InetAddress host, int port) throws IOException {
      return f.createSocket(host, port);
    }

    @Override
    public java.net.Socket createSocket(
        InetAddress address, int port, InetAddress local, int localPort) throws IOException {
      return f.createSocket(address, port, local, localPort);
    }
  }

  @Test
  void tlsQuestionsBeforeTheExchangeGetTheJdksAnswer() throws Exception {
    HttpsURLConnection c = open("/v1/items");

    assertThatThrownBy(c::getCipherSuite)
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("not yet");
  }
}
