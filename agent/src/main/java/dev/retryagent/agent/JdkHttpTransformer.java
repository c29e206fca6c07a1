package dev.retryagent.agent;

import java.lang.instrument.ClassFileTransformer;
import java.security.ProtectionDomain;

/**
 * Applies {@link JdkHttpHook} to {@code HttpClientImpl} when the JDK loads (or retransforms) it.
 *
 * <p>Every class the JVM loads passes through here, so the common path is one string comparison and
 * touches nothing else (no map, no lock: that is also what keeps it clear of the {@code
 * ClassCircularityError} traps of agents that do more). A failure to instrument is reported on
 * stderr, once, and the class stays unchanged: the application runs without retries, never broken.
 */
final class JdkHttpTransformer implements ClassFileTransformer {
  private volatile boolean hooked;
  private volatile Throwable failure;

  @Override
  public byte[] transform(
      Module module,
      ClassLoader loader,
      String className,
      Class<?> classBeingRedefined,
      ProtectionDomain protectionDomain,
      byte[] classfileBuffer) {
    if (!JdkHttpHook.TARGET.equals(className)
        || module == null
        || !JdkHttpHook.TARGET_MODULE.equals(module.getName())) {
      return null;
    }
    try {
      byte[] instrumented = JdkHttpHook.instrument(classfileBuffer);
      hooked = true;
      return instrumented;
    } catch (Throwable t) {
      if (failure == null) {
        failure = t;
        AgentLog.error(
            "jdk-http NOT hooked, java.net.http calls run without retries: could not instrument "
                + "jdk.internal.net.http.HttpClientImpl ("
                + t
                + ")");
      }
      return null;
    }
  }

  /** True once the class was instrumented. */
  boolean hooked() {
    return hooked;
  }

  /** Why instrumentation failed, or null. */
  Throwable failure() {
    return failure;
  }
}
