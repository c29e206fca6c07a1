package dev.retryagent.agent.jdk;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.retryagent.agent.runtime.AgentLog;
import dev.retryagent.agent.tooling.Bridge;
import dev.retryagent.agent.tooling.DefiningLoader;
import dev.retryagent.agent.tooling.ProloguePatcher;
import dev.retryagent.agent.tooling.TestBridge;
import dev.retryagent.internal.jdk.ClientCalls;
import java.io.IOException;
import java.io.InputStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Function;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

class JdkHttpHookTest {
  private static final HttpRequest REQUEST =
      HttpRequest.newBuilder(URI.create("http://127.0.0.1:9/x")).build();
  private static final HttpResponse.BodyHandler<String> BODY = HttpResponse.BodyHandlers.ofString();

  private final List<Object[]> handlerCalls = new CopyOnWriteArrayList<>();
  private HttpClient client;

  /** How the class is rewritten: as the agent does (patched without ASM where it can). */
  byte[] instrument(byte[] classfile) {
    byte[] patched = ProloguePatcher.patch(classfile, JdkHttpHook.TARGETS);
    assertThat(patched).as("patched without ASM").isNotNull();
    assertThat(JdkHttpHook.instrument(classfile)).isEqualTo(patched);
    return patched;
  }

  @BeforeAll
  static void defineTheBridge() {
    TestBridge.define();
  }

  @BeforeEach
  void loadInstrumentedClient() throws Exception {
    byte[] instrumented = instrument(DefiningLoader.bytesOf(FakeHttpClient.class));
    Class<?> hooked =
        new HookedClassLoader(FakeHttpClient.class, instrumented)
            .loadClass(FakeHttpClient.class.getName());
    assertThat(hooked).isNotSameAs(FakeHttpClient.class);
    client = (HttpClient) hooked.getConstructor().newInstance();
    FakeHttpClient.Bodies.SEND_RUNS.set(0);
    FakeHttpClient.Bodies.SEND_ASYNC_RUNS.set(0);
    FakeHttpClient.Bodies.sendResult = null;
    FakeHttpClient.Bodies.SHUTDOWN_RUNS.set(0);
  }

  @AfterEach
  void removeHandler() {
    JdkHttpEntry.unregister();
    JdkHttpEntry.PASS_THROUGH.clear();
  }

  private void handle(Function<Object[], Object> behaviour) {
    JdkHttpEntry.register(
        new JdkHttpHandler() {
          @Override
          public Object send(Object c, Object r, Object h) {
            Object[] call = {c, r, h};
            handlerCalls.add(call);
            return behaviour.apply(call);
          }

          @Override
          public Object sendAsync(Object c, Object r, Object h, Object p) {
            Object[] call = {c, r, h, p};
            handlerCalls.add(call);
            return behaviour.apply(call);
          }
        });
  }

  @Test
  void withoutHandlerTheOriginalBodyRuns() throws Exception {
    client.send(REQUEST, BODY);
    client.sendAsync(REQUEST, BODY);

    assertThat(FakeHttpClient.Bodies.SEND_RUNS).hasValue(1);
    assertThat(FakeHttpClient.Bodies.SEND_ASYNC_RUNS).hasValue(1);
  }

  @Test
  void handlerReceivesTheClientTheRequestAndTheHandlers() throws Exception {
    handle(call -> null);
    HttpResponse.PushPromiseHandler<String> push = (initiating, pushed, acceptor) -> {};

    client.send(REQUEST, BODY);
    client.sendAsync(REQUEST, BODY, push);

    assertThat(handlerCalls).hasSize(2);
    assertThat(handlerCalls.get(0)).containsExactly(client, REQUEST, BODY);
    assertThat(handlerCalls.get(1)).containsExactly(client, REQUEST, BODY, push);
  }

