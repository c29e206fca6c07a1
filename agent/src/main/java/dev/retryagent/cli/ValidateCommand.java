package dev.retryagent.cli;

import dev.retryagent.config.AgentConfig;
import dev.retryagent.config.ConfigException;
import dev.retryagent.config.ConfigLoader;
import dev.retryagent.config.ConfigProblem;
import java.io.PrintStream;
import java.nio.file.InvalidPathException;
import java.nio.file.Path;
import java.nio.file.Paths;

/**
 * {@code validate FILE}: loads the file exactly as the agent would (same loader, same checks,
 * {@code ${NAME}} from this process's environment) and prints {@code FILE: valid; mode=...; N
 * routes (...); reload=...}, or every problem with its location and a count.
 */
final class ValidateCommand {
  static final String USAGE = "usage: validate FILE";

  private ValidateCommand() {}

  static int run(String[] args, PrintStream out, PrintStream err) {
    if (args.length != 1) {
      err.println("retry-agent: validate: " + (args.length == 0 ? "FILE is missing" : "one FILE"));
      err.println(USAGE);
      return Commands.USAGE;
    }
    AgentConfig config = load(args[0], err);
    if (config == null) {
      return Commands.FAILED;
    }
    // the loader names a configuration after its file: Paths.get(args[0]).toString()
    out.println(
        config.source() + ": valid; " + ConfigSummary.of(config) + ConfigSummary.warnings(config));
    return Commands.OK;
  }

  /**
   * The configuration in the file that the command line argument {@code path} names, or null after
   * printing why not on {@code err}: an invalid path, or every problem of the file and a count.
   */
  static AgentConfig load(String path, PrintStream err) {
    Path file;
    try {
      file = Paths.get(path);
    } catch (InvalidPathException e) {
      err.println(path + ": invalid path");
      return null;
    }
    return load(file, err);
  }

  /** The configuration in {@code file}, or null after printing every problem and a count. */
  static AgentConfig load(Path file, PrintStream err) {
    try {
      return ConfigLoader.load(file, System.getenv());
    } catch (ConfigException e) {
      for (ConfigProblem p : e.problems()) {
        err.println(p);
      }
      int n = e.problems().size();
      err.println(file + ": invalid, " + n + (n == 1 ? " problem" : " problems"));
      return null;
    }
  }
}
