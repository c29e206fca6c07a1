package dev.retryagent.cli;

import java.io.PrintStream;
import java.util.Arrays;

/**
 * The commands that need the configuration classes: {@code validate} and {@code explain}. Loaded in
 * the agent's own class loader by the launcher ({@code dev.retryagent.launcher.HiddenCommands}),
 * which calls {@link #run} by reflection; nothing here may refer to the launcher or the bootstrap
 * bridge, which that loader does not see.
 */
public final class Commands {
  /** Success. */
  public static final int OK = 0;

  /** An invalid configuration, or the command could not do its job. */
  public static final int FAILED = 1;

  /** Bad usage. */
  public static final int USAGE = 2;

  private Commands() {}

  /**
   * Runs {@code args[0]} with the rest of {@code args}.
   *
   * @return the exit code
   */
  public static int run(String[] args, PrintStream out, PrintStream err) {
    String[] rest = Arrays.copyOfRange(args, 1, args.length);
    switch (args[0]) {
      case "validate":
        return ValidateCommand.run(rest, out, err);
      case "explain":
        return ExplainCommand.run(rest, out, err);
      default:
        err.println("retry-agent: unknown command " + args[0] + " (try --help)");
        return USAGE;
    }
  }
}
