package dev.retryagent.it.harness;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpsConfigurator;
import com.sun.net.httpserver.HttpsServer;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyStore;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;

/**
 * An https loopback server for tests, with a certificate made for it by {@code keytool} (EC, SAN
 * {@code 127.0.0.1}) that nothing trusts unless told: {@link #trustStoreOptions()} are the JVM
 * options that make a forked JVM's default trust accept it. It answers each request with the next
 * scripted {@link Reply} (responses only) and records what arrived.
 */
public final class TlsCountingServer implements AutoCloseable {
  /** The password of the key store {@link #keytool} makes (store and key). */
  public static final String PASSWORD = "changeit";

  private final HttpsServer server;
  private final Path keystore;
  private final Deque<Reply> script = new ArrayDeque<>();
  private final List<RecordedRequest> requests = new ArrayList<>();
  private volatile Reply defaultReply = Reply.ok("ok");

  private TlsCountingServer(HttpsServer server, Path keystore) {
    this.server = server;
    this.keystore = keystore;
  }

  /** Makes a certificate in {@code dir} and starts a server on an ephemeral loopback port. */
  public static TlsCountingServer start(Path dir) throws IOException {
    Path keystore = dir.resolve("tls-server.p12");
    if (!Files.exists(keystore)) {
      keytool(keystore);
    }
    try {
      KeyStore ks = KeyStore.getInstance("PKCS12");
      try (InputStream in = Files.newInputStream(keystore)) {
        ks.load(in, PASSWORD.toCharArray());
      }
      KeyManagerFactory kmf =
          KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
      kmf.init(ks, PASSWORD.toCharArray());
      SSLContext context = SSLContext.getInstance("TLS");
      context.init(kmf.getKeyManagers(), null, null);
      HttpsServer https =
          HttpsServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
      https.setHttpsConfigurator(new HttpsConfigurator(context));
      https.setExecutor(
          Executors.newCachedThreadPool(
              r -> {
                Thread t = new Thread(r, "tls-counting-server");
                t.setDaemon(true);
                return t;
              }));
      TlsCountingServer s = new TlsCountingServer(https, keystore);
      https.createContext("/", s::handle);
      https.start();
      return s;
    } catch (GeneralSecurityException e) {
      throw new IOException(e);
    }
  }

  /**
   * Makes {@code keystore}: PKCS12, one EC key pair ({@code server}) with a self-signed certificate
   * for {@code 127.0.0.1}, valid two days, password {@link #PASSWORD}.
   */
  public static void keytool(Path keystore) throws IOException {
    Path keytool = Path.of(System.getProperty("java.home"), "bin", "keytool");
    Process p =
        new ProcessBuilder(
                keytool.toString(),
                "-genkeypair",
                "-keystore",
                keystore.toString(),
                "-storetype",
                "PKCS12",
                "-storepass",
                PASSWORD,
                "-alias",
                "server",
                "-keyalg",
                "EC",
                "-dname",
                "CN=retry-agent-it",
                "-ext",
                "SAN=ip:127.0.0.1",
                "-validity",
                "2")
            .redirectErrorStream(true)
            .start();
    try {
      String output = new String(p.getInputStream().readAllBytes());
      if (!p.waitFor(60, TimeUnit.SECONDS) || p.exitValue() != 0) {
        throw new IOException("keytool failed: " + output);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IOException(e);
    }
  }

  /**
   * JVM options that make the default trust (and so every {@code HttpsURLConnection} that is not
   * given its own socket factory) accept this server's certificate.
   */
  public List<String> trustStoreOptions() {
    return List.of(
        "-Djavax.net.ssl.trustStore=" + keystore,
        "-Djavax.net.ssl.trustStorePassword=" + PASSWORD,
        "-Djavax.net.ssl.trustStoreType=PKCS12");
  }

  /** {@code https://127.0.0.1:<port><path>}. */
  public URI uri(String path) {
    return URI.create("https://127.0.0.1:" + server.getAddress().getPort() + path);
  }

  public synchronized TlsCountingServer enqueue(Reply... replies) {
    script.addAll(List.of(replies));
    return this;
  }

  public TlsCountingServer setDefaultReply(Reply reply) {
    defaultReply = reply;
    return this;
  }

  public synchronized int requestCount() {
    return requests.size();
  }

  public synchronized List<RecordedRequest> requests() {
    return List.copyOf(requests);
  }

  private synchronized Reply record(RecordedRequest r) {
    requests.add(r);
    Reply next = script.poll();
    return next == null ? defaultReply : next;
  }

  private void handle(HttpExchange exchange) throws IOException {
    try (exchange) {
      byte[] body = exchange.getRequestBody().readAllBytes();
      Map<String, List<String>> headers = new LinkedHashMap<>();
      exchange
          .getRequestHeaders()
          .forEach((k, v) -> headers.put(k.toLowerCase(Locale.ROOT), List.copyOf(v)));
      Reply reply =
          record(
              new RecordedRequest(
                  exchange.getRequestMethod(),
                  exchange.getRequestURI().toString(),
                  headers,
                  body,
                  0));
      for (Map.Entry<String, String> h : reply.headers()) {
        exchange.getResponseHeaders().add(h.getKey(), h.getValue());
      }
      byte[] out = reply.body();
      exchange.sendResponseHeaders(reply.statusCode(), out.length == 0 ? -1 : out.length);
      if (out.length > 0) {
        try (OutputStream o = exchange.getResponseBody()) {
          o.write(out);
        }
      }
    }
  }

  @Override
  public void close() {
    server.stop(0);
  }
}
