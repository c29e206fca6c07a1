package dev.retryagent.launcher;

import java.io.File;
import java.io.PrintStream;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;

/**
 * Runs a command of {@code dev.retryagent.cli.Commands}, which lives with the configuration classes
 * under the jar's {@code inst/}: in the agent's own class loader ({@link AgentClassLoader}, the one
 * {@code premain} uses), reached by reflection because nothing of {@code inst/} can be linked from
 * here. Reflection is fine on this path: it is never taken by {@code premain}.
 *
 * <p>When the launcher runs from a classes directory (unit tests), nothing is hidden and the
 * commands are loaded from the launcher's own class loader.
 */
final class HiddenCommands {
  static final String ENTRY = "dev.retryagent.cli.Commands";

  private HiddenCommands() {}

  /** {@code Commands.run(args, out, err)}; a failure to load them is exit code 1 with one line. */
  static int run(String[] args, PrintStream out, PrintStream err) {
    try {
      Class<?> entry = Class.forName(ENTRY, true, loader());
      Method run = entry.getMethod("run", String[].class, PrintStream.class, PrintStream.class);
      return (Integer) run.invoke(null, args, out, err);
    } catch (InvocationTargetException e) {
      err.println("retry-agent: internal error in " + args[0] + ": " + e.getCause());
      return CommandLine.FAILED;
    } catch (Exception | LinkageError e) {
      err.println("retry-agent: cannot load the " + args[0] + " command: " + e);
      return CommandLine.FAILED;
    }
  }

  private static ClassLoader loader() throws Exception {
    File location = AgentJarFile.location();
    if (location.isDirectory()) {
      return HiddenCommands.class.getClassLoader();
    }
    return AgentClassLoader.open(location.getPath());
  }
}
