package dev.retryagent.agent.okhttp;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retryagent.agent.CapturedStderr;
import dev.retryagent.agent.tooling.TestBridge;
import java.io.IOException;
import java.io.InputStream;
import java.net.URL;
import java.net.URLClassLoader;
import okhttp3.OkHttpClient;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

class OkHttpTransformerTest {
  private final OkHttpTransformer transformer = new OkHttpTransformer();
  @RegisterExtension final CapturedStderr stderr = new CapturedStderr();

  @BeforeAll
  static void defineTheBridge() {
    TestBridge.define();
  }

  private static byte[] builderBytes() throws IOException {
    try (InputStream in =
        OkHttpClient.class.getClassLoader().getResourceAsStream(OkHttpHook.BUILDER + ".class")) {
      return in.readAllBytes();
    }
  }

  /** As the JVM defines {@code name} in {@code loader} from the jar {@code loader} was made of. */
  private byte[] transformFromItsJar(URLClassLoader loader, String name, byte[] bytes) {
    java.security.ProtectionDomain domain =
        new java.security.ProtectionDomain(
            new java.security.CodeSource(
                loader.getURLs()[0], (java.security.cert.Certificate[]) null),
            null);
    return transformer.transform(null, loader, name, null, domain, bytes);
  }

  private byte[] transform(ClassLoader loader, String name, byte[] bytes) {
    return transformer.transform(null, loader, name, null, null, bytes);
  }

  @Test
  void instrumentsTheBuilderInAnApplicationLoader() throws Exception {
    assertThat(transform(getClass().getClassLoader(), OkHttpHook.BUILDER, builderBytes()))
        .isNotNull();
    assertThat(transformer.hooked()).isEqualTo(1);
    assertThat(stderr.text()).isEmpty();
  }

  /** A loader of one OkHttp release's own jar (copied by the build), as an application's. */
  private static URLClassLoader release(String version) throws IOException {
    java.nio.file.Path jar =
        java.nio.file.Path.of(
            System.getProperty("okhttp.versions.dir", "target/okhttp-versions"),
            "okhttp-" + version + ".jar");
    assertThat(jar).exists();
    return new URLClassLoader(new URL[] {jar.toUri().toURL()}, null);
  }

  @Test
  void okHttpOlderThan314IsLeftAloneAndSaidOnce() throws Exception {
    // 3.12 closes its call (call timeout exited, callEnd told) when a retried response is closed,
    // and its streamed bodies' marker types would hide behind the agent's body: not supported, so
    // its classes stay as they are, and the line says why, once for the loader.
    byte[] bytes = builderBytes();
    try (URLClassLoader old = release("3.12.13")) {
      assertThat(transformFromItsJar(old, OkHttpHook.BUILDER, bytes)).isNull();
      assertThat(transformFromItsJar(old, OkHttpHook.CALL_3, bytes)).isNull();
    }
    assertThat(transformer.hooked()).isZero();
    assertThat(stderr.text().lines())
        .singleElement(org.assertj.core.api.InstanceOfAssertFactories.STRING)
        .startsWith("retry-agent: okhttp NOT hooked in ")
        .contains("older than 3.14")
        .contains("run without retries");
  }

  @Test
  void aChildFirstLoadersOwnOkHttpIsHookedWhateverItsParentHas() throws Exception {
    // A web application's loader (child-first) with OkHttp 4 of its own, its parent (a server's
    // shared lib) with 3.12: the parent's StreamAllocation is visible from the child, but it is
    // not where the child's OkHttp comes from.
    try (URLClassLoader parent = release("3.12.13");
        URLClassLoader child = childFirst("4.12.0", parent)) {
      assertThat(child.getResource("okhttp3/internal/connection/StreamAllocation.class"))
          .as("the parent's, seen from the child")
          .isNotNull();
      assertThat(transformFromItsJar(child, OkHttpHook.BUILDER, builderBytes())).isNotNull();
    }
    assertThat(transformer.hooked()).isEqualTo(1);
    assertThat(stderr.text()).isEmpty();
  }

