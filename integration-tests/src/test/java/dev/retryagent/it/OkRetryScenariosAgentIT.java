package dev.retryagent.it;

import dev.retryagent.it.harness.ForkedJvm;
import java.nio.file.Path;

/** The OkHttp retry scenarios with {@code -javaagent:retry-agent.jar=scenarios.yml}. */
class OkRetryScenariosAgentIT extends OkRetryScenarios {
  @Override
  ForkedJvm.Builder wire(ForkedJvm.Builder jvm, Path config, String mode) {
    return jvm.agentArgs("config=" + config + (mode == null ? "" : ",mode=" + mode));
  }
}
