package dev.retryagent.it;

import static dev.retryagent.it.harness.Reply.ok;
import static dev.retryagent.it.harness.Reply.status;
import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.DynamicContainer.dynamicContainer;

import dev.retryagent.it.harness.ApacheVersions;
import dev.retryagent.it.harness.ForkedJvm;
import dev.retryagent.it.harness.Jdks;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.DynamicNode;
import org.junit.jupiter.api.TestFactory;

/**
 * The Apache HttpClient retry scenarios with {@code
 * -javaagent:retry-agent.jar=apache-scenarios.yml}, and the off switch.
 */
class ApacheRetryScenariosAgentIT extends ApacheRetryScenarios {
  @Override
  ForkedJvm.Builder wire(ForkedJvm.Builder jvm, Path config, String mode) {
    return jvm.agentArgs("config=" + config + (mode == null ? "" : ",mode=" + mode));
  }

  @TestFactory
  Stream<DynamicNode> offSwitch() {
    Scenario off =
        new Scenario(
            "agent.clients.apache-httpclient: false leaves HttpClient alone",
            s -> s.enqueue(status(503), ok("never")),
            List.of(new Call("a", "GET", "/v1/items", "", "")),
            (o, s, major) -> {
              // 5.x resends a 503 once by itself, with or without the agent.
              assertThat(o.status("a")).isEqualTo(major == 4 ? 503 : 200);
              assertThat(s.requestCount()).isEqualTo(major == 4 ? 1 : 2);
              assertThat(o.result().stderr())
                  .contains("apache-httpclient off (agent.clients.apache-httpclient: false)");
            });
    List<DynamicNode> nodes = new ArrayList<>();
    for (Path jdk : Jdks.all()) {
      for (ApacheVersions version : List.of(ApacheVersions.V4_5, ApacheVersions.V5_6)) {
        ForkedJvm.Builder jvm =
            ForkedJvm.builder(jdk).agentArgs("config=" + config("apache-off.yml"));
        nodes.add(
            dynamicContainer(
                "JDK " + Jdks.featureOf(jdk) + ", " + version, run(jvm, version, List.of(off))));
      }
    }
    return nodes.stream();
  }
}
