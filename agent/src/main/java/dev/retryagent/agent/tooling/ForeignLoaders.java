package dev.retryagent.agent.tooling;

/**
 * Recognises class loaders that belong to another Java agent (or to this one) by their class name,
 * so that an agent's private copy of OkHttp, say the OpenTelemetry exporter's, is never given
 * retries: that traffic is the other agent's business, and retrying it would also retry telemetry
 * about our own retries.
 *
 * <p>A loader counts when its class, one of its superclasses, or one of its parent loaders (or
 * theirs) is such a loader. Only the classes a hook rewrites are ever checked, never the rest.
 */
public final class ForeignLoaders {
  /**
   * Our own loaders: the hidden classes' and those an instrumentation defines next to a library (an
   * instrumentation with a loader of its own adds it here).
   */
  private static final String[] OWN_LOADERS = {
    "dev.retryagent.launcher.AgentClassLoader", "dev.retryagent.agent.tooling.GlueClassLoader",
  };

  /** Package prefixes of other agents' class loaders. */
  private static final String[] AGENT_PACKAGES = {
    "io.opentelemetry.javaagent.",
    "io.opentelemetry.contrib.",
    "datadog.",
    "com.datadog.",
    "com.newrelic.",
    "com.dynatrace.",
    "com.singularity.", // AppDynamics
    "com.appdynamics.",
    "co.elastic.apm.",
    "org.apache.skywalking.",
    "com.instana.",
    "io.sentry.opentelemetry.",
    "com.microsoft.applicationinsights.",
    "org.glowroot.",
    "io.pinpoint.",
    "com.navercorp.pinpoint.",
  };

  /** Simple names of the OpenTelemetry agent's loaders, wherever a distribution relocates them. */
  private static final String[] AGENT_LOADER_NAMES = {
    "AgentClassLoader", "ExtensionClassLoader", "InstrumentationModuleClassLoader",
  };

  private ForeignLoaders() {}

  /** True when {@code loader} or an ancestor of it belongs to an agent. */
  public static boolean isAgentLoader(ClassLoader loader) {
    for (ClassLoader l = loader; l != null; l = l.getParent()) {
      for (Class<?> c = l.getClass(); c != null && c != ClassLoader.class; c = c.getSuperclass()) {
        if (isAgentLoaderClass(c.getName())) {
          return true;
        }
      }
    }
    return false;
  }

  static boolean isAgentLoaderClass(String className) {
    for (String own : OWN_LOADERS) {
      if (className.equals(own)) {
        return true;
      }
    }
    for (String prefix : AGENT_PACKAGES) {
      if (className.startsWith(prefix)) {
        return true;
      }
    }
    String simple = className.substring(className.lastIndexOf('.') + 1);
    for (String name : AGENT_LOADER_NAMES) {
      if (simple.equals(name)) {
        return true;
      }
    }
    return false;
  }
}
