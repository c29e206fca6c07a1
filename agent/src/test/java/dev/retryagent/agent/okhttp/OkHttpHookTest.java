package dev.retryagent.agent.okhttp;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.retryagent.agent.tooling.Bridge;
import dev.retryagent.agent.tooling.TestBridge;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.lang.reflect.Constructor;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import okhttp3.OkHttpClient;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The OkHttp hooks on the real OkHttp 3.14 classes, defined (and so verified) by a loader that runs
 * them through {@link OkHttpTransformer}, with a recording handler on the bridge. OkHttp 4 and 5
 * are covered by the integration tests.
 */
class OkHttpHookTest {
  /** What the bridge handed the handler, and what the handler answers to {@code enqueue}. */
  static final class Recorder implements OkHttpHandler {
    final List<String> events = new CopyOnWriteArrayList<>();
    volatile Object enqueueAnswer;
    volatile RuntimeException enqueueBug;

    @Override
    public void builderCreated(Object builder) {
      events.add("builder " + builder.getClass().getName());
    }

    @Override
    public Object enqueue(Object call, Object client, Object callback) {
      events.add("enqueue " + client.getClass().getName() + " " + callback);
      if (enqueueBug != null) {
        throw enqueueBug;
      }
      return enqueueAnswer;
    }

    @Override
    public void cancel(Object call) {
      events.add("cancel " + call.getClass().getName());
    }

    @Override
    public void sending(Object chain) {
      events.add("sending " + chain.getClass().getName());
    }

    @Override
    public void sendFailed(Object chain, Object failure) {
      events.add(
          "failed "
              + chain.getClass().getName()
              + (failure instanceof IOException ? " with its IOException" : " with " + failure));
    }
  }

  /** Defines okhttp3.* itself, child-first, each class as the transformer leaves it. */
  /**
   * The bytes the test's loader defines for {@code internalName}: the transformer's (the patched
   * class, through {@link OkHttpHook#instrument}), or null for the class as it is.
   */
  byte[] rewrite(
      OkHttpTransformer transformer, ClassLoader loader, String internalName, byte[] bytes) {
    return transformer.transform(null, loader, internalName, null, null, bytes);
  }

  private static ClassLoader parentLoader() {
    return OkHttpHookTest.class.getClassLoader();
  }

  static URL jarOf(Class<?> c) {
    return c.getProtectionDomain().getCodeSource().getLocation();
  }

  final class TransformingLoader extends URLClassLoader {
    final OkHttpTransformer transformer = new OkHttpTransformer();

    TransformingLoader() {
      super(new URL[] {jarOf(OkHttpClient.class), jarOf(okio.Buffer.class)}, parentLoader());
    }

