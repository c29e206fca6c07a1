package dev.retryagent.agent.apache;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retryagent.agent.CapturedStderr;
import dev.retryagent.agent.tooling.ReleaseJars;
import dev.retryagent.engine.RetryEngine;
import java.lang.reflect.Field;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * {@link ApacheLoaders} on the real jars of HttpClient 5.0.4 and 5.1.3 (copied by the build into
 * {@code target/apache-versions}, with HttpCore 5.4.4): a builder of 5.1 gets the library's
 * handlers, one of 5.0.x is left as HttpClient made it, said once.
 */
class ApacheLoadersTest {
  private static final Path DIR =
      Path.of(System.getProperty("apache.versions.dir", "target/apache-versions"));

  @RegisterExtension final CapturedStderr stderr = new CapturedStderr();

  /** The agent as the glue sees it; a builder is served without the engine (made at a call). */
  private static final ApacheSupport.Agent AGENT =
      new ApacheSupport.Agent() {
        @Override
        public RetryEngine engine() {
          throw new AssertionError("no call is made");
        }

        @Override
        public boolean enabled() {
          return true;
        }
      };

  private final ApacheLoaders loaders =
      new ApacheLoaders(AGENT, ApacheLoadersTest.class.getClassLoader());

  /** HttpClient {@code version} and its HttpCore in a loader of their own. */
  private static URLClassLoader release(String version) throws Exception {
    List<URL> urls = new ArrayList<>();
    urls.add(DIR.resolve("httpclient5-" + version + ".jar").toUri().toURL());
    for (Path jar : ReleaseJars.jarsIn(DIR.resolve("deps5"))) {
      urls.add(jar.toUri().toURL());
    }
    return new URLClassLoader(urls.toArray(new URL[0]), ClassLoader.getPlatformClassLoader());
  }

  /** {@code HttpClients.custom()} of {@code loader}, told to the loaders as the hook tells it. */
  private Object builderMadeIn(ClassLoader loader) throws Exception {
    return madeIn(loader, "org.apache.hc.client5.http.impl.classic.HttpClients");
  }

  /** {@code HttpAsyncClients.custom()} of {@code loader}, told to the loaders likewise. */
  private Object asyncBuilderMadeIn(ClassLoader loader) throws Exception {
    return madeIn(loader, "org.apache.hc.client5.http.impl.async.HttpAsyncClients");
  }

  /** {@code HttpAsyncClients.customHttp2()} of {@code loader}: the HTTP/2-only async builder. */
  private Object h2BuilderMadeIn(ClassLoader loader) throws Exception {
    return madeIn(loader, "org.apache.hc.client5.http.impl.async.HttpAsyncClients", "customHttp2");
  }

  private Object madeIn(ClassLoader loader, String factory) throws Exception {
    return madeIn(loader, factory, "custom");
  }

  private Object madeIn(ClassLoader loader, String factory, String method) throws Exception {
    Object builder = loader.loadClass(factory).getMethod(method).invoke(null);
    loaders.builderCreated(builder);
    return builder;
  }

  /** What the builder will put in its clients' chains besides HttpClient's own elements. */
  private static Collection<?> execInterceptorsOf(Object builder) throws Exception {
    Field f = builder.getClass().getDeclaredField("execInterceptors");
    f.setAccessible(true);
    Collection<?> added = (Collection<?>) f.get(builder);
    return added == null ? List.of() : added;
  }

  private static Object retryStrategyOf(Object builder) throws Exception {
    Field f = builder.getClass().getDeclaredField("retryStrategy");
    f.setAccessible(true);
    return f.get(builder);
  }

  /** {@code builder}'s retry strategy is HttpClient's default of {@code loader}, governed. */
  private static void assertGovernsTheDefaultStrategy(ClassLoader loader, Object builder)
      throws Exception {
    assertThat(retryStrategyOf(builder))
        .hasToString(
            "retry-agent governed "
                + loader
                    .loadClass("org.apache.hc.client5.http.impl.DefaultHttpRequestRetryStrategy")
                    .getField("INSTANCE")
                    .get(null));
  }

  @Test
  void aBuilderOf51GetsTheHandlersAndTheGovernedStrategy() throws Exception {
    try (URLClassLoader loader = release("5.1.3")) {
      Object builder = builderMadeIn(loader);

      assertThat(execInterceptorsOf(builder)).hasSize(2);
      assertGovernsTheDefaultStrategy(loader, builder);
      assertThat(stderr.text()).doesNotContain("left alone");
    }
  }

  @Test
  void anAsyncBuilderOf51GetsTheAsyncHandlersAndTheGovernedStrategy() throws Exception {
    try (URLClassLoader loader = release("5.1.3")) {
      Object classic = builderMadeIn(loader); // the same copy's glue serves both builders
      Object builder = asyncBuilderMadeIn(loader);

      assertThat(execInterceptorsOf(classic)).hasSize(2);
      assertThat(execInterceptorsOf(builder)).hasSize(2);
      assertGovernsTheDefaultStrategy(loader, builder);
      assertThat(stderr.text()).doesNotContain("left alone").doesNotContain("without retries");
    }
  }

  @Test
  void anHttp2OnlyBuilderOf51GetsTheAsyncHandlersAndTheGovernedStrategy() throws Exception {
    try (URLClassLoader loader = release("5.1.3")) {
      Object builder = h2BuilderMadeIn(loader);

      assertThat(builder.getClass().getSimpleName()).isEqualTo("H2AsyncClientBuilder");
      assertThat(execInterceptorsOf(builder)).hasSize(2);
      assertGovernsTheDefaultStrategy(loader, builder);
      assertThat(stderr.text()).doesNotContain("left alone").doesNotContain("without retries");
    }
  }

  @Test
  void aBuilderOf50IsLeftAsHttpClientMadeItAndThatIsSaidOnce() throws Exception {
    // HttpClient 5.0.x (documented as unsupported) got the handlers too: with its own HttpCore 5.0
    // the handler's retry calls ClassicRequestBuilder.copy, which HttpCore 5.0 lacks.
    try (URLClassLoader loader = release("5.0.4")) {
      Object first = builderMadeIn(loader);
      Object second = builderMadeIn(loader);
      Object async = asyncBuilderMadeIn(loader);
      Object h2 = h2BuilderMadeIn(loader);

      for (Object builder : List.of(first, second, async, h2)) {
        assertThat(execInterceptorsOf(builder)).isEmpty();
        assertThat(retryStrategyOf(builder)).isNull();
      }
      assertThat(stderr.text())
          .containsOnlyOnce("apache-httpclient 5.0.x in " + loader + " is left alone")
          .doesNotContain("runs without retries: the agent's HttpClient support could not");
    }
  }
}
