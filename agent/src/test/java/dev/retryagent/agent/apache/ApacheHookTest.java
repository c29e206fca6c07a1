package dev.retryagent.agent.apache;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.retryagent.agent.tooling.Bridge;
import dev.retryagent.agent.tooling.TestBridge;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.lang.reflect.InvocationTargetException;
import java.net.URL;
import java.net.URLClassLoader;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The Apache HttpClient hooks on the real HttpClient 4.5.14 and 5.1.3 classes, defined (and so
 * verified) by a loader that runs them through {@link ApacheTransformer}, with a recording handler
 * on the bridge. What the handler then does is covered by the integration tests.
 */
class ApacheHookTest {
  /** What the bridge handed the handler, and what the handler answers to {@code execute}. */
  static final class Recorder implements ApacheHandler {
    final List<String> events = new CopyOnWriteArrayList<>();
    volatile Object answer;

    @Override
    public void builderCreated(Object builder) {
      events.add("builder " + builder.getClass().getName());
    }

    @Override
    public Object execute(Object client, Object target, Object request, Object context) {
      events.add("execute " + client.getClass().getSimpleName() + " " + target + " " + context);
      return answer;
    }
  }

  /**
   * The bytes the test's loader defines for {@code internalName}: the transformer's (the patched
   * class, through {@link ApacheHook#instrument}), or null for the class as it is.
   */
  byte[] rewrite(
      ApacheTransformer transformer, ClassLoader loader, String internalName, byte[] bytes) {
    return transformer.transform(null, loader, internalName, null, null, bytes);
  }

  static URL jarOf(Class<?> c) {
    return c.getProtectionDomain().getCodeSource().getLocation();
  }

  /** Defines HttpClient's own classes child-first, each as the transformer leaves it. */
  final class TransformingLoader extends URLClassLoader {
    final ApacheTransformer transformer = new ApacheTransformer();

    TransformingLoader() {
      super(
          new URL[] {
            jarOf(org.apache.http.impl.client.HttpClients.class),
            jarOf(org.apache.http.HttpHost.class),
            jarOf(org.apache.hc.client5.http.impl.classic.HttpClients.class),
            jarOf(org.apache.hc.core5.http.HttpHost.class)
          },
          ApacheHookTest.class.getClassLoader());
    }

    @Override
    protected Class<?> loadClass(String name, boolean resolve) throws ClassNotFoundException {
      if (!name.startsWith("org.apache.http.") && !name.startsWith("org.apache.hc.")) {
        return super.loadClass(name, resolve);
      }
      synchronized (getClassLoadingLock(name)) {
        Class<?> c = findLoadedClass(name);
        if (c == null) {
          byte[] bytes = read(name.replace('.', '/') + ".class");
          if (bytes == null) {
            throw new ClassNotFoundException(name);
          }
          byte[] out = rewrite(transformer, this, name.replace('.', '/'), bytes);
          byte[] use = out == null ? bytes : out;
          c = defineClass(name, use, 0, use.length);
        }
        return c;
      }
    }

    private byte[] read(String resource) {
      // Not through the JDK's jar cache: a loader closed after an earlier test closes the cached
      // JarFile that getResourceAsStream would hand out again ("zip file closed").
      java.net.URL url = findResource(resource);
      if (url == null) {
        return null;
      }
      try {
        java.net.URLConnection c = url.openConnection();
        c.setUseCaches(false);
        try (InputStream in = c.getInputStream()) {
          return in.readAllBytes();
        }
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
    }
  }

  private final Recorder recorder = new Recorder();
  private TransformingLoader loader;

  @BeforeAll
  static void defineTheBridge() {
    TestBridge.define();
  }

  @BeforeEach
  void install() {
    ApacheEntry.register(recorder);
    loader = new TransformingLoader();
  }

  @AfterEach
  void uninstall() throws IOException {
    ApacheEntry.unregister();
    ApacheEntry.PASS_THROUGH.clear();
    loader.close();
  }

  /** A default 4.5 client; what its builder told the bridge is tested on its own, and cleared. */
  private Object client4() throws Exception {
    Object client =
        loader
            .loadClass("org.apache.http.impl.client.HttpClients")
            .getMethod("createDefault")
            .invoke(null);
    recorder.events.clear();
    return client;
  }