    @Override
    protected Class<?> loadClass(String name, boolean resolve) throws ClassNotFoundException {
      if (!name.startsWith("okhttp3.") && !name.startsWith("okio.")) {
        return super.loadClass(name, resolve);
      }
      synchronized (getClassLoadingLock(name)) {
        Class<?> c = findLoadedClass(name);
        if (c == null) {
          byte[] bytes = read(name.replace('.', '/') + ".class");
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
      try {
        java.net.URLConnection c = findResource(resource).openConnection();
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
    OkHttpEntry.register(recorder);
    loader = new TransformingLoader();
  }

  @AfterEach
  void uninstall() throws IOException {
    OkHttpEntry.unregister();
    OkHttpEntry.PASS_THROUGH.clear();
    loader.close();
  }

  private Object newClient() throws Exception {
    return loader.loadClass("okhttp3.OkHttpClient").getConstructor().newInstance();
  }

  private Object newCall(Object client) throws Exception {
    return newCall(client, "http://127.0.0.1:9/never");
  }

  private Object newCall(Object client, String url) throws Exception {
    Class<?> requestBuilder = loader.loadClass("okhttp3.Request$Builder");
    Object b = requestBuilder.getConstructor().newInstance();
    requestBuilder.getMethod("url", String.class).invoke(b, url);
    Object request = requestBuilder.getMethod("build").invoke(b);
    return client
        .getClass()
        .getMethod("newCall", loader.loadClass("okhttp3.Request"))
        .invoke(client, request);
  }

  /** A callback of this loader's OkHttp that records what it is told. */
  private Object callback(List<String> told) throws Exception {
    Class<?> type = loader.loadClass("okhttp3.Callback");
    return Proxy.newProxyInstance(
        loader,
        new Class<?>[] {type},
        (proxy, method, args) -> {
          if (method.getName().equals("toString")) {
            return "callback";
          }
          told.add(method.getName());
          return null;
        });
  }

  /** Calls a method of {@code okhttp3.Call} ({@code RealCall} itself is not public in 3.x). */
  private Object onCall(Object call, String method) throws Exception {
    return loader.loadClass("okhttp3.Call").getMethod(method).invoke(call);
  }

  private void enqueue(Object call, Object callback) throws Throwable {
    Method m =
        loader.loadClass("okhttp3.Call").getMethod("enqueue", loader.loadClass("okhttp3.Callback"));
    try {
      m.invoke(call, callback);
    } catch (InvocationTargetException e) {
      throw e.getCause();
    }
  }

  private static void shutDown(Object client) throws Exception {
    Object dispatcher = client.getClass().getMethod("dispatcher").invoke(client);
    Object executor = dispatcher.getClass().getMethod("executorService").invoke(dispatcher);
    ((java.util.concurrent.ExecutorService) executor).shutdownNow();
  }

  @Test
  void everyBuilderConstructorTellsTheBridgeOnceBeforeItReturns() throws Exception {
    Object client = newClient(); // OkHttpClient() -> Builder()
    assertThat(recorder.events).containsExactly("builder okhttp3.OkHttpClient$Builder");

    Object builder = client.getClass().getMethod("newBuilder").invoke(client);
    Class<?> builderType = builder.getClass();
    Constructor<?> fromClient = builderType.getDeclaredConstructor(client.getClass());
    fromClient.setAccessible(true);
    fromClient.newInstance(client);

    // newBuilder() and the direct call each ran Builder(OkHttpClient) once.
    assertThat(recorder.events).hasSize(3).allMatch(e -> e.startsWith("builder "));
    // the builder, and the dispatcher it made; no call class yet
    assertThat(loader.transformer.hooked()).isEqualTo(2);
  }

  @Test
  void buildTellsTheBridgeFirstSoOursFollowTheApplicationsInterceptors() throws Exception {
    Object client = newClient();
    Object builder = client.getClass().getMethod("newBuilder").invoke(client);
    recorder.events.clear();

    Object built = builder.getClass().getMethod("build").invoke(builder);

    assertThat(recorder.events).containsExactly("builder okhttp3.OkHttpClient$Builder");
    assertThat(built.getClass().getName()).isEqualTo("okhttp3.OkHttpClient");
  }

  @Test
  void cancelAllTellsTheBridgeWithTheDispatcherAndStillCancels() throws Exception {
    Object client = newClient();
    Object call = newCall(client);
    Object dispatcher = client.getClass().getMethod("dispatcher").invoke(client);

    dispatcher.getClass().getMethod("cancelAll").invoke(dispatcher);

    assertThat(recorder.events).contains("cancel okhttp3.Dispatcher");
    // nothing ran, so nothing was cancelled; the method ran to its end
    assertThat(onCall(call, "isCanceled")).isEqualTo(false);
  }

  @Test
  void anEnqueueTheHandlerTakesOverSkipsOkHttpsOwnEnqueue() throws Throwable {
    Object client = newClient();
    Object call = newCall(client);
    recorder.enqueueAnswer = Bridge.TAKEN;

    enqueue(call, callback(new CopyOnWriteArrayList<>()));

    assertThat(recorder.events).contains("enqueue okhttp3.OkHttpClient callback");
    // OkHttp's own enqueue never ran: the call is not marked executed, nothing was dispatched.
    assertThat(onCall(call, "isExecuted")).isEqualTo(false);
    Object dispatcher = client.getClass().getMethod("dispatcher").invoke(client);
    assertThat(dispatcher.getClass().getMethod("queuedCallsCount").invoke(dispatcher)).isEqualTo(0);
    assertThat(dispatcher.getClass().getMethod("runningCallsCount").invoke(dispatcher))
        .isEqualTo(0);
    assertThat(TestBridge.handled(Bridge.OKHTTP_ENQUEUE)).isPositive();
  }

  @Test
  void anEnqueueTheHandlerDeclinesOrFailsOnRunsOkHttpsOwnEnqueue() throws Throwable {
    Object client = newClient();
    List<String> told = new CopyOnWriteArrayList<>();
    PrintStream err = System.err;
    ByteArrayOutputStream captured = new ByteArrayOutputStream();
    try {
      Object declined = newCall(client);
      recorder.enqueueAnswer = null;
      enqueue(declined, callback(told));
      assertThat(onCall(declined, "isExecuted")).isEqualTo(true);

      System.setErr(new PrintStream(captured, true, StandardCharsets.UTF_8));
      Object failed = newCall(client);
      recorder.enqueueBug = new IllegalStateException("handler bug");
      enqueue(failed, callback(told));
      assertThat(onCall(failed, "isExecuted")).isEqualTo(true);
    } finally {
      System.setErr(err);
      shutDown(client);
    }
  }

  @Test
  void aThrowableTheHandlerReturnsReachesTheCaller() throws Throwable {
    Object call = newCall(newClient());
    recorder.enqueueAnswer = new IllegalStateException("Already Executed");

    assertThatThrownBy(() -> enqueue(call, callback(new CopyOnWriteArrayList<>())))
        .isInstanceOf(IllegalStateException.class)
        .hasMessage("Already Executed");
  }

  @Test
  void aPassThroughTokenLetsOneEnqueueRunUnseen() throws Throwable {
    Object client = newClient();
    Object call = newCall(client);
    recorder.enqueueAnswer = Bridge.TAKEN;
    try {
      OkHttpEntry.PASS_THROUGH.next();
      enqueue(call, callback(new CopyOnWriteArrayList<>()));

      assertThat(recorder.events).noneMatch(e -> e.startsWith("enqueue"));
      assertThat(onCall(call, "isExecuted")).isEqualTo(true);
    } finally {
      shutDown(client);
    }
  }

  @Test
  void cancelTellsTheBridgeAndStillCancels() throws Exception {
    Object call = newCall(newClient());

    onCall(call, "cancel");

    assertThat(recorder.events).contains("cancel okhttp3.RealCall");
    assertThat(onCall(call, "isCanceled")).isEqualTo(true);
  }

  @Test
  void okHttpsLastInterceptorTellsTheBridgeOfEachRequestAndOfEachThatFailed() throws Throwable {
    try (ServerSocket server = new ServerSocket(0, 2, InetAddress.getLoopbackAddress())) {
      server.setSoTimeout(10_000);
      Thread answers = new Thread(() -> resetThenOk(server), "test-loopback");
      answers.setDaemon(true);
      answers.start();
      Object client = newClient();
      Object builder = client.getClass().getMethod("newBuilder").invoke(client);
      builder
          .getClass()
          .getMethod("retryOnConnectionFailure", boolean.class)
          .invoke(builder, false);
      Object noResends = builder.getClass().getMethod("build").invoke(builder);
      String url = "http://127.0.0.1:" + server.getLocalPort() + "/";
      recorder.events.clear();
      try {
        // The first connection is reset once the request is read: the IOException reaches the
        // caller as OkHttp threw it, and the hook heard of the request and of its failure.
        assertThatThrownBy(() -> execute(noResends, url)).isInstanceOf(IOException.class);
        assertThat(recorder.events)
            .containsExactly(
                "sending okhttp3.internal.http.RealInterceptorChain",
                "failed okhttp3.internal.http.RealInterceptorChain with its IOException");

        recorder.events.clear();
        assertThat(execute(noResends, url)).isEqualTo(200);
        assertThat(recorder.events)
            .containsExactly("sending okhttp3.internal.http.RealInterceptorChain");
      } finally {
        shutDown(client);
        answers.join(10_000);
      }
    }
  }

  /** {@code execute()} of a GET to {@code url} on {@code client}: the status, the body closed. */
  private int execute(Object client, String url) throws Throwable {
    Object call = newCall(client, url);
    try (java.io.Closeable response =
        (java.io.Closeable) loader.loadClass("okhttp3.Call").getMethod("execute").invoke(call)) {
      return (int) response.getClass().getMethod("code").invoke(response);
    } catch (InvocationTargetException e) {
      throw e.getCause();
    }
  }

  /** Resets the first connection once its request is read, then answers the second one 200. */
  private static void resetThenOk(ServerSocket server) {
    for (int i = 0; i < 2; i++) {
      try (Socket s = server.accept()) {
        InputStream in = s.getInputStream();
        int matched = 0;
        while (matched < 4) {
          int b = in.read();
          if (b < 0) {
            break;
          }
          matched = b == "\r\n\r\n".charAt(matched) ? matched + 1 : (b == '\r' ? 1 : 0);
        }
        if (i == 0) {
          s.setSoLinger(true, 0); // close with a reset
        } else {
          s.getOutputStream()
              .write(
                  "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok"
                      .getBytes(StandardCharsets.US_ASCII));
        }
      } catch (IOException e) {
        return;
      }
    }
  }

  @Test
  void aCallClassWithoutItsClientFieldIsLeftAlone() {

    assertThatThrownBy(() -> OkHttpHook.instrument(OkHttpHook.CALL_3, classBytes(Object.class)))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("no field client");
  }

  @Test
  void onlyTheTargetNamesMatch() {
    assertThat(OkHttpTransformer.isTarget("okhttp3/OkHttpClient$Builder")).isTrue();
    assertThat(OkHttpTransformer.isTarget("okhttp3/Dispatcher")).isTrue();
    assertThat(OkHttpTransformer.isTarget("okhttp3/RealCall")).isTrue();
    assertThat(OkHttpTransformer.isTarget("okhttp3/internal/connection/RealCall")).isTrue();
    assertThat(OkHttpTransformer.isTarget("okhttp3/internal/http/CallServerInterceptor")).isTrue();
    assertThat(OkHttpTransformer.isTarget("okhttp3/OkHttpClient")).isFalse();
    assertThat(OkHttpTransformer.isTarget("okhttp3/RealCall$AsyncCall")).isFalse();
    assertThat(OkHttpTransformer.isTarget("shaded/okhttp3/RealCall")).isFalse();
    assertThat(OkHttpTransformer.isTarget(null)).isFalse();
  }

  private static byte[] classBytes(Class<?> c) {
    try (InputStream in =
        ClassLoader.getSystemResourceAsStream(c.getName().replace('.', '/') + ".class")) {
      return in.readAllBytes();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