  @Test
  void anOldOkHttpALoaderDefinesItselfIsLeftAloneWhateverItsParentHas() throws Exception {
    // The reverse: a loader that defines OkHttp 3.12 from its own jar while its resources are
    // asked of its parent first (an OkHttp 4 there): still the old OkHttp, left alone.
    try (URLClassLoader parent = release("4.12.0");
        URLClassLoader own = new URLClassLoader(new URL[] {jarOf("3.12.13")}, parent)) {
      assertThat(transformFromItsJar(own, OkHttpHook.BUILDER, builderBytes())).isNull();
    }
    assertThat(transformer.hooked()).isZero();
    assertThat(stderr.text()).contains("older than 3.14");
  }

  @Test
  void anOldOkHttpOfUnknownOriginIsLeftAlone() throws Exception {
    // No code source: a StreamAllocation seen at all decides, the side that leaves it alone.
    try (URLClassLoader old = release("3.12.13")) {
      assertThat(transform(old, OkHttpHook.BUILDER, builderBytes())).isNull();
    }
    assertThat(transformer.hooked()).isZero();
  }

  private static URL jarOf(String version) throws IOException {
    try (URLClassLoader own = release(version)) {
      return own.getURLs()[0];
    }
  }

  /** A child-first loader of one release's jar: its own resources before its parent's. */
  private static URLClassLoader childFirst(String version, ClassLoader parent) throws IOException {
    URL jar;
    try (URLClassLoader own = release(version)) {
      jar = own.getURLs()[0];
    }
    return new URLClassLoader(new URL[] {jar}, parent) {
      @Override
      public URL getResource(String name) {
        URL own = findResource(name);
        return own != null ? own : super.getResource(name);
      }
    };
  }

  @Test
  void okHttp314IsHooked() throws Exception {
    try (URLClassLoader supported = release("3.14.9")) {
      assertThat(transformFromItsJar(supported, OkHttpHook.BUILDER, builderBytes())).isNotNull();
    }
    assertThat(transformer.hooked()).isEqualTo(1);
    assertThat(stderr.text()).isEmpty();
  }

  @Test
  void leavesOtherClassesAndOtherAgentsOkHttpAlone() throws Exception {
    byte[] bytes = builderBytes();
    assertThat(transform(getClass().getClassLoader(), "okhttp3/OkHttpClient", bytes)).isNull();
    try (URLClassLoader otel = new io.opentelemetry.javaagent.bootstrap.AgentClassLoader()) {
      assertThat(transform(otel, OkHttpHook.BUILDER, bytes)).isNull();
    }
    assertThat(transformer.hooked()).isZero();
    assertThat(transformer.skipped()).isEqualTo(1);
  }

  @Test
  void anotherAgentsLoaderIsNamedOnceWhenItsOkHttpIsLeftAlone() throws Exception {
    byte[] bytes = builderBytes();
    try (URLClassLoader otel = new io.opentelemetry.javaagent.bootstrap.AgentClassLoader()) {
      assertThat(transform(otel, OkHttpHook.BUILDER, bytes)).isNull();
      assertThat(transform(otel, OkHttpHook.BUILDER, bytes)).isNull();
    }
    assertThat(stderr.text().lines())
        .singleElement(org.assertj.core.api.InstanceOfAssertFactories.STRING)
        .startsWith("retry-agent: ")
        .contains("io.opentelemetry.javaagent.bootstrap.AgentClassLoader@")
        .contains("another agent's");
  }

  @Test
  void aPluginHostsLoaderNamedAsAnAgentsIsHooked() throws Exception {
    try (URLClassLoader plugins =
        new org.example.plugins.ExtensionClassLoader(getClass().getClassLoader())) {
      assertThat(transform(plugins, OkHttpHook.BUILDER, builderBytes())).isNotNull();
    }
    assertThat(transformer.hooked()).isEqualTo(1);
    assertThat(transformer.skipped()).isZero();
    assertThat(stderr.text()).isEmpty();
  }

  /** A loader that hides the agent's own packages, as OSGi or JBoss Modules may. */
  static final class Isolated extends URLClassLoader {
    Isolated() {
      super(new URL[0], null);
    }

