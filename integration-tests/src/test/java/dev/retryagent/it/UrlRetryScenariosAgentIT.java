package dev.retryagent.it;

import static dev.retryagent.it.harness.Reply.ok;
import static dev.retryagent.it.harness.Reply.status;
import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.DynamicContainer.dynamicContainer;
import static org.junit.jupiter.api.DynamicTest.dynamicTest;

import dev.retryagent.it.apps.UrlLateAttachApp;
import dev.retryagent.it.harness.ConnectProxy;
import dev.retryagent.it.harness.CountingServer;
import dev.retryagent.it.harness.ForkedJvm;
import dev.retryagent.it.harness.Jdks;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.DynamicNode;
import org.junit.jupiter.api.TestFactory;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The {@code HttpURLConnection} scenarios with {@code -javaagent:retry-agent.jar=url-scenarios.yml}
 * and no other JVM option, Spring, Feign and Jersey on the class path; plus the off switch.
 */
class UrlRetryScenariosAgentIT extends UrlRetryScenarios {
  @Override
  ForkedJvm.Builder wire(ForkedJvm.Builder jvm, Path config, String mode) {
    return jvm.agentArgs("config=" + config + (mode == null ? "" : ",mode=" + mode))
        .classpath(legacyJars());
  }

  @Override
  boolean throughAgent() {
    return true;
  }

  @ParameterizedTest
  @MethodSource("dev.retryagent.it.harness.AgentScenarios#jdks")
  void aLateAttachRewritesTheLoadedJdkClassesAndNewConnectionsRetry(Path jdk) throws Exception {
    try (CountingServer server = CountingServer.start()) {
      server.enqueue(status(503), status(503), ok("done"));
      ForkedJvm.Result r =
          ForkedJvm.builder(jdk)
              .withoutAgent()
              .jvmArgs("-Djdk.attach.allowAttachSelf=true")
              .mainClass(UrlLateAttachApp.class)
              .args(ForkedJvm.agentJar().toString(), server.uri("/late").toString())
              .run();

      // the call before the attach saw the first 503 as it is; the one after is retried
      assertThat(r.value("before.status")).as(r.describe()).isEqualTo("503");
      assertThat(r.value("before.class")).isEqualTo("sun.net.www.protocol.http.HttpURLConnection");
      assertThat(r.value("after.status")).isEqualTo("200");
      assertThat(r.value("after.class")).endsWith("RetryingHttpConnection");
      assertThat(server.requestCount()).isEqualTo(3);
      assertThat(r.stderr()).contains("url-connection hooked").doesNotContain("NOT hooked");
    }
  }

  /**
   * https through an HTTP proxy, {@code connect()} first (as Spring's {@code RestTemplate} does):
   * POSTs without key, all answered 200, then a GET, on a route whose breaker opens at its first
   * failure. The agent switches the JDK's resend off for such a POST already as {@code connect()}
   * reads the proxy's {@code CONNECT} reply, which (no length) leaves the switch on; the response
   * step took it for the JDK's resend: two attempts, a retry and a failure of the host per POST,
   * and the breaker opened.
   */
  @TestFactory
  Stream<DynamicNode> httpsThroughAProxy() throws IOException {
    List<Call> calls = new ArrayList<>();
    for (int i = 1; i <= 8; i++) {
      calls.add(call("p" + i, "url-connect", "POST", "/continue/charges", "", "{\"amount\":1}"));
    }
    calls.add(call("g", "url", "GET", "/continue/items", "", ""));
    Scenario proxied =
        new Scenario(
            "https through a proxy, connect() first: POSTs without key are one attempt each",
            https(s -> s.setDefaultReply(ok("fine"))),
            calls,
            (o, s) -> {
              for (Call c : calls) {
                assertThat(o.get(c.name(), "error")).as(c.name()).isNull();
                assertThat(o.status(c.name())).as(c.name()).isEqualTo(200);
              }
              assertThat(s.requestCount()).isEqualTo(9);
              assertThat(o.retries()).isZero();
            });
    List<DynamicNode> nodes = new ArrayList<>();
    for (Path jdk : Jdks.all()) {
      try (ConnectProxy proxy = ConnectProxy.start()) {
        List<String> options =
            List.of(
                "-Dhttps.proxyHost=127.0.0.1",
                "-Dhttps.proxyPort=" + proxy.port(),
                "-Dhttp.nonProxyHosts="); // empty: not even loopback bypasses it
        List<DynamicNode> tests =
            new ArrayList<>(
                run(jdk, config("url-scenarios.yml"), null, options, List.of(proxied)).toList());
        List<String> tunnels = proxy.tunnels();
        tests.add(
            dynamicTest(
                "the calls went through the proxy",
                () -> assertThat(tunnels).isNotEmpty().allMatch(t -> t.startsWith("127.0.0.1:"))));
        nodes.add(dynamicContainer("JDK " + Jdks.featureOf(jdk), tests));
      }
    }
    return nodes.stream();
  }

  @TestFactory
  Stream<DynamicNode> clientSwitchedOff() {
    Scenario off =
        new Scenario(
            "with agent.clients.url-connection: false the JDK's connection is untouched",
            http(s -> s.enqueue(status(503), ok("never"))),
            List.of(call("a", "url", "GET", "/v1/items", "", "")),
            (o, s) -> {
              assertThat(o.status("a")).isEqualTo(503);
              assertThat(o.get("a", "class"))
                  .isEqualTo("sun.net.www.protocol.http.HttpURLConnection");
              assertThat(s.requestCount()).isEqualTo(1);
              assertThat(o.result().stderr())
                  .contains("url-connection off (agent.clients.url-connection: false)");
            });
    List<DynamicNode> nodes = new ArrayList<>();
    for (Path jdk : Jdks.all()) {
      nodes.add(
          dynamicContainer(
              "JDK " + Jdks.featureOf(jdk),
              run(jdk, config("url-off.yml"), null, List.of(), List.of(off))));
    }
    return nodes.stream();
  }
}
