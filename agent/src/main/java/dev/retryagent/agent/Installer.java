package dev.retryagent.agent;

import dev.retryagent.bootstrap.AgentInstaller;
import dev.retryagent.bootstrap.AgentStarter;
import dev.retryagent.policy.Mode;
import java.lang.instrument.Instrumentation;
import java.util.concurrent.ThreadLocalRandom;

/**
 * Installs the agent inside its own class loader; called once per JVM by {@code
 * dev.retryagent.bootstrap.AgentStarter}, which prints the returned line.
 */
public final class Installer implements AgentInstaller {
  static {
    AgentStarter.register(new Installer());
  }

  private Installer() {}

  @Override
  public String install(String agentArgs, Instrumentation inst, boolean atStartup) {
    return installAgent(agentArgs, inst);
  }

  /**
   * Reads the configuration and arms the hooks it enables.
   *
   * @return the start-up line (without the {@code retry-agent <version>:} prefix)
   */
  static String installAgent(String agentArgs, Instrumentation inst) {
    // A class that the JDK's ConcurrentHashMap needs while it is itself being loaded must not be
    // loaded for the first time from inside a transformer (ClassCircularityError, JDK-8164165).
    ThreadLocalRandom.current();
    // Our relocated Byte Buddy reads the relocated property name (shade rewrites this constant), so
    // this never changes the application's own Byte Buddy. It keeps Byte Buddy's Nexus, and its
    // sun.misc.Unsafe use (a warning on JDK 24+), off should a later hook use an AgentBuilder.
    System.setProperty(net.bytebuddy.dynamic.Nexus.PROPERTY, "true");

    AgentSettings settings = ConfigSeam.loadConfig(agentArgs);
    if (settings.mode() == Mode.OFF) {
      return "nothing hooked (mode=off); " + settings.describe();
    }
    String jdk =
        settings.jdkHttp()
            ? JdkHttpInstallation.install(inst, settings)
            : "jdk-http off (agent.clients.jdk-http: false)";
    return jdk + "; okhttp not supported yet; " + settings.describe();
  }
}
