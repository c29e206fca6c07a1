package dev.retryagent.agent.tooling;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.URL;
import java.net.URLClassLoader;
import org.junit.jupiter.api.Test;

class ForeignLoadersTest {
  @Test
  void otherAgentsLoadersAreRecognisedByClassName() {
    assertThat(
            ForeignLoaders.isAgentLoaderClass(
                "io.opentelemetry.javaagent.bootstrap.AgentClassLoader"))
        .isTrue();
    assertThat(
            ForeignLoaders.isAgentLoaderClass(
                "io.opentelemetry.javaagent.tooling.instrumentation.indy."
                    + "InstrumentationModuleClassLoader"))
        .isTrue();
    assertThat(ForeignLoaders.isAgentLoaderClass("com.example.relocated.ExtensionClassLoader"))
        .isTrue();
    assertThat(ForeignLoaders.isAgentLoaderClass("datadog.trace.bootstrap.DatadogClassLoader"))
        .isTrue();
    assertThat(ForeignLoaders.isAgentLoaderClass("com.newrelic.bootstrap.BootstrapLoader"))
        .isTrue();
    assertThat(ForeignLoaders.isAgentLoaderClass("dev.retryagent.agent.tooling.GlueClassLoader"))
        .isTrue();
  }

  @Test
  void ourOwnLoadersAreNamedAsTheyAre() throws Exception {
    // the names are strings (the agent's loader is package-private, in the system class loader)
    assertThat(
            ForeignLoaders.isAgentLoaderClass(
                Class.forName("dev.retryagent.launcher.AgentClassLoader").getName()))
        .isTrue();
    assertThat(
            ForeignLoaders.isAgentLoaderClass(
                Class.forName("dev.retryagent.agent.tooling.GlueClassLoader").getName()))
        .isTrue();
  }

  @Test
  void applicationLoadersAreNot() {
    assertThat(
            ForeignLoaders.isAgentLoaderClass(
                "org.springframework.boot.loader.launch.LaunchedClassLoader"))
        .isFalse();
    assertThat(
            ForeignLoaders.isAgentLoaderClass(
                "org.apache.catalina.loader.ParallelWebappClassLoader"))
        .isFalse();
    assertThat(ForeignLoaders.isAgentLoaderClass("dev.retryagent.it.apps.ChildFirstLoader"))
        .isFalse();
    assertThat(ForeignLoaders.isAgentLoader(null)).isFalse();
    assertThat(ForeignLoaders.isAgentLoader(getClass().getClassLoader())).isFalse();
  }

  /** Stands in for a loader that an agent's loader created. */
  static final class ChildOfAnAgent extends URLClassLoader {
    ChildOfAnAgent(ClassLoader parent) {
      super(new URL[0], parent);
    }
  }

  @Test
  void aLoaderBelowAnAgentsLoaderBelongsToThatAgent() throws Exception {
    try (URLClassLoader agentish = new com.newrelic.stand.In();
        URLClassLoader child = new ChildOfAnAgent(agentish)) {
      assertThat(ForeignLoaders.isAgentLoader(child)).isTrue();
    }
  }
}
