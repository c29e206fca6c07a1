package dev.retryagent.apache4;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retryagent.apache4.BoundedContext.ResetsSocketTimeout;
import java.io.IOException;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.apache.http.impl.conn.PoolingHttpClientConnectionManager;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Which HttpClient 4.x releases put a pooled connection's socket timeout back on release (4.5.4 and
 * later), so that an attempt's bound may be set on the connection without reaching later calls: an
 * HttpClient 4.5.3 kept the bound on the connection in its pool, and a later call whose {@code
 * RequestConfig} set no socket timeout ran under it (seen: 2 s where the connection's own was 7 s).
 */
class ResetsSocketTimeoutTest {
  @Test
  void aConnManagerThereButNotReadableIsSaidOncePerJvmAnAbsentOneNot() throws Exception {
    // 124ea5f bounds the socket timeout on BasicHttpClientConnectionManager's connections by
    // reading the client's private connManager. A field there that could not be read (a security
    // manager, a module not opened) left the socket timeout unbounded without a word, as a field
    // absent on another release does. Now the first is an internal error, said once per JVM; the
    // second says nothing. (java.util is not opened to the tests: its field is refused as one of
    // HttpClient's would be.)
    Object refused =
        BoundedContext.ConnManagerField.find(
            java.util.concurrent.ConcurrentHashMap.class, "table", Object.class);
    assertThat(refused).isInstanceOf(RuntimeException.class);
    assertThat(
            BoundedContext.ConnManagerField.find(
                org.apache.http.impl.client.HttpClients.createMinimal().getClass(),
                "noSuchField",
                Object.class))
        .isNull();
    assertThat(
            BoundedContext.ConnManagerField.OF.get(
                org.apache.http.impl.client.HttpClients.createMinimal().getClass()))
        .isInstanceOf(java.lang.reflect.Field.class);

    java.util.List<String> said = new java.util.concurrent.CopyOnWriteArrayList<>();
    java.util.concurrent.atomic.AtomicBoolean once =
        new java.util.concurrent.atomic.AtomicBoolean();
    for (int i = 0; i < 2; i++) {
      // Two engines: once per JVM, not once per engine.
      dev.retryagent.engine.RetryEngine engine =
          dev.retryagent.testing.TestEngines.builder(
                  new dev.retryagent.testing.FakeTime(),
                  dev.retryagent.policy.Mode.ENFORCE,
                  r -> r,
                  dev.retryagent.policy.Policy.defaults().budget(),
                  dev.retryagent.policy.CircuitBreakerPolicy.defaults(),
                  dev.retryagent.policy.Policy.defaults().rateLimit())
              .errors(said::add)
              .build();
      Call4 call =
          engine.begin(
              new Call4(
                  (t, r, c) -> null,
                  new org.apache.http.HttpHost("127.0.0.1", 9),
                  new org.apache.http.client.methods.HttpGet("/"),
                  null));
      BoundedContext.unreadable(once, call, (Throwable) refused);
    }
    assertThat(said).hasSize(1);
    assertThat(said.get(0))
        .contains("connManager", "BasicHttpClientConnectionManager", "unbounded")
        .contains(refused.getClass().getName());
  }

  @Test
  void releasesFrom454OnResetTheSocketTimeoutAndEarlierOnesDoNot() {
    assertThat(ResetsSocketTimeout.resets("4.5.4")).isTrue();
    assertThat(ResetsSocketTimeout.resets("4.5.14")).isTrue();
    assertThat(ResetsSocketTimeout.resets("4.5.14-SNAPSHOT")).isTrue();
    assertThat(ResetsSocketTimeout.resets("4.6.0")).isTrue();
    assertThat(ResetsSocketTimeout.resets("4.5.3")).isFalse();
    assertThat(ResetsSocketTimeout.resets("4.5.2")).isFalse();
    assertThat(ResetsSocketTimeout.resets("4.4.1")).isFalse();
    assertThat(ResetsSocketTimeout.resets("4.3")).isFalse();
    assertThat(ResetsSocketTimeout.resets("UNAVAILABLE")).isFalse();
    assertThat(ResetsSocketTimeout.resets((String) null)).isFalse();
  }

  @Test
  void theReleaseIsReadFromTheVersionFileBesideTheConnectionsClass(@TempDir Path dir)
      throws IOException {
    assertThat(ResetsSocketTimeout.resets(loaderOf(dir.resolve("old"), "4.5.3"))).isFalse();
    assertThat(ResetsSocketTimeout.resets(loaderOf(dir.resolve("new"), "4.5.10"))).isTrue();
    // No version file (a repackaged HttpClient): the socket timeout is left as it is.
    assertThat(ResetsSocketTimeout.resets(loaderOf(dir.resolve("none"), null))).isFalse();
  }

  @Test
  void onlyConnectionsWhoseSocketTimeoutIsPutBackBeforeTheirNextCallMayCarryTheBound()
      throws ClassNotFoundException {
    // The HttpClient these tests run on (4.5.14): PoolingHttpClientConnectionManager's, put back
    // on release; the deprecated AbstractHttpClient's, given its HttpParams' on every exchange.
    assertThat(ResetsSocketTimeout.OF.get(Class.forName(ResetsSocketTimeout.POOLED))).isTrue();
    assertThat(
            ResetsSocketTimeout.OF.get(
                Class.forName("org.apache.http.impl.conn.ManagedClientConnectionImpl")))
        .isTrue();
    // HttpClient's plain connection, which BasicHttpClientConnectionManager hands out and so may a
    // manager of the application's that keeps its socket timeout (AttemptTimeoutsTest).
    assertThat(
            ResetsSocketTimeout.OF.get(
                org.apache.http.impl.conn.DefaultManagedHttpClientConnection.class))
        .isFalse();
    assertThat(ResetsSocketTimeout.OF.get(PoolingHttpClientConnectionManager.class)).isFalse();
  }

  private static ClassLoader loaderOf(Path root, String release) throws IOException {
    Path pkg = Files.createDirectories(root.resolve("org/apache/http/client"));
    if (release != null) {
      Files.write(
          pkg.resolve("version.properties"),
          ("info.module = httpclient\ninfo.release = " + release + "\n")
              .getBytes(StandardCharsets.ISO_8859_1));
    }
    // No parent: the test's own HttpClient 4.5.14 must not answer for it.
    return new URLClassLoader(new URL[] {root.toUri().toURL()}, null);
  }
}
