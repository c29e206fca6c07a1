package dev.retryagent.launcher;

import java.io.File;
import java.io.PrintStream;
import java.lang.instrument.Instrumentation;

/**
 * Entry point of {@code retry-agent.jar}: {@code Premain-Class}, {@code Agent-Class} and {@code
 * Main-Class}.
 *
 * <p>This class is loaded by the system class loader (a {@code -javaagent} jar is on the system
 * class path, and so is a jar loaded by a late attach), with the rest of the start-up ({@link
 * AgentStarter}, {@link AgentClassLoader}, {@link AgentInstaller}); nothing is appended to the
 * bootstrap class path, so the JVM's class sharing is left alone. It does as little as possible and
 * uses no reflection (it spins classes at start-up, see docs/BENCHMARKS.md). Nothing thrown here
 * ever reaches the application.
 */
public final class RetryAgent {
  private RetryAgent() {}

  /** Called by the JVM for {@code -javaagent:retry-agent.jar[=args]}. */
  public static void premain(String agentArgs, Instrumentation inst) {
    start(agentArgs, inst, true);
  }

  /** Called when the agent is attached to a running JVM. */
  public static void agentmain(String agentArgs, Instrumentation inst) {
    start(agentArgs, inst, false);
  }

  /**
   * {@code java -jar retry-agent.jar COMMAND ...}: {@code validate}, {@code explain}, {@code
   * attach}, {@code --version}, {@code --help} (see {@link CommandLine}).
   */
  public static void main(String[] args) {
    System.exit(runCli(args, System.out, System.err));
  }

  /** Runs one command and returns its exit code: 0 success, 1 failure, 2 bad usage. */
  static int runCli(String[] args, PrintStream out, PrintStream err) {
    return CommandLine.run(args, out, err, version());
  }

  private static void start(String agentArgs, Instrumentation inst, boolean atStartup) {
    try {
      AgentStarter.start(agentArgs, inst, atStartup, agentJar().getPath(), version());
    } catch (Throwable t) {
      System.err.println(
          "retry-agent "
              + version()
              + ": not installed, the application runs without retries ("
              + t
              + ")");
    }
  }

  static File agentJar() throws Exception {
    return new File(RetryAgent.class.getProtectionDomain().getCodeSource().getLocation().toURI());
  }

  static String version() {
    String v = RetryAgent.class.getPackage().getImplementationVersion();
    return v == null ? "dev" : v;
  }
}
