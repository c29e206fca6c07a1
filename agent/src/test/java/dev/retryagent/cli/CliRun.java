package dev.retryagent.cli;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;

/** One run of {@link Commands}: exit code and what it printed. */
final class CliRun {
  final int exitCode;
  final String out;
  final String err;

  private CliRun(int exitCode, String out, String err) {
    this.exitCode = exitCode;
    this.out = out;
    this.err = err;
  }

  static CliRun of(String... args) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    ByteArrayOutputStream err = new ByteArrayOutputStream();
    int code =
        Commands.run(
            args,
            new PrintStream(out, true, StandardCharsets.UTF_8),
            new PrintStream(err, true, StandardCharsets.UTF_8));
    return new CliRun(
        code, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
  }

  /** The first line of stdout. */
  String verdict() {
    return out.split("\\R", 2)[0];
  }

  @Override
  public String toString() {
    return "exit=" + exitCode + "\n--- out\n" + out + "--- err\n" + err;
  }
}