    @Override
    protected Class<?> loadClass(String name, boolean resolve) throws ClassNotFoundException {
      if (name.startsWith("dev.retryagent.")) {
        throw new ClassNotFoundException(name);
      }
      return super.loadClass(name, resolve);
    }
  }

  /** A loader that refuses even the bridge, a class of {@code java.lang}. */
  static final class Hostile extends URLClassLoader {
    Hostile() {
      super(new URL[0], null);
    }

    @Override
    protected Class<?> loadClass(String name, boolean resolve) throws ClassNotFoundException {
      if (name.startsWith("java.lang.RetryAgent")) {
        throw new ClassNotFoundException(name);
      }
      return super.loadClass(name, resolve);
    }
  }

  @Test
  void aLoaderThatHidesTheAgentsPackagesStillSeesTheBridgeAndIsHooked() throws Exception {
    // skipped while the bridge was appended to the boot path under dev.retryagent.bootstrap
    byte[] bytes = builderBytes();
    try (Isolated isolated = new Isolated()) {
      assertThat(transform(isolated, OkHttpHook.BUILDER, bytes)).isNotNull();
    }
    assertThat(transformer.hooked()).isEqualTo(1);
    assertThat(stderr.text()).isEmpty();
  }

  @Test
  void aLoaderThatCannotSeeTheBridgeIsLeftAloneAndSaidOnce() throws Exception {
    byte[] bytes = builderBytes();
    try (Hostile hostile = new Hostile()) {
      assertThat(transform(hostile, OkHttpHook.BUILDER, bytes)).isNull();
      assertThat(transform(hostile, OkHttpHook.CALL_3, bytes)).isNull();
    }
    assertThat(transformer.hooked()).isZero();
    assertThat(stderr.text().lines())
        .singleElement()
        .asString()
        .startsWith("retry-agent: okhttp NOT hooked in")
        .contains("does not delegate java.lang.RetryAgentBridge to the bootstrap loader");
  }

  /** Tomcat's web application loader prints itself on several lines, its parent's too. */
  static final class ManyLines extends URLClassLoader {
    ManyLines(ClassLoader parent) {
      super("shop\n(ROOT)", new URL[0], parent);
    }

    @Override
    public String toString() {
      return "ParallelWebappClassLoader\r\n  context: shop\r\n  delegate: false\r\n"
          + "----------> Parent Classloader:\r\n"
          + getParent();
    }
  }

  @Test
  void aLoaderIsNamedOnOneLineWhateverItsToStringSays() {
    byte[] garbage = {(byte) 0xCA, (byte) 0xFE, 1, 2, 3};
    ManyLines loader = new ManyLines(getClass().getClassLoader());

    assertThat(transform(loader, OkHttpHook.CALL_4, garbage)).isNull();

    assertThat(stderr.text().lines())
        .singleElement()
        .asString()
        .startsWith(
            "retry-agent: okhttp NOT hooked in "
                + ManyLines.class.getName()
                + "[shop?(ROOT)]@"
                + Integer.toHexString(System.identityHashCode(loader))
                + ", ");
  }

  @Test
  void aRetransformationTheJvmRefusesLeavesNothingCountedAsHooked() throws Exception {
    Class<?> send = Class.forName(OkHttpHook.SEND.replace('/', '.'));
    byte[] bytes;
    try (InputStream in = send.getClassLoader().getResourceAsStream(OkHttpHook.SEND + ".class")) {
      bytes = in.readAllBytes();
    }
    // the JVM runs the transformer over the batch, then refuses it all (a schema change, say)
    java.lang.instrument.Instrumentation inst =
        (java.lang.instrument.Instrumentation)
            java.lang.reflect.Proxy.newProxyInstance(
                getClass().getClassLoader(),
                new Class<?>[] {java.lang.instrument.Instrumentation.class},
                (proxy, method, args) -> {
                  switch (method.getName()) {
                    case "getAllLoadedClasses":
                      return new Class<?>[] {send};
                    case "isRetransformClassesSupported":
                      return true;
                    case "retransformClasses":
                      assertThat(
                              transformer.transform(
                                  send.getModule(),
                                  send.getClassLoader(),
                                  OkHttpHook.SEND,
                                  send,
                                  null,
                                  bytes))
                          .isNotNull();
                      throw new UnsupportedOperationException("class redefinition failed");
                    default:
                      return null;
                  }
                });

    String status = dev.retryagent.agent.tooling.HookTransformer.installAll(inst, transformer)[0];

    assertThat(status).startsWith("okhttp NOT hooked (retransforming");
    assertThat(transformer.hooked()).isZero();
    assertThat(transformer.status()).startsWith("okhttp armed");
    // its resends are counted by the network interceptor, as for an unhooked class
    assertThat(transformer.sendsHooked(send)).isFalse();
  }

