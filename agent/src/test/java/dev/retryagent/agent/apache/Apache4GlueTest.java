package dev.retryagent.agent.apache;

import static org.assertj.core.api.Assertions.assertThat;

import com.sun.net.httpserver.HttpServer;
import dev.retryagent.agent.tooling.TestBridge;
import dev.retryagent.engine.RetryEngine;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.lang.reflect.InvocationTargetException;
import java.net.InetSocketAddress;
import java.net.URL;
import java.net.URLClassLoader;
import java.util.List;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The 4.5 glue's attempts on a client whose class overrides the public {@code execute} ({@link
 * SigningHttpClient}, which adds a header there): the override runs once per call, as without the
 * agent, so a call never retried sends what it sends without the agent, and each attempt of a
 * retried one the request as the application made it. The real HttpClient 4.5.14 classes, hooked by
 * {@link ApacheTransformer}, with the real glue ({@link ApacheLoaders}) on the bridge and a
 * loopback server that counts requests and signatures.
 */
class Apache4GlueTest {
  private static final String SIGNING = "dev.retryagent.agent.apache.SigningHttpClient";

  /**
   * HttpClient's classes and {@link SigningHttpClient} child-first, as the transformer leaves them.
   */
  static final class HookingLoader extends URLClassLoader {
    final ApacheTransformer transformer = new ApacheTransformer();

    HookingLoader() {
      super(
          new URL[] {
            ApacheHookTest.jarOf(org.apache.http.impl.client.HttpClients.class),
            ApacheHookTest.jarOf(org.apache.http.HttpHost.class)
          },
          Apache4GlueTest.class.getClassLoader());
    }

    @Override
    protected Class<?> loadClass(String name, boolean resolve) throws ClassNotFoundException {
      if (!name.startsWith("org.apache.http.") && !name.equals(SIGNING)) {
        return super.loadClass(name, resolve);
      }
      synchronized (getClassLoadingLock(name)) {
        Class<?> c = findLoadedClass(name);
        if (c == null) {
          String resource = name.replace('.', '/') + ".class";
          byte[] bytes =
              read(
                  name.equals(SIGNING)
                      ? getParent().getResource(resource)
                      : findResource(resource));
          if (bytes == null) {
            throw new ClassNotFoundException(name);
          }
          byte[] out = transformer.transform(null, this, name.replace('.', '/'), null, null, bytes);
          byte[] use = out == null ? bytes : out;
          c = defineClass(name, use, 0, use.length);
        }
        return c;
      }
    }

    private static byte[] read(URL url) {
      if (url == null) {
        return null;
      }
      try {
        java.net.URLConnection c = url.openConnection();
        c.setUseCaches(false); // not the JDK's jar cache, which a closed loader closes
        try (InputStream in = c.getInputStream()) {
          return in.readAllBytes();
        }
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
    }
  }

  private final RetryEngine engine = RetryEngine.builder().sleeper(nanos -> {}).build();

  private final ApacheSupport.Agent agent =
      new ApacheSupport.Agent() {
        @Override
        public RetryEngine engine() {
          return engine;
        }

        @Override
        public boolean enabled() {
          return true;
        }
      };

  /** The status each request gets, in order (200 once they are used up). */
  private final Queue<Integer> statuses = new ConcurrentLinkedQueue<>();

  /** The {@code X-Signature} values of each request the server received. */
  private final List<List<String>> received = new CopyOnWriteArrayList<>();

  private HttpServer server;
  private HookingLoader loader;

  @BeforeAll
  static void defineTheBridge() {
    TestBridge.define();
  }

  @BeforeEach
  void start() throws IOException {
    server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
    server.createContext(
        "/",
        exchange -> {
          List<String> signatures = exchange.getRequestHeaders().get("X-Signature");
          received.add(signatures == null ? List.of() : List.copyOf(signatures));
          Integer status = statuses.poll();
          byte[] body = "ok".getBytes(java.nio.charset.StandardCharsets.US_ASCII);
          exchange.sendResponseHeaders(status == null ? 200 : status, body.length);
          exchange.getResponseBody().write(body);
          exchange.close();
        });
    server.start();
    loader = new HookingLoader();
  }

