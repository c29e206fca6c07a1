package dev.retryagent.launcher;

import java.lang.instrument.Instrumentation;

/**
 * The launcher's half of the start-up, in the system class loader: creates the agent's class loader
 * and runs the installer in it, once per JVM, whatever the number of {@code -javaagent} copies or
 * late attaches (each of them resolves this same class: the system loader returns the first copy's
 * classes, and {@link AgentClassLoader} hands the installer this one too).
 */
public final class AgentStarter {
  private static final String INSTALLER = "dev.retryagent.agent.Installer";

  private static boolean started;
  private static AgentInstaller installer;

  /** The first start's line, without prefix, once it ended (guarded by the class). */
  private static String firstLine;

  private AgentStarter() {}

  /** Called by the installer's static initializer in the agent's class loader. */
  public static synchronized void register(AgentInstaller instance) {
    installer = instance;
  }

  private static synchronized String firstLine() {
    return firstLine;
  }

  private static synchronized void ended(String line) {
    firstLine = line;
  }

  private static synchronized boolean claimStart() {
    if (started) {
      return false;
    }
    started = true;
    return true;
  }

  /**
   * What a start after the first says, given the first start's line ({@code null} while that start
   * is still under way on another thread, two attaches at once say: it may yet fail).
   */
  static String anotherStart(String first) {
    if (first == null) {
      return "another start is under way in this JVM, ignoring this one (its line says whether it"
          + " installed the agent)";
    }
    return first.startsWith("not installed")
        ? "not installed by an earlier start in this JVM, ignoring another start"
            + " (only a restart installs it)"
        : "already installed, ignoring another start";
  }

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
    String prefix = "retry-agent " + version + ": ";
    if (!claimStart()) {
      // Only one start per JVM, even after one that failed (it may have installed part of the
      // agent); but never "installed" when the application runs without retries.
      System.err.println(prefix + anotherStart(firstLine()));
      return;
    }
    String line; // without the prefix
    try {
      Class.forName(INSTALLER, true, AgentClassLoader.open(jarPath));
      AgentInstaller registered;
      synchronized (AgentStarter.class) {
        registered = installer;
      }
      if (registered == null) {
        throw new IllegalStateException(INSTALLER + " did not register");
      }
      line = registered.install(agentArgs, inst, atStartup);
    } catch (Throwable t) {
      line = "not installed, the application runs without retries (" + t + ")";
    }
    ended(line);
    System.err.println(prefix + line);
  }
}