  /**
   * An attach where {@code send} loads (and is rewritten) between the transformer's addition and
   * the look at the loaded classes, beside {@code builder} loaded before: the JVM runs the
   * transformer over the classes it is asked to retransform, then refuses them all when {@code
   * refuse}.
   */
  private java.lang.instrument.Instrumentation attachWhileSendLoads(
      Class<?> send, Class<?> builder, boolean refuse, java.util.List<Class<?>> retransformed)
      throws IOException {
    byte[] sendBytes;
    try (InputStream in = send.getClassLoader().getResourceAsStream(OkHttpHook.SEND + ".class")) {
      sendBytes = in.readAllBytes();
    }
    byte[] builderBytes = builderBytes();
    return (java.lang.instrument.Instrumentation)
        java.lang.reflect.Proxy.newProxyInstance(
            getClass().getClassLoader(),
            new Class<?>[] {java.lang.instrument.Instrumentation.class},
            (proxy, method, args) -> {
              switch (method.getName()) {
                case "getAllLoadedClasses":
                  // send loads now, on an application thread: rewritten as it is defined
                  assertThat(transform(send.getClassLoader(), OkHttpHook.SEND, sendBytes))
                      .isNotNull();
                  return new Class<?>[] {builder, send};
                case "isRetransformClassesSupported":
                  return true;
                case "retransformClasses":
                  for (Class<?> c : (Class<?>[]) args[0]) {
                    retransformed.add(c);
                    String name = c.getName().replace('.', '/');
                    assertThat(
                            transformer.transform(
                                c.getModule(),
                                c.getClassLoader(),
                                name,
                                c,
                                null,
                                name.equals(OkHttpHook.SEND) ? sendBytes : builderBytes))
                        .isNotNull();
                  }
                  if (refuse) {
                    throw new UnsupportedOperationException("class redefinition failed");
                  }
                  return null;
                default:
                  return null;
              }
            });
  }

  @Test
  void aClassRewrittenAsItLoadedDuringAnAttachStaysCountedWhenTheRetransformationIsRefused()
      throws Exception {
    Class<?> send = Class.forName(OkHttpHook.SEND.replace('/', '.'));
    java.util.List<Class<?>> retransformed = new java.util.ArrayList<>();

    String status =
        dev.retryagent.agent.tooling.HookTransformer.installAll(
            attachWhileSendLoads(send, OkHttpClient.Builder.class, true, retransformed),
            transformer)[0];

    // the builder, loaded before, stays unchanged: so says the line
    assertThat(status).startsWith("okhttp NOT hooked (retransforming");
    // send keeps its load-time rewrite: it reports its resends itself, and is counted
    assertThat(transformer.sendsHooked(send)).isTrue();
    assertThat(transformer.hooked()).isEqualTo(1);
    assertThat(transformer.status()).startsWith("okhttp hooked");
    assertThat(retransformed).containsExactly(OkHttpClient.Builder.class);
  }

  @Test
  void aClassRewrittenAsItLoadedDuringAnAttachIsCountedOnce() throws Exception {
    Class<?> send = Class.forName(OkHttpHook.SEND.replace('/', '.'));
    java.util.List<Class<?>> retransformed = new java.util.ArrayList<>();

    String status =
        dev.retryagent.agent.tooling.HookTransformer.installAll(
            attachWhileSendLoads(send, OkHttpClient.Builder.class, false, retransformed),
            transformer)[0];

    assertThat(status).startsWith("okhttp hooked");
    assertThat(transformer.hooked()).isEqualTo(2); // send and the builder, once each
    assertThat(transformer.sendsHooked(send)).isTrue();
    assertThat(retransformed).containsExactly(OkHttpClient.Builder.class);
  }

