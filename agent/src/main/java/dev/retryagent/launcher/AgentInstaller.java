package dev.retryagent.launcher;

import java.lang.instrument.Instrumentation;

/**
 * Implemented by the installer in the agent's class loader, which registers an instance with {@link
 * AgentStarter#register} from its static initializer: the launcher's side (the system class loader)
 * then calls it without reflection (reflection and method handles spin classes at start-up, which
 * costs tens of ms).
 */
public interface AgentInstaller {
  /**
   * Installs the agent.
   *
   * @return the start-up line, without the {@code retry-agent <version>:} prefix
   */
  String install(String agentArgs, Instrumentation inst, boolean atStartup);
}
