package dev.retryagent.agent.apache;

import dev.retryagent.agent.runtime.AgentRuntime;
import dev.retryagent.engine.RetryEngine;
import java.lang.instrument.Instrumentation;

/** Arms the Apache HttpClient hooks: their handler first, then the transformer. */
public final class ApacheInstallation {
  private ApacheInstallation() {}

  /**
   * Installs the hooks and returns the start-up line's fragment for them: {@code apache-httpclient
   * armed (...)} while no HttpClient is loaded (the usual case at start-up: each copy is rewritten
   * when a class loader defines it), {@code apache-httpclient hooked (...)} when a loaded copy has
   * been rewritten now (a late attach, or another agent loaded it first), or {@code
   * apache-httpclient NOT hooked (why)}.
   */
  public static String install(Instrumentation inst, AgentRuntime runtime) {
    ApacheEntry.register(
        new ApacheLoaders(new RuntimeAgent(runtime), ApacheInstallation.class.getClassLoader()));
    // 5.x clients built before a late attach keep the execution chain they have.
    return new ApacheTransformer().install(inst);
  }

  /** The agent as the HttpClient side sees it. */
  private static final class RuntimeAgent implements ApacheSupport.Agent {
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
      return runtime.apacheHttpClientEnabled();
    }
  }
}
