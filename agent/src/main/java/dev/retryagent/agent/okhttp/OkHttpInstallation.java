package dev.retryagent.agent.okhttp;

import dev.retryagent.agent.runtime.AgentRuntime;
import dev.retryagent.agent.tooling.HookTransformer;
import dev.retryagent.agent.tooling.MadeAtFirstUse;
import dev.retryagent.engine.RetryEngine;

/**
 * Arms the OkHttp hooks: their handler first, then the transformer. The handler proper (each OkHttp
 * copy's support and glue loader) is made at the first hook, so an application without OkHttp never
 * loads its classes before {@code main} (issue 13); until then this is the handler.
 */
public final class OkHttpInstallation extends MadeAtFirstUse<OkHttpHandler>
    implements OkHttpHandler {
  private final AgentRuntime runtime;
  private final OkHttpTransformer transformer;

  private OkHttpInstallation(AgentRuntime runtime, OkHttpTransformer transformer) {
    this.runtime = runtime;
    this.transformer = transformer;
  }

  /**
   * Registers the hooks' handler and returns their transformer, to be installed ({@link
   * HookTransformer#installAll}); its start-up line's fragment is {@code okhttp armed (...)} while
   * no OkHttp is loaded (the usual case at start-up: each copy is rewritten when a class loader
   * defines it), {@code okhttp hooked (...)} when a loaded copy has been rewritten now (a late
   * attach, or another agent loaded it first), or {@code okhttp NOT hooked (why)}.
   */
  public static HookTransformer arm(AgentRuntime runtime) {
    OkHttpTransformer transformer = new OkHttpTransformer();
    OkHttpEntry.register(new OkHttpInstallation(runtime, transformer));
    // Clients built before a late attach keep the interceptors they have.
    return transformer;
  }

  @Override
  protected OkHttpHandler make() {
    // Made in RuntimeAgent: verifying this class would otherwise load OkHttpSupport.Agent already.
    return RuntimeAgent.handler(runtime, transformer);
  }

  @Override
  public void builderCreated(Object builder) {
    get().builderCreated(builder);
  }

  @Override
  public Object enqueue(Object call, Object client, Object callback) {
    return get().enqueue(call, client, callback);
  }

  @Override
  public void cancel(Object call) {
    get().cancel(call);
  }

  @Override
  public void sending(Object chain) {
    get().sending(chain);
  }

  @Override
  public void sendFailed(Object chain, Object failure) {
    get().sendFailed(chain, failure);
  }

  /** The agent as the OkHttp side sees it. */
  private static final class RuntimeAgent implements OkHttpSupport.Agent {
    private final AgentRuntime runtime;
    private final OkHttpTransformer transformer;

    private RuntimeAgent(AgentRuntime runtime, OkHttpTransformer transformer) {
      this.runtime = runtime;
      this.transformer = transformer;
    }

    /** The handler proper, for the agent {@code runtime}. */
    static OkHttpHandler handler(AgentRuntime runtime, OkHttpTransformer transformer) {
      return new OkHttpLoaders(
          new RuntimeAgent(runtime, transformer), OkHttpInstallation.class.getClassLoader());
    }

    @Override
    public RetryEngine engine() {
      return runtime.engine();
    }

    @Override
    public boolean enabled() {
      return runtime.okhttpEnabled();
    }

    @Override
    public boolean sendsHooked(Class<?> callServerInterceptor) {
      return transformer.sendsHooked(callServerInterceptor);
    }
  }
}