  @Test
  void nullFromTheHandlerRunsTheOriginalBody() throws Exception {
    handle(call -> null);

    client.send(REQUEST, BODY);

    assertThat(FakeHttpClient.Bodies.SEND_RUNS).hasValue(1);
  }

  @Test
  void aReturnedOutcomeIsTheResultAndSkipsTheOriginalBody() throws Exception {
    CompletableFuture<HttpResponse<String>> future = new CompletableFuture<>();
    handle(call -> Bridge.returned(call.length == 3 ? null : future));

    HttpResponse<String> response = client.send(REQUEST, BODY);
    CompletableFuture<HttpResponse<String>> async = client.sendAsync(REQUEST, BODY);

    assertThat(response).isNull();
    assertThat(async).isSameAs(future);
    assertThat(FakeHttpClient.Bodies.SEND_RUNS).hasValue(0);
    assertThat(FakeHttpClient.Bodies.SEND_ASYNC_RUNS).hasValue(0);
  }

  @Test
  void aThrownOutcomeReachesTheCallerUnchanged() {
    IOException engineFailure = new IOException("gave up after 3 attempts");
    InterruptedException interrupt = new InterruptedException();
    handle(call -> call[1] == REQUEST ? engineFailure : interrupt);

    assertThatThrownBy(() -> client.send(REQUEST, BODY)).isSameAs(engineFailure);
    HttpRequest other = HttpRequest.newBuilder(URI.create("http://127.0.0.1:9/y")).build();
    assertThatThrownBy(() -> client.send(other, BODY)).isSameAs(interrupt);
    assertThat(FakeHttpClient.Bodies.SEND_RUNS).hasValue(0);
  }

  @Test
  void aHandlerBugLetsTheOriginalBodyRunOnce() throws Exception {
    handle(
        call -> {
          throw new IllegalStateException("bug in the agent");
        });

    client.send(REQUEST, BODY);
    client.sendAsync(REQUEST, BODY);

    assertThat(FakeHttpClient.Bodies.SEND_RUNS).hasValue(1);
    assertThat(FakeHttpClient.Bodies.SEND_ASYNC_RUNS).hasValue(1);
  }

  @Test
  void theOriginalBodysOwnExceptionIsUntouched() {
    IOException original = new IOException("connection refused");
    FakeHttpClient.Bodies.sendResult = original;
    handle(call -> null);

    assertThatThrownBy(() -> client.send(REQUEST, BODY)).isSameAs(original);
  }

  @Test
  void aPassThroughTokenSkipsTheHandlerForExactlyOneCall() throws Exception {
    handle(call -> null);

    JdkHttpEntry.PASS_THROUGH.next();
    client.send(REQUEST, BODY);
    client.send(REQUEST, BODY);

    assertThat(handlerCalls).hasSize(1);
    assertThat(FakeHttpClient.Bodies.SEND_RUNS).hasValue(2);
  }

  @Test
  void theAgentsOwnAttemptThroughClientTransportIsNotInterceptedAgain() throws Exception {
    // the handler makes its attempt on the same client, as the engine will
    handle(
        call -> {
          try {
            return Bridge.returned(
                new ClientTransport((HttpClient) call[0], null).send(REQUEST, BODY));
          } catch (Exception e) {
            return e;
          }
        });

    client.send(REQUEST, BODY);

    assertThat(handlerCalls).hasSize(1);
    assertThat(FakeHttpClient.Bodies.SEND_RUNS).hasValue(1);
  }

  @Test
  void callsTheAgentTookAreCountedByTheBridge() throws Exception {
    long before = intercepted();
    handle(call -> null);
    client.send(REQUEST, BODY);
    assertThat(intercepted() - before).as("declined").isZero();

    handle(call -> Bridge.returned(null));
    client.send(REQUEST, BODY);
    client.sendAsync(REQUEST, BODY);

    assertThat(intercepted() - before).isEqualTo(2);
  }

