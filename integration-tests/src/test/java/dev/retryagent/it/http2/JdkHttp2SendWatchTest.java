package dev.retryagent.it.http2;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retryagent.engine.RetryEngine;
import dev.retryagent.engine.RetryEvent;
import dev.retryagent.it.harness.TlsCountingServer;
import dev.retryagent.jdk.RetryingHttpClient;
import dev.retryagent.policy.CircuitBreakerPolicy;
import dev.retryagent.policy.Mode;
import dev.retryagent.policy.UnsafeMethods;
import dev.retryagent.testing.FakeTime;
import dev.retryagent.testing.RefusingPort;
import dev.retryagent.testing.TestEngines;
import java.io.IOException;
import java.io.InputStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyStore;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManagerFactory;
import org.eclipse.jetty.alpn.server.ALPNServerConnectionFactory;
import org.eclipse.jetty.http.HttpHeader;
import org.eclipse.jetty.http2.server.HTTP2CServerConnectionFactory;
import org.eclipse.jetty.http2.server.HTTP2ServerConnectionFactory;
import org.eclipse.jetty.io.Content;
import org.eclipse.jetty.server.Handler;
import org.eclipse.jetty.server.HttpConfiguration;
import org.eclipse.jetty.server.HttpConnectionFactory;
import org.eclipse.jetty.server.Request;
import org.eclipse.jetty.server.Response;
import org.eclipse.jetty.server.SecureRequestCustomizer;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;
import org.eclipse.jetty.server.SslConnectionFactory;
import org.eclipse.jetty.util.Callback;
import org.eclipse.jetty.util.ssl.SslContextFactory;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The java.net.http send watch (core's {@code internal.jdk.SendWatch}) over HTTP/2, against a real
 * HTTP/2 server on loopback (Jetty; the JDK ships none): in clear text, reached by the HTTP/1.1
 * upgrade to h2c ({@code Version.HTTP_2} on an {@code http:} URL), and over TLS with ALPN (a
 * certificate made for the test, trusted by the client's own {@code SSLContext}). A POST without
 * key answered 307 (or 303) to a {@code Location} that refuses the connection ends in the client's
 * ConnectException; it was sent and answered, so under {@code unsafeMethods: if-not-sent} it must
 * not be sent again: the server counts as many POSTs with {@code RetryingHttpClient.wrap} as with
 * the client alone (one). A POST whose own connection is refused is still retried (control).
 *
 * <p>In clear text the POST either carries the upgrade itself (the first request of a new client,
 * sent as HTTP/1.1 offering {@code Upgrade: h2c}; Jetty takes it as an HTTP/1.1 request) or travels
 * as an HTTP/2 stream on a connection a GET upgraded before; the server records the protocol (and
 * the upgrade offered) of each POST, and the test asserts it, so that a row named HTTP/2 did run
 * over HTTP/2. Run on the build's JDK; {@code -Djvm=<JDK 25>/bin/java} runs it on JDK 25.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class JdkHttp2SendWatchTest {
  /** How the POST reaches the server. */
  enum Way {
    /** h2c: a GET upgrades the connection first; the POST is an HTTP/2 stream. */
    H2C_STREAM("http", "HTTP/2.0"),
    /**
     * h2c: the POST is the client's first request and carries the upgrade (HTTP/1.1 on the wire).
     */
    H2C_UPGRADE("http", "HTTP/1.1 Upgrade: h2c"),
    /** TLS, ALPN h2: the POST is an HTTP/2 stream. */
    TLS_ALPN("https", "HTTP/2.0");

    final String scheme;
    final String protocol;

    Way(String scheme, String protocol) {
      this.scheme = scheme;
      this.protocol = protocol;
    }
  }

  @TempDir Path dir;

  private Server jetty;
  private int h2cPort;
  private int tlsPort;
  private SSLContext clientTls;
  private RefusingPort refusing;
  private volatile int redirect = 307;
  private final List<String> posts = new CopyOnWriteArrayList<>();
  private final FakeTime time = new FakeTime();
  private final List<RetryEvent> events = new CopyOnWriteArrayList<>();

  @BeforeEach
  void start() throws Exception {
    refusing = new RefusingPort();
    Path keystore = dir.resolve("h2-server.p12");
    TlsCountingServer.keytool(keystore);

    jetty = new Server();
    HttpConfiguration plain = new HttpConfiguration();
    ServerConnector h2c =
        new ServerConnector(
            jetty, new HttpConnectionFactory(plain), new HTTP2CServerConnectionFactory(plain));
    h2c.setHost("127.0.0.1");
    h2c.setPort(0);

    HttpConfiguration secure = new HttpConfiguration();
    SecureRequestCustomizer customizer = new SecureRequestCustomizer();
    customizer.setSniHostCheck(false); // the client asks for 127.0.0.1, an address, not a name
    secure.addCustomizer(customizer);
    SslContextFactory.Server ssl = new SslContextFactory.Server();
    ssl.setKeyStorePath(keystore.toString());
    ssl.setKeyStoreType("PKCS12");
    ssl.setKeyStorePassword(TlsCountingServer.PASSWORD);
    HTTP2ServerConnectionFactory h2 = new HTTP2ServerConnectionFactory(secure);
    ALPNServerConnectionFactory alpn = new ALPNServerConnectionFactory("h2");
    alpn.setDefaultProtocol("h2");
    ServerConnector tls =
        new ServerConnector(jetty, new SslConnectionFactory(ssl, alpn.getProtocol()), alpn, h2);
    tls.setHost("127.0.0.1");
    tls.setPort(0);

    jetty.addConnector(h2c);
    jetty.addConnector(tls);
    jetty.setHandler(
        new Handler.Abstract() {
          @Override
          public boolean handle(Request request, Response response, Callback callback)
              throws Exception {
            if (request.getMethod().equals("POST")) {
              String upgrade = request.getHeaders().get(HttpHeader.UPGRADE);
              posts.add(
                  request.getHttpURI().getPath()
                      + " "
                      + request.getConnectionMetaData().getHttpVersion()
                      + (upgrade == null ? "" : " Upgrade: " + upgrade));
              Content.Source.consumeAll(request);
              response.setStatus(redirect);
              String scheme = request.getHttpURI().getScheme();
              response
                  .getHeaders()
                  .put(HttpHeader.LOCATION, refusedUrl(scheme == null ? "http" : scheme));
            } else {
              response.setStatus(200);
            }
            callback.succeeded();
            return true;
          }
        });
    jetty.start();
    h2cPort = h2c.getLocalPort();
    tlsPort = tls.getLocalPort();

    KeyStore trusted = KeyStore.getInstance("PKCS12");
    try (InputStream in = Files.newInputStream(keystore)) {
      trusted.load(in, TlsCountingServer.PASSWORD.toCharArray());
    }
    TrustManagerFactory tmf =
        TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
    tmf.init(trusted);
    clientTls = SSLContext.getInstance("TLS");
    clientTls.init(null, tmf.getTrustManagers(), null);
  }

  @AfterEach
  void stop() throws Exception {
    jetty.stop();
    refusing.close();
  }

  /** The refusing port's URL in {@code scheme}: the connection is refused before any TLS. */
  private String refusedUrl(String scheme) {
    return refusing.url("/gone").replaceFirst("^http", scheme);
  }

  private String url(Way way, String path) {
    return way.scheme + "://127.0.0.1:" + (way == Way.TLS_ALPN ? tlsPort : h2cPort) + path;
  }

  private RetryEngine engine() {
    return TestEngines.engine(
        time,
        Mode.ENFORCE,
        r -> r.maxAttempts(3).unsafeMethods(UnsafeMethods.IF_NOT_SENT),
        CircuitBreakerPolicy.defaults(),
        events);
  }

  private HttpClient real() {
    return HttpClient.newBuilder()
        .version(HttpClient.Version.HTTP_2)
        .followRedirects(HttpClient.Redirect.NORMAL)
        .sslContext(clientTls)
        .connectTimeout(java.time.Duration.ofSeconds(20))
        .build();
  }

  static List<Arguments> waysAndRedirects() {
    List<Arguments> all = new ArrayList<>();
    for (Way w : Way.values()) {
      for (int code : new int[] {303, 307}) {
        for (boolean async : new boolean[] {false, true}) {
          all.add(Arguments.of(w, code, async));
        }
      }
    }
    return all;
  }

  /** The POSTs the server got, with their protocol, then what the application got. */
  private List<String> post(Way way, RetryEngine engine, String url, boolean async)
      throws Exception {
    HttpClient real = real();
    HttpClient client = engine == null ? real : RetryingHttpClient.wrap(real, engine);
    if (way == Way.H2C_STREAM || way == Way.TLS_ALPN) {
      // The connection the POST will travel on, upgraded (h2c) or negotiated (ALPN) by a GET.
      HttpResponse<String> warm =
          client.send(
              HttpRequest.newBuilder(URI.create(url(way, "/warm"))).build(),
              HttpResponse.BodyHandlers.ofString());
      assertThat(warm.version()).isEqualTo(HttpClient.Version.HTTP_2);
    }
    int before = posts.size();
    HttpRequest request =
        HttpRequest.newBuilder(URI.create(url))
            .timeout(java.time.Duration.ofSeconds(30))
            .POST(HttpRequest.BodyPublishers.ofString("{\"amount\":1}"))
            .build();
    String got;
    try {
      got =
          ""
              + (async
                  ? client
                      .sendAsync(request, HttpResponse.BodyHandlers.ofString())
                      .get(60, TimeUnit.SECONDS)
                      .statusCode()
                  : client.send(request, HttpResponse.BodyHandlers.ofString()).statusCode());
    } catch (ExecutionException e) {
      got = e.getCause().getClass().getName();
    } catch (IOException e) {
      got = e.getClass().getName();
    }
    List<String> seen = new ArrayList<>(posts.subList(before, posts.size()));
    seen.add(got);
    return seen;
  }

  private long retries() {
    return events.stream().filter(e -> e.type() == RetryEvent.Type.RETRY).count();
  }

  @ParameterizedTest(name = "{0} {1} async={2}")
  @MethodSource("waysAndRedirects")
  void aPostRedirectedToARefusingHostIsNotSentAgain(Way way, int code, boolean async)
      throws Exception {
    redirect = code;
    String url = url(way, "/pay");

    List<String> plain = post(way, null, url, async);
    List<String> ours = post(way, engine(), url, async);

    assertThat(plain).containsExactly("/pay " + way.protocol, "java.net.ConnectException");
    assertThat(ours).isEqualTo(plain);
    assertThat(retries()).isZero();
  }

  @ParameterizedTest
  @EnumSource(
      value = Way.class,
      names = {"H2C_UPGRADE", "TLS_ALPN"})
  void aPostWhoseOwnConnectionIsRefusedIsStillRetried(Way way) throws Exception {
    List<String> ours = post(Way.H2C_UPGRADE, engine(), refusedUrl(way.scheme), false);

    assertThat(ours).containsExactly("java.net.ConnectException");
    assertThat(retries()).isEqualTo(2);
  }
}
