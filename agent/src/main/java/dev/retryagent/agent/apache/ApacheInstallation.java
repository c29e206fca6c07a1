package dev.retryagent.agent.apache;

import dev.retryagent.agent.runtime.AgentRuntime;
import dev.retryagent.agent.tooling.HookTransformer;
import dev.retryagent.agent.tooling.MadeAtFirstUse;
import dev.retryagent.engine.RetryEngine;

/**
 * Arms the Apache HttpClient hooks: their handler first, then the transformer. The handler proper
 * (each HttpClient copy's support and glue loader) is made at the first hook, so an application
 * without HttpClient never loads its classes before {@code main} (issue 13); until then this is the
 * handler.
 */
public final class ApacheInstallation extends MadeAtFirstUse<ApacheHandler>
    implements ApacheHandler {
  private final AgentRuntime runtime;

  private ApacheInstallation(AgentRuntime runtime) {
    this.runtime = runtime;
  }

  /**
   * Registers the hooks' handler and returns their transformer, to be installed ({@link
   * HookTransformer#installAll}); its start-up line's fragment is {@code apache-httpclient armed
   * (...)} while no HttpClient is loaded (the usual case at start-up: each copy is rewritten when a
   * class loader defines it), {@code apache-httpclient hooked (...)} when a loaded copy has been
   * rewritten now (a late attach, or another agent loaded it first), or {@code apache-httpclient
   * NOT hooked (why)}.
   */
  public static HookTransformer arm(AgentRuntime runtime) {
    ApacheEntry.register(new ApacheInstallation(runtime));
    // 5.x clients built before a late attach keep the execution chain they have.
    return new ApacheTransformer();
  }

  @Override
  protected ApacheHandler make() {
    // Made in RuntimeAgent: verifying this class would otherwise load ApacheSupport.Agent already.
    return RuntimeAgent.handler(runtime);
  }

  @Override
  public void builderCreated(Object builder) {
    get().builderCreated(builder);
  }

  @Override
  public Object execute(Object client, Object target, Object request, Object context) {
    return get().execute(client, target, request, context);
  }

  @Override
  public Object libraryExecute(Object client, Object target, Object request, Object context) {
    return get().libraryExecute(client, target, request, context);
  }

  /** The agent as the HttpClient side sees it. */
  private static final class RuntimeAgent implements ApacheSupport.Agent {
    private final AgentRuntime runtime;

    private RuntimeAgent(AgentRuntime runtime) {
      this.runtime = runtime;
    }

    /** The handler proper, for the agent {@code runtime}. */
    static ApacheHandler handler(AgentRuntime runtime) {
      return new ApacheLoaders(
          new RuntimeAgent(runtime), ApacheInstallation.class.getClassLoader());
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
