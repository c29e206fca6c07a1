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
    // a distribution that relocates OpenTelemetry's loaders keeps an agent's package name
    assertThat(
            ForeignLoaders.isAgentLoaderClass(
                "software.amazon.opentelemetry.javaagent.bootstrap.AgentClassLoader"))
        .isTrue();
    assertThat(
            ForeignLoaders.isAgentLoaderClass(
                "com.splunk.opentelemetry.javaagent.bootstrap.ExtensionClassLoader"))
        .isTrue();
    assertThat(ForeignLoaders.isAgentLoaderClass("com.example.otel.ExtensionClassLoader")).isTrue();
    assertThat(ForeignLoaders.isAgentLoaderClass("datadog.trace.bootstrap.DatadogClassLoader"))
        .isTrue();
    assertThat(ForeignLoaders.isAgentLoaderClass("com.newrelic.bootstrap.BootstrapLoader"))
        .isTrue();
    assertThat(ForeignLoaders.isAgentLoaderClass("dev.retryagent.agent.tooling.GlueClassLoader"))
        .isTrue();
  }

  @Test
  void theApmAgentsLoadersAreRecognisedByTheirRealNames() {
    // OpenTelemetry's, Datadog's, Elastic's, SkyWalking's and Pinpoint's as their sources name
    // them; New Relic's, Dynatrace's, AppDynamics' and Glowroot's in those agents' packages
    for (String name :
        new String[] {
          "io.opentelemetry.javaagent.bootstrap.AgentClassLoader",
          "io.opentelemetry.javaagent.tooling.ExtensionClassLoader",
          "datadog.trace.bootstrap.DatadogClassLoader",
          "co.elastic.apm.agent.bci.classloading.IndyPluginClassLoader",
          "co.elastic.apm.agent.premain.ShadedClassLoader",
          "com.newrelic.bootstrap.BootstrapLoader",
          "com.dynatrace.oneagent.sdk.OneAgentClassLoader",
          "com.singularity.ee.agent.appagent.kernel.classloader.AgentClassLoader",
          "org.glowroot.agent.weaving.IsolatedWeavingClassLoader",
          "org.apache.skywalking.apm.agent.core.plugin.loader.AgentClassLoader",
          "com.navercorp.pinpoint.bootstrap.classloader.ParallelClassLoader",
          "com.navercorp.pinpoint.bootstrap.plugin.PluginClassLoader",
        }) {
      assertThat(ForeignLoaders.isAgentLoaderClass(name)).as(name).isTrue();
    }
  }

  @Test
  void anApplicationsPackageNamedAgentBootstrapOrApmIsTheApplications() {
    for (String name :
        new String[] {
          "com.acme.agent.plugins.PluginLoader",
          "com.acme.agent.plugins.AgentClassLoader",
          "com.example.agent.bootstrap.AgentClassLoader",
          "com.acme.bootstrap.ExtensionClassLoader",
          "com.acme.apm.InstrumentationModuleClassLoader",
          "com.acme.apm.agent.ExtensionClassLoader",
        }) {
      assertThat(ForeignLoaders.isAgentLoaderClass(name)).as(name).isFalse();
    }
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
    // plugin hosts name their loaders as OpenTelemetry does: the simple name alone says nothing
    assertThat(ForeignLoaders.isAgentLoaderClass("org.pf4j.ExtensionClassLoader")).isFalse();
    assertThat(ForeignLoaders.isAgentLoaderClass("org.example.plugins.ExtensionClassLoader"))
        .isFalse();
    assertThat(ForeignLoaders.isAgentLoaderClass("com.acme.plugins.AgentClassLoader")).isFalse();
    assertThat(
            ForeignLoaders.isAgentLoaderClass("com.acme.modules.InstrumentationModuleClassLoader"))
        .isFalse();
    assertThat(ForeignLoaders.isAgentLoaderClass("ExtensionClassLoader")).isFalse();
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
