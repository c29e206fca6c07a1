package dev.retryagent.agent.apache;

import dev.retryagent.agent.runtime.AgentLog;
import dev.retryagent.agent.tooling.CauseLine;
import dev.retryagent.agent.tooling.ForeignLoaders;
import dev.retryagent.agent.tooling.HookTransformer;
import dev.retryagent.agent.tooling.LoaderNames;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Applies {@link ApacheHook} to Apache HttpClient's classes when a class loader defines (or
 * retransforms) them, in every class loader except those of other agents ({@link ForeignLoaders})
 * and one that does not resolve {@code java.lang.RetryAgentBridge} to the bridge.
 *
 * <p>Every class the JVM loads passes through here: the common path is a prefix test on the name. A
 * failure to instrument is reported on stderr once per class name and the class stays unchanged:
 * that HttpClient runs without retries, never broken.
 */
final class ApacheTransformer extends HookTransformer {
  static final String HOOKS =
      "4.5 doExecute and HttpClientBuilder, 5.x HttpClientBuilder, HttpAsyncClientBuilder and"
          + " H2AsyncClientBuilder";

  private final Set<String> failedClasses = ConcurrentHashMap.newKeySet();
  private volatile String failure;
  private volatile boolean libraryFailed;

  ApacheTransformer() {
    super("apache-httpclient", HOOKS, "Apache HttpClient");
  }

  @Override
  protected boolean matches(String internalName) {
    return isTarget(internalName) || ApacheHook.LIBRARY_4.equals(internalName);
  }

  /** True for the internal names of the classes {@link ApacheHook} rewrites; prefix test first. */
  static boolean isTarget(String internalName) {
    return internalName != null
        && internalName.startsWith("org/apache/h")
        && (internalName.equals(ApacheHook.BUILDER_5)
            || internalName.equals(ApacheHook.BUILDER_5_ASYNC)
            || internalName.equals(ApacheHook.BUILDER_5_H2)
            || internalName.equals(ApacheHook.BUILDER_4)
            || internalName.equals(ApacheHook.INTERNAL_4)
            || internalName.equals(ApacheHook.MINIMAL_4)
            || internalName.equals(ApacheHook.ABSTRACT_4));
  }

  @Override
  protected boolean retransforms(Class<?> loaded) {
    String name = loaded.getName();
    return (name.equals(ApacheHook.LIBRARY_4_NAME)
            || (name.startsWith("org.apache.h") && isTarget(name.replace('.', '/'))))
        && !ForeignLoaders.leavesAlone(loaded.getClassLoader());
  }

  @Override
  protected boolean accepts(Module module, ClassLoader loader, String internalName) {
    // the application's copy of the library too, never the agent's own (its loader or glue's)
    if (ForeignLoaders.leavesAlone(loader)) {
      return false;
    }
    return linksToBridge(loader);
  }

  @Override
  protected byte[] rewrite(String internalName, byte[] classfile) {
    return ApacheHook.LIBRARY_4.equals(internalName)
        ? ApacheHook.instrumentLibrary(classfile)
        : ApacheHook.instrument(internalName, classfile);
  }

  @Override
  protected void failed(ClassLoader loader, String internalName, Throwable cause) {
    if (ApacheHook.LIBRARY_4.equals(internalName)) {
      // HttpClient is hooked all the same: only the library's own calls are affected.
      if (!libraryFailed) {
        libraryFailed = true;
        AgentLog.error(
            "the application's own retry-agent-core (RetryingCloseableHttpClient) in "
                + LoaderNames.describe(loader)
                + " is not recognised ("
                + CauseLine.of(cause)
                + "): its Apache HttpClient 4.5 calls are retried by the library and by the agent");
      }
      return;
    }
    if (!failedClasses.add(internalName)) {
      return;
    }
    String why =
        "could not instrument " + internalName.replace('/', '.') + " (" + CauseLine.of(cause) + ")";
    failure = why;
    AgentLog.error(
        "apache-httpclient NOT hooked in "
            + LoaderNames.describe(loader)
            + ", its clients run without retries: "
            + why);
  }

  @Override
  protected String notHookedReason() {
    return failure;
  }
}
