package dev.retryagent.agent.jdk;

import dev.retryagent.agent.runtime.AgentLog;
import dev.retryagent.agent.tooling.CauseLine;
import dev.retryagent.agent.tooling.HookTransformer;
import dev.retryagent.agent.tooling.LoaderNames;

/**
 * Applies {@link JdkHttpHook} to {@code HttpClientFacade} of the {@code java.net.http} module when
 * the JDK loads (or retransforms) it, and to the application's own copy of the library's {@code
 * RetryingHttpClient$DirectTransport}, if it has one.
 *
 * <p>Every class the JVM loads passes through here, so the common path is one string comparison and
 * touches nothing else (no map, no lock: that is also what keeps it clear of the {@code
 * ClassCircularityError} traps of agents that do more). A failure to instrument is reported on
 * stderr, once, and the class stays unchanged: the application runs without retries, never broken.
 */
final class JdkHttpTransformer extends HookTransformer {
  private volatile Throwable failure;
  private volatile boolean libraryFailed;

  JdkHttpTransformer() {
    super("jdk-http", "send, sendAsync", "HttpClientFacade");
  }

  @Override
  protected boolean matches(String internalName) {
    return JdkHttpHook.TARGET.equals(internalName) || JdkHttpHook.LIBRARY.equals(internalName);
  }

  @Override
  protected boolean retransforms(Class<?> loaded) {
    String name = loaded.getName();
    return name.equals(JdkHttpHook.TARGET_NAME)
        || (name.equals(JdkHttpHook.LIBRARY_NAME) && !ours(loaded.getClassLoader()));
  }

  @Override
  protected boolean accepts(Module module, ClassLoader loader, String internalName) {
    if (JdkHttpHook.LIBRARY.equals(internalName)) {
      // the application's copy of the library, never the agent's own
      return !ours(loader) && linksToBridge(loader);
    }
    // the same name outside the JDK module is not the class we mean
    return module != null && JdkHttpHook.TARGET_MODULE.equals(module.getName());
  }

  /** The agent's own loader, which holds its own copy of the library's classes. */
  private static boolean ours(ClassLoader loader) {
    return loader == JdkHttpTransformer.class.getClassLoader();
  }

  @Override
  protected byte[] rewrite(String internalName, byte[] classfile) {
    return JdkHttpHook.LIBRARY.equals(internalName)
        ? JdkHttpHook.instrumentLibrary(classfile)
        : JdkHttpHook.instrument(classfile);
  }

  @Override
  protected void failed(ClassLoader loader, String internalName, Throwable cause) {
    if (JdkHttpHook.LIBRARY.equals(internalName)) {
      // The JDK's client is hooked all the same: only the library's own calls are affected.
      if (!libraryFailed) {
        libraryFailed = true;
        AgentLog.error(
            "the application's own retry-agent-core (RetryingHttpClient) in "
                + LoaderNames.describe(loader)
                + " is not recognised ("
                + CauseLine.of(cause)
                + "): its java.net.http calls are retried by the library and by the agent");
      }
      return;
    }
    if (failure == null) {
      failure = cause;
      AgentLog.error(
          "jdk-http NOT hooked, java.net.http calls run without retries: could not instrument "
              + JdkHttpHook.TARGET_NAME
              + " ("
              + CauseLine.of(cause)
              + ")");
    }
  }

  @Override
  protected String notHookedReason() {
    Throwable t = failure;
    return t == null ? null : CauseLine.of(t);
  }

  /** Why instrumentation failed, or null. */
  Throwable failure() {
    return failure;
  }
}