  /** {@code client.execute(new HttpGet(url))}, through the public API. */
  private Object execute4(Object client) throws Throwable {
    Class<?> uriRequest = loader.loadClass("org.apache.http.client.methods.HttpUriRequest");
    Object get =
        loader
            .loadClass("org.apache.http.client.methods.HttpGet")
            .getConstructor(String.class)
            .newInstance("http://127.0.0.1:9/never");
    try {
      return loader
          .loadClass("org.apache.http.impl.client.CloseableHttpClient")
          .getMethod("execute", uriRequest)
          .invoke(client, get);
    } catch (InvocationTargetException e) {
      throw e.getCause();
    }
  }

  @Test
  void everyBuilderOf5TellsTheBridgeOnceItIsMade() throws Exception {
    Class<?> clients = loader.loadClass("org.apache.hc.client5.http.impl.classic.HttpClients");
    clients.getMethod("custom").invoke(null);
    clients.getMethod("createDefault").invoke(null);
    assertThat(recorder.events)
        .containsExactly(
            "builder org.apache.hc.client5.http.impl.classic.HttpClientBuilder",
            "builder org.apache.hc.client5.http.impl.classic.HttpClientBuilder");
    assertThat(loader.transformer.hooked()).isEqualTo(1);
  }

  @Test
  void everyBuilderOf45TellsTheBridgeOnceItIsMade() throws Exception {
    Class<?> clients = loader.loadClass("org.apache.http.impl.client.HttpClients");
    clients.getMethod("custom").invoke(null);
    clients.getMethod("createSystem").invoke(null);
    assertThat(recorder.events)
        .containsExactly(
            "builder org.apache.http.impl.client.HttpClientBuilder",
            "builder org.apache.http.impl.client.HttpClientBuilder");
  }

  @Test
  void a45ExecuteReachesTheBridgeWithItsTargetAndTheDeliveredResponseIsReturned() throws Throwable {
    Object client = client4();
    // A response of the client's own kind stands for what the engine delivers.
    Object delivered =
        java.lang.reflect.Proxy.newProxyInstance(
            loader,
            new Class<?>[] {
              loader.loadClass("org.apache.http.client.methods.CloseableHttpResponse")
            },
            (p, m, a) -> m.getName().equals("toString") ? "delivered" : null);
    recorder.answer = delivered;
    long handled = TestBridge.handled(Bridge.APACHE_EXECUTE);
    assertThat(execute4(client)).isSameAs(delivered);
    assertThat(recorder.events)
        .containsExactly("execute InternalHttpClient http://127.0.0.1:9 null");
    assertThat(TestBridge.handled(Bridge.APACHE_EXECUTE)).isEqualTo(handled + 1);
  }

  @Test
  void aNullResponseTheHandlerDeliversIsReturnedAsNull() throws Throwable {
    Object client = client4();
    recorder.answer = Bridge.returned(null);
    assertThat(execute4(client)).isNull();
    assertThat(recorder.events).hasSize(1);
  }

  @Test
  void aThrowableDeliveredByTheHandlerReachesTheCallerUnchanged() throws Exception {
    Object client = client4();
    IOException refused = new java.net.ConnectException("refused by the engine");
    recorder.answer = refused;
    assertThatThrownBy(() -> execute4(client)).isSameAs(refused);
  }

  @Test
  void aPassThroughTokenRunsTheOriginalDoExecuteOnce() throws Exception {
    Object client = client4();
    recorder.answer = new IllegalStateException("must not be delivered");
    ApacheEntry.PASS_THROUGH.next();
    // The original method runs: nothing listens on port 9, so HttpClient fails by itself.
    assertThatThrownBy(() -> execute4(client))
        .isInstanceOf(IOException.class)
        .hasMessageContaining("127.0.0.1:9");
    assertThat(recorder.events).isEmpty();
  }

  @Test
  void withoutAHandlerTheClientRunsUnchanged() throws Exception {
    ApacheEntry.unregister();
    Object client = client4();
    assertThatThrownBy(() -> execute4(client)).isInstanceOf(IOException.class);
    assertThat(recorder.events).isEmpty();
  }
}
