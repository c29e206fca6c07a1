package dev.retryagent.launcher;

import java.io.File;
import java.io.PrintStream;
import java.lang.instrument.Instrumentation;

/**
 * Entry point of {@code retry-agent.jar}: {@code Premain-Class}, {@code Agent-Class} and {@code
 * Main-Class}.
 *
 * <p>Compiled for Java 8 (class file 52, the only class of the jar that is: agent/pom.xml), so that
 * a Java 8 JVM can load it, and every entry point first checks the JVM's version: on one older than
 * Java 11 the agent says so in one line and does nothing more, the application runs untouched.
 * Before that check nothing newer than Java 8 is named ({@code RetryAgentJarIT} reads the class).
 * No other class of the jar names this one, so the build can leave it out of the Java 11 compile.
 *
 * <p>This class is loaded by the system class loader (a {@code -javaagent} jar is on the system
 * class path, and so is a jar loaded by a late attach), with the rest of the start-up ({@link
 * AgentStarter}, {@link AgentClassLoader}, {@link AgentInstaller}); nothing is appended to the
 * bootstrap class path, so the JVM's class sharing is left alone. It does as little as possible and
 * uses no reflection (it spins classes at start-up, see docs/BENCHMARKS.md). Nothing thrown here
 * ever reaches the application.
 */
public final class RetryAgent {
  /** The oldest Java the agent runs on (its bytecode level, {@code --release 11}). */
  static final int OLDEST_JAVA = 11;

  private RetryAgent() {}

  /** Called by the JVM for {@code -javaagent:retry-agent.jar[=args]}. */
  public static void premain(String agentArgs, Instrumentation inst) {
    if (supported()) {
      start(agentArgs, inst, true);
    }
  }

  /** Called when the agent is attached to a running JVM. */
  public static void agentmain(String agentArgs, Instrumentation inst) {
    if (supported()) {
      start(agentArgs, inst, false);
    }
  }

  /**
   * {@code java -jar retry-agent.jar COMMAND ...}: {@code validate}, {@code explain}, {@code
   * attach}, {@code --version}, {@code --help} (see {@link CommandLine}).
   */
  public static void main(String[] args) {
    if (!supported()) {
      System.exit(1);
    }
    System.exit(runCli(args, System.out, System.err));
  }

  /** True on Java 11 or later; otherwise prints the one line that says why not. */
  private static boolean supported() {
    String why = unsupported(System.getProperty("java.specification.version"));
    if (why != null) {
      System.err.println("retry-agent " + version() + ": " + why);
    }
    return why == null;
  }

  /**
   * Why the agent does not run on a JVM whose {@code java.specification.version} is {@code
   * specification} ({@code 1.8}, {@code 9}, {@code 17}), or null when it does. An unreadable
   * version counts as new enough: the JVM's own checks then decide.
   */
  static String unsupported(String specification) {
    if (specification == null) {
      return null;
    }
    String v = specification.trim();
    int feature;
    try {
      feature =
          v.startsWith("1.")
              ? Integer.parseInt(v.substring(2))
              : Integer.parseInt(v.indexOf('.') < 0 ? v : v.substring(0, v.indexOf('.')));
    } catch (NumberFormatException e) {
      return null;
    }
    if (feature >= OLDEST_JAVA) {
      return null;
    }
    return "not installed, the application runs without retries: Java "
        + v
        + " is not supported (the agent needs Java "
        + OLDEST_JAVA
        + " or later)";
  }

  /** Runs one command and returns its exit code: 0 success, 1 failure, 2 bad usage. */
  static int runCli(String[] args, PrintStream out, PrintStream err) {
    return CommandLine.run(args, out, err, version());
  }

  private static void start(String agentArgs, Instrumentation inst, boolean atStartup) {
    try {
      File jar = AgentJarFile.location();
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

  static String version() {
    String v = RetryAgent.class.getPackage().getImplementationVersion();
    return v == null ? "dev" : v;
  }
}
