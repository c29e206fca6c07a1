package dev.retryagent.it;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retryagent.it.apps.JdkHttpApp;
import dev.retryagent.it.harness.CountingServer;
import dev.retryagent.it.harness.ForkedJvm;
import dev.retryagent.it.harness.RecordedRequest;
import dev.retryagent.it.harness.Reply;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The java.net.http hook itself: every call of an application goes through it exactly once, a call
 * that needs no retry reaches the server exactly once and unchanged, and {@code mode=off} leaves
 * the client alone. The retry behaviour is {@link JdkRetryScenarios}'.
 */
class JdkHttpHookIT {
  private CountingServer server;

  @BeforeEach
  void startServer() throws Exception {
    server = CountingServer.start();
  }

  @AfterEach
  void stopServer() throws Exception {
    server.close();
  }

  private String base() {
    return server.uri("").toString();
  }

  @ParameterizedTest
  @MethodSource("dev.retryagent.it.harness.AgentScenarios#jdks")
  void getAndPostThroughSendReachTheServerOnceEachThroughTheHook(Path jdk) {
    server.enqueue(Reply.ok("got"), Reply.status(201).withBody("posted"));

    ForkedJvm.Result r =
        ForkedJvm.run(
            jdk, null, JdkHttpApp.class, "send", base(), "GET:/items", "POST:/items:hello");

    assertThat(r.exitCode()).as(r.describe()).isZero();
    assertThat(r.value("1.status")).as(r.describe()).isEqualTo("200");
    assertThat(r.value("1.body")).isEqualTo("got");
    assertThat(r.value("2.status")).isEqualTo("201");
    assertThat(r.value("2.body")).isEqualTo("posted");
    assertThat(r.value("intercepted")).isEqualTo("2");
    List<RecordedRequest> requests = server.requests();
    assertThat(requests).extracting(RecordedRequest::method).containsExactly("GET", "POST");
    assertThat(requests.get(1).bodyText()).isEqualTo("hello");
  }

  @ParameterizedTest
  @MethodSource("dev.retryagent.it.harness.AgentScenarios#jdks")
  void getAndPostThroughSendAsyncReachTheServerOnceEachThroughTheHook(Path jdk) {
    server.enqueue(Reply.ok("got"), Reply.status(201).withBody("posted"));

    ForkedJvm.Result r =
        ForkedJvm.run(
            jdk, null, JdkHttpApp.class, "async", base(), "GET:/items", "POST:/items:hello");

    assertThat(r.exitCode()).as(r.describe()).isZero();
    assertThat(r.value("1.status")).as(r.describe()).isEqualTo("200");
    assertThat(r.value("2.status")).isEqualTo("201");
    assertThat(r.value("intercepted")).isEqualTo("2");
    assertThat(server.requestCount()).isEqualTo(2);
    assertThat(server.requests().get(1).bodyText()).isEqualTo("hello");
  }

  @ParameterizedTest
  @MethodSource("dev.retryagent.it.harness.AgentScenarios#jdks")
  void aConnectionResetReachesTheCallerAsAnIoException(Path jdk) {
    server.enqueue(Reply.reset());

    ForkedJvm.Result r = ForkedJvm.run(jdk, null, JdkHttpApp.class, "send", base(), "POST:/x:a");

    assertThat(r.exitCode()).as(r.describe()).isZero();
    assertThat(r.value("1.io")).as(r.describe()).isEqualTo("true");
    assertThat(r.value("intercepted")).isEqualTo("1");
    // Neither the JDK nor the agent repeats a POST without idempotency key after a reset
    assertThat(server.requestCount()).isEqualTo(1);
  }

  @ParameterizedTest
  @MethodSource("dev.retryagent.it.harness.AgentScenarios#jdks")
  void withModeOffNothingIsInterceptedAndTheCallStillWorks(Path jdk) {
    ForkedJvm.Result r = ForkedJvm.run(jdk, "mode=off", JdkHttpApp.class, "send", base(), "GET:/x");

    assertThat(r.value("1.status")).as(r.describe()).isEqualTo("200");
    assertThat(r.value("intercepted")).isEqualTo("0");
    assertThat(r.stderrLines("retry-agent")).singleElement().asString().contains("mode=off");
  }
}
