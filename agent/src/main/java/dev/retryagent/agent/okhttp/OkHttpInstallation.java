package dev.retryagent.agent.okhttp;

import dev.retryagent.agent.runtime.AgentRuntime;
import dev.retryagent.engine.RetryEngine;
import java.lang.instrument.Instrumentation;

/** Arms the OkHttp hooks: their handler first, then the transformer. */
public final class OkHttpInstallation {
  private OkHttpInstallation() {}

  /**
   * Installs the hooks and returns the start-up line's fragment for them: {@code okhttp armed
   * (...)} while no OkHttp is loaded (the usual case at start-up: each copy is rewritten when a
   * class loader defines it), {@code okhttp hooked (...)} when a loaded copy has been rewritten now
   * (a late attach, or another agent loaded it first), or {@code okhttp NOT hooked (why)}.
   */
  public static String install(Instrumentation inst, AgentRuntime runtime) {
    OkHttpEntry.register(
        new OkHttpLoaders(new RuntimeAgent(runtime), OkHttpInstallation.class.getClassLoader()));
    // Clients built before a late attach keep the interceptors they have.
    return new OkHttpTransformer().install(inst);
  }

  /** The agent as the OkHttp side sees it. */
  private static final class RuntimeAgent implements OkHttpSupport.Agent {
    private final AgentRuntime runtime;

    RuntimeAgent(AgentRuntime runtime) {
      this.runtime = runtime;
    }

    @Override
    public RetryEngine engine() {
      return runtime.engine();
    }

    @Override
    public boolean enabled() {
      return runtime.okhttpEnabled();
    }
  }
}
