package dev.retryagent.launcher;

import dev.retryagent.bootstrap.AgentStarter;
import java.io.File;
import java.io.PrintStream;
import java.lang.instrument.Instrumentation;
import java.util.jar.JarFile;

/**
 * Entry point of {@code retry-agent.jar}: {@code Premain-Class}, {@code Agent-Class} and {@code
 * Main-Class}.
 *
 * <p>This class is loaded by the system class loader, so it does as little as possible: it appends
 * the agent jar to the bootstrap search path (once), then calls the boot-loaded {@link
 * AgentStarter}. That call is resolved only when it first runs, after the append, and the system
 * loader asks the boot loader first, so it links to the boot copy; no other agent class is touched
 * before the append (and no reflection is used: it spins classes at start-up, see
 * docs/BENCHMARKS.md). Nothing thrown here ever reaches the application.
 */
public final class RetryAgent {
  private static final String STARTER = "dev.retryagent.bootstrap.AgentStarter";

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
      File jar = agentJar();
      if (!bootstrapReady()) {
        inst.appendToBootstrapClassLoaderSearch(new JarFile(jar));
      }
      AgentStarter.start(agentArgs, inst, atStartup, jar.getPath(), version());
    } catch (Throwable t) {
      System.err.println(
          "retry-agent "
              + version()
              + ": not installed, the application runs without retries ("
              + t
              + ")");
    }
  }

  /** True when an earlier copy of the agent already put the bridge on the bootstrap path. */
  private static boolean bootstrapReady() {
    try {
      Class.forName(STARTER, false, null);
      return true;
    } catch (ClassNotFoundException e) {
      return false;
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
