package dev.retryagent.agent.jdk;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.retryagent.agent.runtime.AgentRuntime;
import dev.retryagent.agent.tooling.TestBridge;
import dev.retryagent.config.AgentConfig;
import dev.retryagent.config.ConfigLoader;
import dev.retryagent.config.ConfigSources;
import dev.retryagent.policy.Mode;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.Map;
import java.util.Properties;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

class JdkHttpInterceptorTest {
  private static final HttpRequest REQUEST =
      HttpRequest.newBuilder(URI.create("http://127.0.0.1:9/x")).build();
  private static final HttpResponse.BodyHandler<String> BODY = HttpResponse.BodyHandlers.ofString();

  private final FakeHttpClient client = new FakeHttpClient();

  @BeforeEach
  @AfterEach
  void reset() {
    FakeHttpClient.Bodies.sendResult = null;
    FakeHttpClient.Bodies.SEND_RUNS.set(0);
    JdkHttpEntry.PASS_THROUGH.clear();
  }

  private static AgentRuntime runtime(AgentConfig config) throws Exception {
    return new AgentRuntime(ConfigSources.resolve(null, new Properties(), Map.of()), config);
  }

  @Test
  void offModeMakesExactlyOneAttemptOnTheInterceptedClient() throws Throwable {
    JdkHttpInterceptor interceptor =
        new JdkHttpInterceptor(runtime(AgentConfig.defaults().withMode(Mode.OFF)));

    Object outcome = interceptor.send(client, REQUEST, BODY);

    assertThat(TestBridge.deliver(outcome)).isNull();
    assertThat(FakeHttpClient.Bodies.SEND_RUNS).hasValue(1);
  }

  @Test
  void theEnginesIoExceptionReachesTheCallerUnchanged() throws Exception {
    IOException refused = new IOException("no such thing");
    FakeHttpClient.Bodies.sendResult = refused;
    JdkHttpInterceptor interceptor = new JdkHttpInterceptor(runtime(AgentConfig.defaults()));

    Object outcome = interceptor.send(client, REQUEST, BODY);

    assertThatThrownBy(() -> TestBridge.deliver(outcome)).isSameAs(refused);
    assertThat(FakeHttpClient.Bodies.SEND_RUNS).hasValue(1);
  }

  @Test
  void aSynchronousExceptionOfSendAsyncBecomesAThrownOutcome() throws Exception {
    JdkHttpInterceptor interceptor = new JdkHttpInterceptor(runtime(AgentConfig.defaults()));

    Object outcome = interceptor.sendAsync(client, null, BODY, null);

    assertThatThrownBy(() -> TestBridge.deliver(outcome)).isInstanceOf(NullPointerException.class);
  }

  @Test
  void jdkHttpTurnedOffByAReloadRunsTheOriginalMethod() throws Exception {
    AgentRuntime runtime = runtime(AgentConfig.defaults());
    JdkHttpInterceptor interceptor = new JdkHttpInterceptor(runtime);

    runtime.apply(
        ConfigLoader.parse("agent: {clients: {jdk-http: false}}", "reloaded.yml", Map.of()));

    assertThat(interceptor.send(client, REQUEST, BODY)).isNull();
    assertThat(FakeHttpClient.Bodies.SEND_RUNS).hasValue(0);
  }

  @Test
  void aClientShutDownWhileItsCallsWaitStillRefusesCallsOnceAReloadTurnedJdkHttpOff()
      throws Throwable {
    org.junit.jupiter.api.Assumptions.assumeTrue(
        JdkHttpHook.SHUTS_DOWN, "HttpClient.shutdown() is Java 21's");
    AgentRuntime runtime = runtime(AgentConfig.defaults());
    JdkHttpInterceptor interceptor = new JdkHttpInterceptor(runtime);
    dev.retryagent.internal.jdk.ClientCalls calls = FacadeCalls.of(client);
    calls.enter(); // a call of this client waits for its retry
    assertThat(calls.deferShutdown()).as("the application's shutdown() deferred").isTrue();

    runtime.apply(
        ConfigLoader.parse("agent: {clients: {jdk-http: false}}", "reloaded.yml", Map.of()));

    // The JDK, whose real shutdown waits for that call, would take these: refused as it refuses.
    Object sent = interceptor.send(client, REQUEST, BODY);
    assertThatThrownBy(() -> TestBridge.deliver(sent))
        .isInstanceOf(IOException.class)
        .hasMessage("closed")
        .hasCauseInstanceOf(IOException.class);
    Object future = TestBridge.deliver(interceptor.sendAsync(client, REQUEST, BODY, null));
    assertThat((java.util.concurrent.CompletableFuture<?>) future)
        .failsWithin(java.time.Duration.ZERO)
        .withThrowableOfType(java.util.concurrent.ExecutionException.class)
        .havingCause()
        .isInstanceOf(IOException.class)
        .withMessage("closed");
    assertThat(FakeHttpClient.Bodies.SEND_RUNS).hasValue(0);
    assertThat(calls.exit()).as("the deferred shutdown runs as before").isTrue();
  }
}
