package dev.retryagent.agent.jdk;

import dev.retryagent.agent.runtime.AgentRuntime;
import dev.retryagent.agent.tooling.HookTransformer;

/** Arms the {@code java.net.http} hook: its handler first, then the transformer. */
public final class JdkHttpInstallation {
  private JdkHttpInstallation() {}

  /**
   * Registers the hook's handler and returns its transformer, to be installed ({@link
   * HookTransformer#installAll}); its start-up line's fragment is {@code jdk-http armed (send,
   * sendAsync)} while {@code HttpClientFacade} is not loaded yet (the usual case at start-up: it is
   * rewritten when the application builds its first client), {@code jdk-http hooked (...)} when it
   * was loaded and has been rewritten now (a late attach), or {@code jdk-http NOT hooked (why)}.
   */
  public static HookTransformer arm(AgentRuntime runtime) {
    // The handler is in place before any class can be instrumented, so no call finds the hook
    // without a handler; the engine is built on first use to keep start-up light.
    JdkHttpEntry.register(new JdkHttpInterceptor(runtime));
    return new JdkHttpTransformer();
  }
}
