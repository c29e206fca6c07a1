package dev.retryagent.agent;

import dev.retryagent.bootstrap.OkHttpBridge;
import dev.retryagent.engine.RetryEngine;
import java.lang.instrument.Instrumentation;
import java.util.ArrayList;
import java.util.List;

/** Arms the OkHttp hooks: bridge handler first, then the transformer. */
final class OkHttpInstallation {
  private static final String HOOKS = "OkHttpClient.Builder, RealCall.enqueue/cancel";

  private OkHttpInstallation() {}

  /** Installs the hooks and returns the start-up line's fragment for them. */
  static String install(Instrumentation inst, AgentRuntime runtime) {
    OkHttpBridge.setHandler(
        new OkHttpLoaders(new RuntimeAgent(runtime), OkHttpInstallation.class.getClassLoader()));
    OkHttpTransformer transformer = new OkHttpTransformer();
    inst.addTransformer(transformer, true);

    // Normally OkHttp loads later and the transformer sees it then; after a late attach, or when
    // another agent loaded it first, its classes must be retransformed now. Clients built before
    // that keep the interceptors they have.
    List<Class<?>> loaded = loadedTargets(inst);
    if (loaded.isEmpty()) {
      return "okhttp waiting for first use (" + HOOKS + ")";
    }
    if (!inst.isRetransformClassesSupported()) {
      return "okhttp NOT hooked (already loaded and retransformation unsupported)";
    }
    try {
      inst.retransformClasses(loaded.toArray(new Class<?>[0]));
    } catch (Throwable t) {
      return "okhttp NOT hooked (retransforming the loaded OkHttp failed: " + t + ")";
    }
    if (transformer.builderFailure() != null) {
      return "okhttp NOT hooked (" + transformer.builderFailure() + ")";
    }
    return "okhttp hooked (" + HOOKS + ")";
  }

  private static List<Class<?>> loadedTargets(Instrumentation inst) {
    List<Class<?>> targets = new ArrayList<>();
    for (Class<?> c : inst.getAllLoadedClasses()) {
      String name = c.getName();
      if (name.startsWith("okhttp3.")
          && OkHttpTransformer.isTarget(name.replace('.', '/'))
          && !ForeignLoaders.isAgentLoader(c.getClassLoader())) {
        targets.add(c);
      }
    }
    return targets;
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
