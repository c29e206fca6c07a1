package dev.retryagent.bootstrap;

import java.lang.instrument.Instrumentation;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * Boot-loaded half of the start-up: creates the agent's class loader and runs the installer in it,
 * once per JVM, whatever the number of {@code -javaagent} copies or late attaches.
 */
public final class AgentStarter {
  private static final String INSTALLER = "dev.retryagent.agent.Installer";
  private static final AtomicBoolean STARTED = new AtomicBoolean();

  private AgentStarter() {}

  /**
   * Installs the agent and prints one line on stderr saying what was installed, or why not. Never
   * throws.
   *
   * @param agentArgs the {@code -javaagent} argument, may be null
   * @param inst the JVM's instrumentation
   * @param atStartup true from {@code premain}, false from {@code agentmain}
   * @param jarPath the agent jar, whose {@code inst/} entries hold the hidden classes
   * @param version the agent version for the start-up line
   */
  public static void start(
      String agentArgs, Instrumentation inst, boolean atStartup, String jarPath, String version) {
    if (!STARTED.compareAndSet(false, true)) {
      System.err.println("retry-agent " + version + ": already installed, ignoring another start");
      return;
    }
    String line;
    try {
      ClassLoader loader = AgentClassLoader.open(jarPath);
      Object result =
          Class.forName(INSTALLER, true, loader)
              .getMethod("install", String.class, Instrumentation.class, boolean.class)
              .invoke(null, agentArgs, inst, atStartup);
      line = "retry-agent " + version + ": " + result;
    } catch (Throwable t) {
      Throwable cause = t instanceof java.lang.reflect.InvocationTargetException ? t.getCause() : t;
      line =
          "retry-agent "
              + version
              + ": not installed, the application runs without retries ("
              + cause
              + ")";
    }
    System.err.println(line);
  }
}
