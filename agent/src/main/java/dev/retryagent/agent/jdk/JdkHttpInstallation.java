package dev.retryagent.agent.jdk;

import dev.retryagent.agent.runtime.AgentRuntime;
import dev.retryagent.agent.tooling.HookTransformer;
import java.lang.instrument.Instrumentation;

/** Arms the {@code java.net.http} hook: its handler first, then the transformer. */
public final class JdkHttpInstallation {
  // Kept here, in a class loaded at start-up anyway: JdkInternals loads only when first needed.
  private static volatile Instrumentation instrumentation;

  private JdkHttpInstallation() {}

  /** The JVM's instrumentation, as {@link #arm} was given it; null before, or in tests. */
  static Instrumentation instrumentation() {
    return instrumentation;
  }

  /**
   * Registers the hook's handler and returns its transformer, to be installed ({@link
   * HookTransformer#installAll}); its start-up line's fragment is {@code jdk-http armed (send,
   * sendAsync)} while {@code HttpClientFacade} is not loaded yet (the usual case at start-up: it is
   * rewritten when the application builds its first client), {@code jdk-http hooked (...)} when it
   * was loaded and has been rewritten now (a late attach), or {@code jdk-http NOT hooked (why)}.
   *
   * @param inst kept to open {@code java.net.http}'s internal package should it be needed ({@link
   *     JdkInternals}); may be null
   */
  public static HookTransformer arm(Instrumentation inst, AgentRuntime runtime) {
    instrumentation = inst; // for JdkInternals, only if a response is ever given back late
    // The handler is in place before any class can be instrumented, so no call finds the hook
    // without a handler; the engine is built on first use to keep start-up light.
    JdkHttpEntry.register(new JdkHttpInterceptor(runtime));
    return new JdkHttpTransformer();
  }
}
