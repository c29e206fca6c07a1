package dev.retryagent.agent.jdk;

import dev.retryagent.agent.runtime.AgentLog;
import dev.retryagent.agent.tooling.HookTransformer;

/**
 * Applies {@link JdkHttpHook} to {@code HttpClientFacade} of the {@code java.net.http} module when
 * the JDK loads (or retransforms) it.
 *
 * <p>Every class the JVM loads passes through here, so the common path is one string comparison and
 * touches nothing else (no map, no lock: that is also what keeps it clear of the {@code
 * ClassCircularityError} traps of agents that do more). A failure to instrument is reported on
 * stderr, once, and the class stays unchanged: the application runs without retries, never broken.
 */
final class JdkHttpTransformer extends HookTransformer {
  private volatile Throwable failure;

  JdkHttpTransformer() {
    super("jdk-http", "send, sendAsync", "HttpClientFacade");
  }

  @Override
  protected boolean matches(String internalName) {
    return JdkHttpHook.TARGET.equals(internalName);
  }

  @Override
  protected boolean retransforms(Class<?> loaded) {
    return loaded.getName().equals(JdkHttpHook.TARGET_NAME);
  }

  @Override
  protected boolean accepts(Module module, ClassLoader loader, String internalName) {
    // the same name outside the JDK module is not the class we mean
    return module != null && JdkHttpHook.TARGET_MODULE.equals(module.getName());
  }

  @Override
  protected byte[] rewrite(String internalName, byte[] classfile) {
    return JdkHttpHook.instrument(classfile);
  }

  @Override
  protected void failed(ClassLoader loader, String internalName, Throwable cause) {
    if (failure == null) {
      failure = cause;
      AgentLog.error(
          "jdk-http NOT hooked, java.net.http calls run without retries: could not instrument "
              + JdkHttpHook.TARGET_NAME
              + " ("
              + cause
              + ")");
    }
  }

  @Override
  protected String notHookedReason() {
    Throwable t = failure;
    return t == null ? null : t.toString();
  }

  /** Why instrumentation failed, or null. */
  Throwable failure() {
    return failure;
  }
}
