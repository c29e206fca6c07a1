package dev.retryagent.agent.tooling;

import dev.retryagent.agent.runtime.AgentLog;
import java.util.Map;
import java.util.WeakHashMap;

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

  /**
   * Simple names of the OpenTelemetry agent's loaders, wherever a distribution relocates them; they
   * count only in a package that {@link #AGENT_WORDS} says is an agent's: plugin hosts name their
   * own loaders {@code ExtensionClassLoader} too, and those load the application's clients.
   */
  private static final String[] AGENT_LOADER_NAMES = {
    "AgentClassLoader", "ExtensionClassLoader", "InstrumentationModuleClassLoader",
  };

  /**
   * Words in the package of a relocated OpenTelemetry loader (AWS's, Splunk's, Grafana's
   * distributions keep {@code opentelemetry} and {@code javaagent}); each in dots is a whole
   * package segment. Not {@code agent}, {@code bootstrap} or {@code apm}: applications name their
   * own packages so ({@code com.acme.agent.plugins}), and the APM agents whose loaders sit in such
   * packages (SkyWalking, Pinpoint, Elastic, Datadog) are matched by {@link #AGENT_PACKAGES}.
   */
  private static final String[] AGENT_WORDS = {
    "opentelemetry", "javaagent", ".otel.",
  };

  /** Loaders already said to be left alone; made at the first one (none in most JVMs). */
  private static Map<ClassLoader, Boolean> reported; // guarded by ForeignLoaders.class

  private ForeignLoaders() {}

  /** True when {@code loader} or an ancestor of it belongs to an agent. */
  public static boolean isAgentLoader(ClassLoader loader) {
    return agentLoaderClass(loader) != null;
  }

  /**
   * True when {@code loader} or an ancestor of it belongs to an agent, whose classes the hooks
   * leave alone; the first time for each loader of another agent, one line says so and why, so a
   * client left without retries is never a silent surprise.
   */
  public static boolean leavesAlone(ClassLoader loader) {
    String why = agentLoaderClass(loader);
    if (why == null) {
      return false;
    }
    try {
      if (!isOwn(why) && firstReport(loader)) {
        AgentLog.info(
            "leaves the HTTP clients of "
                + LoaderNames.describe(loader)
                + " alone, without retries: another agent's loader ("
                + why
                + ")");
      }
    } catch (RuntimeException | LinkageError e) {
      // The map asks the loader's own hashCode and equals, which may fail (r34): the line is lost,
      // the answer stands, and nothing escapes into the transformer or the install that asked.
    }
    return true;
  }

  private static synchronized boolean firstReport(ClassLoader loader) {
    if (reported == null) {
      reported = new WeakHashMap<>();
    }
    return reported.put(loader, Boolean.TRUE) == null;
  }

  /** The name of the agent loader class that makes {@code loader} an agent's, or null. */
  private static String agentLoaderClass(ClassLoader loader) {
    for (ClassLoader l = loader; l != null; l = l.getParent()) {
      for (Class<?> c = l.getClass(); c != null && c != ClassLoader.class; c = c.getSuperclass()) {
        if (isAgentLoaderClass(c.getName())) {
          return c.getName();
        }
      }
    }
    return null;
  }

  private static boolean isOwn(String className) {
    for (String own : OWN_LOADERS) {
      if (className.equals(own)) {
        return true;
      }
    }
    return false;
  }

  static boolean isAgentLoaderClass(String className) {
    if (isOwn(className)) {
      return true;
    }
    for (String prefix : AGENT_PACKAGES) {
      if (className.startsWith(prefix)) {
        return true;
      }
    }
    int dot = className.lastIndexOf('.');
    if (dot < 0) {
      return false;
    }
    String simple = className.substring(dot + 1);
    for (String name : AGENT_LOADER_NAMES) {
      if (simple.equals(name)) {
        // "." before and after: each word in dots matches a whole segment, the first one too
        String pkg = "." + className.substring(0, dot + 1);
        for (String word : AGENT_WORDS) {
          if (pkg.contains(word)) {
            return true;
          }
        }
        return false;
      }
    }
    return false;
  }
}