  private static long intercepted() {
    return TestBridge.handled(Bridge.JDK_SEND) + TestBridge.handled(Bridge.JDK_SEND_ASYNC);
  }

  @Test
  void theRealHttpClientFacadeOfThisJdkCanBeInstrumented() throws IOException {
    byte[] original;
    try (InputStream in =
        ClassLoader.getPlatformClassLoader().getResourceAsStream(JdkHttpHook.TARGET + ".class")) {
      original = in.readAllBytes();
    }

    byte[] instrumented = instrument(original);

    assertThat(instrumented.length).isGreaterThan(original.length);
    assertThat(new String(instrumented, java.nio.charset.StandardCharsets.ISO_8859_1))
        .contains("java/lang/RetryAgentBridge");
    // The verifier accepts it: defined under its own name by a loader of ours, and linked (not
    // initialised: on JDK 25 its static initialiser reaches java.base internals that the unnamed
    // module of our loader may not). Its methods' frames, handlers (each has a try/finally) and the
    // prologue's are all checked.
    ClassLoader own =
        new DefiningLoader(
            ClassLoader.getPlatformClassLoader(), Map.of(JdkHttpHook.TARGET_NAME, instrumented));
    assertThatCode(() -> Class.forName(JdkHttpHook.TARGET_NAME, false, own).getDeclaredMethods())
        .doesNotThrowAnyException();
  }

  @Test
  void theTwoArgumentSendAsyncReachesTheHandlerWithANullPushPromiseHandler() {
    CompletableFuture<HttpResponse<String>> taken = new CompletableFuture<>();
    handle(call -> Bridge.returned(taken));

    CompletableFuture<HttpResponse<String>> f = client.sendAsync(REQUEST, BODY);

    assertThat(f).isSameAs(taken);
    assertThat(handlerCalls).hasSize(1);
    assertThat(handlerCalls.get(0)).containsExactly(client, REQUEST, BODY, null);
    assertThat(FakeHttpClient.Bodies.SEND_ASYNC_RUNS).hasValue(0);
  }

  @Test
  void aClassWithoutTheTargetMethodsIsRefusedNotHalfInstrumented() {
    assertThatThrownBy(() -> JdkHttpHook.instrument(DefiningLoader.bytesOf(AgentLog.class)))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("has no send(HttpRequest, BodyHandler)");
  }

  private void call(String method) throws Exception {
    client.getClass().getMethod(method).invoke(client); // Java 21 API: by name
  }

  @Test
  void onJava21AShutdownWaitsForTheClientsCallInProgressThenRuns() throws Exception {
    assumeTrue(JdkHttpHook.SHUTS_DOWN, "HttpClient.shutdown() is Java 21's");
    handle(call -> null);
    ClientCalls calls = FacadeCalls.of(client);
    assertThat(calls.enter()).isTrue();

    call("shutdown");

    assertThat(FakeHttpClient.Bodies.SHUTDOWN_RUNS).as("deferred").hasValue(0);
    assertThat(calls.refuses()).isTrue();
    assertThat(calls.exit()).isTrue();
    call("shutdown"); // what the call's end does (ClientTransport)
    assertThat(FakeHttpClient.Bodies.SHUTDOWN_RUNS).hasValue(1);
  }

  @Test
  void onJava21ShutdownNowAndCloseWithNoCallInProgressRunAtOnce() throws Exception {
    assumeTrue(JdkHttpHook.SHUTS_DOWN, "HttpClient.shutdownNow() is Java 21's");
    handle(call -> null);
    ClientCalls calls = FacadeCalls.of(client);
    calls.enter();

    call("shutdownNow");

    assertThat(FakeHttpClient.Bodies.SHUTDOWN_RUNS).hasValue(1);
    assertThat(calls.shutDownNow()).isTrue();
    calls.exit();
    call("close");
    assertThat(FakeHttpClient.Bodies.SHUTDOWN_RUNS).hasValue(2);
  }
}