  /** A cause whose message spans lines and names a URL with a password and a token. */
  static final String SECRET_CAUSE = "bad frame\n\tat http://user:hunter2@h.example/x?token=s3cret";

  @Test
  void aCauseSpanningLinesIsSaidOnOneLineWithoutTheUrlsSecrets() throws Exception {
    transformer.failed(
        getClass().getClassLoader(), OkHttpHook.BUILDER, new IllegalStateException(SECRET_CAUSE));

    assertThat(stderr.text().lines())
        .singleElement()
        .asString()
        .startsWith("retry-agent: okhttp NOT hooked in")
        .contains("java.lang.IllegalStateException: bad frame")
        .doesNotContain("hunter2")
        .doesNotContain("s3cret");
    assertThat(transformer.notHookedReason())
        .contains("bad frame")
        .doesNotContain("\n")
        .doesNotContain("hunter2")
        .doesNotContain("s3cret");

    // and the start-up line's fragment when the JVM refuses a retransformation with such a cause
    Class<?> builder = OkHttpClient.Builder.class;
    java.lang.instrument.Instrumentation inst =
        (java.lang.instrument.Instrumentation)
            java.lang.reflect.Proxy.newProxyInstance(
                getClass().getClassLoader(),
                new Class<?>[] {java.lang.instrument.Instrumentation.class},
                (proxy, method, args) -> {
                  switch (method.getName()) {
                    case "getAllLoadedClasses":
                      return new Class<?>[] {builder};
                    case "isRetransformClassesSupported":
                      return true;
                    case "retransformClasses":
                      throw new UnsupportedOperationException(SECRET_CAUSE);
                    default:
                      return null;
                  }
                });
    String status =
        dev.retryagent.agent.tooling.HookTransformer.installAll(inst, new OkHttpTransformer())[0];
    assertThat(status)
        .startsWith("okhttp NOT hooked (retransforming OkHttp failed:")
        .contains("bad frame")
        .doesNotContain("\n")
        .doesNotContain("hunter2")
        .doesNotContain("s3cret");
  }

  @Test
  void aClassThatCannotBeInstrumentedIsReportedOnceAndLeftUnchanged() {
    byte[] garbage = {(byte) 0xCA, (byte) 0xFE, 1, 2, 3};

    assertThat(transform(getClass().getClassLoader(), OkHttpHook.CALL_4, garbage)).isNull();
    assertThat(transform(getClass().getClassLoader(), OkHttpHook.CALL_4, garbage)).isNull();

    assertThat(transformer.callFailure()).isNotNull();
    assertThat(stderr.text().lines())
        .singleElement()
        .asString()
        .startsWith("retry-agent: okhttp NOT hooked in")
        .contains("enqueued calls wait for retries on a dispatcher thread");
  }

  @Test
  void theStartUpFragmentSaysArmedUntilAnOkHttpClassIsRewrittenThenHooked() throws Exception {
    byte[] bytes = builderBytes();
    assertThat(transformer.status())
        .isEqualTo(
            "okhttp armed (OkHttpClient.Builder, RealCall.enqueue/cancel, Dispatcher.cancelAll, CallServerInterceptor)");

    try (URLClassLoader otel = new io.opentelemetry.javaagent.bootstrap.AgentClassLoader()) {
      transform(otel, OkHttpHook.BUILDER, bytes);
    }
    assertThat(transformer.status()).startsWith("okhttp armed");

    transform(getClass().getClassLoader(), OkHttpHook.BUILDER, bytes);
    assertThat(transformer.status())
        .isEqualTo(
            "okhttp hooked (OkHttpClient.Builder, RealCall.enqueue/cancel, Dispatcher.cancelAll, CallServerInterceptor)");
  }
}
