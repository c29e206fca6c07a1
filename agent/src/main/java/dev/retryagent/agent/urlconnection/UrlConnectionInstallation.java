package dev.retryagent.agent.urlconnection;

import dev.retryagent.agent.runtime.AgentRuntime;
import dev.retryagent.agent.tooling.HookTransformer;
import java.lang.instrument.Instrumentation;

/** Arms the {@code HttpURLConnection} hook (docs/url-connection.md). */
public final class UrlConnectionInstallation {
  private UrlConnectionInstallation() {}

  /**
   * Returns the transformer, to be installed ({@link HookTransformer#installAll}); its start-up
   * line's fragment is {@code url-connection armed (...)} while the JDK's protocol handlers are not
   * loaded (the usual case at start-up), {@code url-connection hooked (...)} when they were and
   * have been rewritten now (a late attach, or another agent opened a URL first), or {@code
   * url-connection NOT hooked (why)}. Nothing of the engine, the facade or ASM is loaded here; the
   * hook's handlers are registered at the first connection ({@link UrlActivation}).
   */
  public static HookTransformer arm(Instrumentation inst, AgentRuntime runtime) {
    return new UrlConnectionTransformer(new UrlActivation(inst, runtime));
  }
}
