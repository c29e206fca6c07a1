package dev.retryagent.it;

import static dev.retryagent.it.harness.Reply.ok;
import static dev.retryagent.it.harness.Reply.status;
import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.DynamicContainer.dynamicContainer;

import dev.retryagent.it.harness.ForkedJvm;
import dev.retryagent.it.harness.Jdks;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.DynamicNode;
import org.junit.jupiter.api.TestFactory;

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