  @AfterEach
  void stop() throws IOException {
    ApacheEntry.unregister();
    ApacheEntry.PASS_THROUGH.clear();
    server.stop(0);
    loader.close();
  }

  /**
   * {@code new SigningHttpClient().execute(host, new HttpGet("/path"), null)} on this test's copy
   * of HttpClient; the status the application got.
   */
  private int signedCall() throws Throwable {
    Object client = loader.loadClass(SIGNING).getConstructor().newInstance();
    Class<?> host = loader.loadClass("org.apache.http.HttpHost");
    Object target =
        host.getConstructor(String.class, int.class)
            .newInstance("127.0.0.1", server.getAddress().getPort());
    Object get =
        loader
            .loadClass("org.apache.http.client.methods.HttpGet")
            .getConstructor(String.class)
            .newInstance("/path");
    try {
      Object response =
          loader
              .loadClass("org.apache.http.impl.client.CloseableHttpClient")
              .getMethod(
                  "execute",
                  host,
                  loader.loadClass("org.apache.http.HttpRequest"),
                  loader.loadClass("org.apache.http.protocol.HttpContext"))
              .invoke(client, target, get, null);
      Object line = response.getClass().getMethod("getStatusLine").invoke(response);
      int status = (int) line.getClass().getMethod("getStatusCode").invoke(line);
      ((java.io.Closeable) response).close();
      ((java.io.Closeable) client).close();
      return status;
    } catch (InvocationTargetException e) {
      throw e.getCause();
    }
  }

  /**
   * {@code new SigningHttpClient().execute(new HttpGet(url))}: an overload the client does not
   * override, which reaches {@code doExecute} without the signing override.
   */
  private int unsignedCall() throws Throwable {
    Object client = loader.loadClass(SIGNING).getConstructor().newInstance();
    Object get =
        loader
            .loadClass("org.apache.http.client.methods.HttpGet")
            .getConstructor(String.class)
            .newInstance("http://127.0.0.1:" + server.getAddress().getPort() + "/path");
    try {
      Object response =
          loader
              .loadClass("org.apache.http.impl.client.CloseableHttpClient")
              .getMethod(
                  "execute", loader.loadClass("org.apache.http.client.methods.HttpUriRequest"))
              .invoke(client, get);
      Object line = response.getClass().getMethod("getStatusLine").invoke(response);
      int status = (int) line.getClass().getMethod("getStatusCode").invoke(line);
      ((java.io.Closeable) response).close();
      ((java.io.Closeable) client).close();
      return status;
    } catch (InvocationTargetException e) {
      throw e.getCause();
    }
  }

  @Test
  void withoutTheAgentACallSendsOneRequestSignedOnce() throws Throwable {
    assertThat(signedCall()).isEqualTo(200);

    assertThat(received).containsExactly(List.of("signed"));
  }

  @Test
  void aCallNeverRetriedSendsWhatItSendsWithoutTheAgent() throws Throwable {
    ApacheEntry.register(new ApacheLoaders(agent, Apache4GlueTest.class.getClassLoader()));

    assertThat(signedCall()).isEqualTo(200);

    // The override ran for the application's call only, not again for the agent's attempt.
    assertThat(received).containsExactly(List.of("signed"));
  }

  @Test
  void eachAttemptOfARetriedCallSendsTheRequestSignedOnce() throws Throwable {
    ApacheEntry.register(new ApacheLoaders(agent, Apache4GlueTest.class.getClassLoader()));
    statuses.add(503);

    assertThat(signedCall()).isEqualTo(200);

    assertThat(received).containsExactly(List.of("signed"), List.of("signed"));
  }

  @Test
  void aCallThroughAnOverloadNotOverriddenIsNotSigned() throws Throwable {
    ApacheEntry.register(new ApacheLoaders(agent, Apache4GlueTest.class.getClassLoader()));

    assertThat(unsignedCall()).isEqualTo(200);

    // As without the agent: the attempt does not go through the overriding execute either.
    assertThat(received).containsExactly(List.of());
  }
}
