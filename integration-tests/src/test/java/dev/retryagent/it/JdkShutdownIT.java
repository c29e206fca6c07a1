package dev.retryagent.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.retryagent.it.apps.JdkShutdownApp;
import dev.retryagent.it.harness.CountingServer;
import dev.retryagent.it.harness.ForkedJvm;
import dev.retryagent.it.harness.Jdks;
import dev.retryagent.it.harness.Reply;
import java.time.Duration;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Java 21+: {@code HttpClient.close()} and {@code shutdown()} let the requests in progress finish,
 * and the agent's calls waiting for a retry are among them: the retry is made, and {@code close()}
 * returns after the call, as without the agent. Run on JDK 25, with and without the agent, against
 * a server that answers 503 ({@code Retry-After: 1}) then 200; the application shuts the client
 * down once the 503 was sent.
 */
class JdkShutdownIT {
  private CountingServer server;

  @BeforeEach
  void startServer() throws Exception {
    server = startScriptedServer();
  }

  @AfterEach
  void stopServer() throws Exception {
    server.close();
  }

  private static CountingServer startScriptedServer() throws Exception {
    return startScriptedServer(1);
  }

  /** 503 asking for a retry in {@code retryAfterSeconds}, then 200. */
  private static CountingServer startScriptedServer(int retryAfterSeconds) throws Exception {
    CountingServer s = CountingServer.start();
    s.enqueue(
        Reply.status(503).withHeader("Retry-After", Integer.toString(retryAfterSeconds)),
        Reply.ok("fine"));
    return s;
  }

  private static ForkedJvm.Running start(
      CountingServer server, boolean agent, String way, String method) {
    ForkedJvm.Builder b = ForkedJvm.builder(Jdks.jdk25());
    if (!agent) {
      b.withoutAgent();
    }
    ForkedJvm.Running app =
        b.mainClass(JdkShutdownApp.class)
            .args(way, method, server.uri("/items").toString())
            .timeout(Duration.ofSeconds(60))
            .start();
    app.awaitValue("started");
    await().atMost(Duration.ofSeconds(30)).until(() -> server.requestCount() == 1);
    app.send("go");
    app.awaitValue("terminated");
    return app;
  }

  @ParameterizedTest
  @ValueSource(strings = {"sendAsync", "send"})
  void closeWaitsForTheCallsRetryWhichSucceeds(String way) throws Exception {
    String refusal;
    try (CountingServer plain = startScriptedServer();
        ForkedJvm.Running without = start(plain, false, way, "close")) {
      assertThat(without.value("result.status")).as(without.stderr()).isEqualTo("503");
      // Not doneWhenItReturned, here or below: the JDK's close() returns once its exchange has
      // ended, and the application's future completes on the client's executor, now and then just
      // after (seen once, sendAsync, on a loaded machine); the agent ends its call the same way.
      // What close() waits for shows in the result: the retry made, its 200 given.
      assertThat(plain.requestCount()).isEqualTo(1);
      refusal = without.value("after.error") + ": " + without.value("after.message");
    }

    try (ForkedJvm.Running with = start(server, true, way, "close")) {
      assertThat(with.value("result.status")).as(with.stderr()).isEqualTo("200");
      assertThat(with.value("result.body")).isEqualTo("fine");
      assertThat(with.value("after.error") + ": " + with.value("after.message"))
          .isEqualTo(refusal)
          .isEqualTo("java.io.IOException: closed");
      assertThat(with.value("terminated")).isEqualTo("true");
      assertThat(server.requestCount()).isEqualTo(2);
    }
  }

  @ParameterizedTest
  @ValueSource(strings = {"sendAsync", "send"})
  void shutdownReturnsAtOnceAndTheClientTerminatesAfterTheRetry(String way) {
    try (ForkedJvm.Running with = start(server, true, way, "shutdown")) {
      assertThat(with.value("doneWhenItReturned")).as(with.stderr()).isEqualTo("false");
      assertThat(with.value("after.message")).isEqualTo("closed");
      assertThat(with.value("result.status")).isEqualTo("200");
      assertThat(with.value("terminated")).isEqualTo("true");
      assertThat(server.requestCount()).isEqualTo(2);
    }
  }

  @ParameterizedTest
  @ValueSource(strings = {"sendAsync", "send"})
  void shutdownNowSendsNothingMoreAndTheCallFailsAsAnAbortedOne(String way) throws Exception {
    // A retry due in 25 s: shutdownNow() ends the call's wait for it (the app waits 15 s at most
    // for the call's end), where the call used to fail only once its delay was over.
    try (CountingServer slow = startScriptedServer(25);
        ForkedJvm.Running with = start(slow, true, way, "shutdownNow")) {
      assertThat(with.value("result.error")).as(with.stderr()).isEqualTo("java.io.IOException");
      assertThat(with.value("after.message")).isEqualTo("closed");
      assertThat(slow.requestCount()).isEqualTo(1);
    }
  }
}
