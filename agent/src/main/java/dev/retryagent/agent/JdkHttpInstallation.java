package dev.retryagent.agent;

import dev.retryagent.bootstrap.JdkHttpBridge;
import java.lang.instrument.Instrumentation;

/** Arms the {@code java.net.http} hook: bridge handler first, then the transformer. */
final class JdkHttpInstallation {
  private JdkHttpInstallation() {}

  /** Installs the hook and returns the start-up line's fragment for it. */
  static String install(Instrumentation inst, AgentRuntime runtime) {
    // The handler is in place before any class can be instrumented, so no call finds the hook
    // without a handler; the engine is built on first use to keep start-up light.
    JdkHttpBridge.setHandler(new JdkHttpInterceptor(runtime));
    JdkHttpTransformer transformer = new JdkHttpTransformer();
    inst.addTransformer(transformer, true);

    // Normally HttpClientImpl loads later and the transformer sees it then; after a late attach,
    // or when another agent loaded it first, it must be retransformed now.
    Class<?> loaded = loadedTarget(inst);
    if (loaded == null) {
      return "jdk-http hooked (send, sendAsync)";
    }
    if (!inst.isRetransformClassesSupported()) {
      return "jdk-http NOT hooked (HttpClientImpl already loaded and retransformation unsupported)";
    }
    try {
      inst.retransformClasses(loaded);
    } catch (Throwable t) {
      return "jdk-http NOT hooked (retransforming HttpClientImpl failed: " + t + ")";
    }
    return transformer.hooked()
        ? "jdk-http hooked (send, sendAsync)"
        : "jdk-http NOT hooked (" + transformer.failure() + ")";
  }

  private static Class<?> loadedTarget(Instrumentation inst) {
    String name = JdkHttpHook.TARGET.replace('/', '.');
    for (Class<?> c : inst.getAllLoadedClasses()) {
      if (c.getName().equals(name)) {
        return c;
      }
    }
    return null;
  }
}
