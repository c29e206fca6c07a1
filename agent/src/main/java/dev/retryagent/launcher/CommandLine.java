package dev.retryagent.launcher;

import java.io.PrintStream;
import java.util.Arrays;

/**
 * {@code java -jar retry-agent.jar COMMAND ...}. Only {@code main} reaches this class, never {@code
 * premain}, so it may be as slow as a command line tool is allowed to be.
 *
 * <p>{@code validate} and {@code explain} need the configuration classes, which the jar hides under
 * {@code inst/}: they run in the agent's own class loader ({@link HiddenCommands}). {@code attach}
 * needs {@code jdk.attach}, which only the application class loader sees, so it runs here ({@link
 * AttachCommand}) and asks the hidden side to validate the file first.
 *
 * <p>Exit codes: {@value #OK} success, {@value #FAILED} invalid configuration or a failed command,
 * {@value #USAGE} bad usage.
 */
final class CommandLine {
  static final int OK = 0;
  static final int FAILED = 1;
  static final int USAGE = 2;

  private CommandLine() {}

  static int run(String[] args, PrintStream out, PrintStream err, String version) {
    String command = args.length == 0 ? "--help" : args[0];
    String[] rest = Arrays.copyOfRange(args, Math.min(1, args.length), args.length);
    switch (command) {
      case "--version":
      case "-v":
      case "version":
        out.println("retry-agent " + version);
        return OK;
      case "--help":
      case "-h":
      case "help":
        help(out, version);
        return OK;
      case "validate":
      case "explain":
        return HiddenCommands.run(args, out, err);
      case "attach":
        try {
          return new AttachCommand(out, err).run(rest);
        } catch (LinkageError e) {
          err.println("retry-agent: attach needs a JDK with the jdk.attach module (" + e + ")");
          return FAILED;
        }
      default:
        err.println(
            "retry-agent: unknown "
                + (command.startsWith("-") ? "option " : "command ")
                + command
                + " (try --help)");
        return USAGE;
    }
  }

  static void help(PrintStream out, String version) {
    out.println("retry-agent " + version + ": budgeted HTTP retries for java.net.http, OkHttp,");
    out.println("Apache HttpClient 4.5 and 5.x (classic and async) and HttpURLConnection");
    out.println();
    out.println("Usage, as a Java agent:");
    out.println("  java -javaagent:retry-agent.jar -jar app.jar                 built-in defaults");
    out.println(
        "  java -javaagent:retry-agent.jar=config.yml -jar app.jar      configuration file");
    out.println("  java -javaagent:retry-agent.jar=config=conf.yml,mode=observe -jar app.jar");
    out.println();
    out.println("Commands: java -jar retry-agent.jar COMMAND ...");
    out.println("  validate FILE");
    out.println("      Checks a configuration file: one summary line and exit 0, or every problem");
    out.println("      with its location (file:line:column: key path: found ...; allowed ...) and");
    out.println("      exit 1. ${NAME} is replaced from this shell's environment.");
    out.println("  explain FILE METHOD URL [NAME:VALUE ...]");
    out.println("      Which route a request falls under, its effective policy (retry, budget,");
    out.println("      breaker, rate limit), and whether a 503, a connection reset and a connect");
    out.println("      failure would be retried. Headers count (e.g. Idempotency-Key:abc); their");
    out.println("      values are never printed. The query string is ignored and never printed.");
    out.println("  attach PID [FILE] [--mode enforce|observe|off]");
    out.println("      Loads the agent into the running JVM PID (JDK 11 or later, same user,");
    out.println("      same file system), with FILE as its configuration (validated first).");
    out.println("  --version   print the version");
    out.println("  --help      print this help");
    out.println();
    out.println("Exit codes: 0 success, 1 invalid configuration or failed command, 2 bad usage.");
    out.println();
    out.println("What attach covers:");
    out.println("  - java.net.http: every client, also those created before the attach (the agent");
    out.println("    retransforms jdk.internal.net.http.HttpClientFacade).");
    out.println("  - OkHttp: only clients built after the attach; a client built before keeps its");
    out.println("    interceptor list, and so do clients derived from it with newBuilder().");
    out.println("  - Apache HttpClient 4.5: every client, also those built before the attach.");
    out.println("    5.x (classic and async): only clients built after it; one built before keeps");
    out.println("    its chain.");
    out.println("  - HttpURLConnection: connections opened after the attach; one opened before");
    out.println("    keeps what it is.");
    out.println("  - Calls already in flight finish without the agent.");
    out.println("  - JDK 21 and later print a warning that an agent was loaded dynamically; start");
    out.println("    the JVM with -XX:+EnableDynamicAgentLoading to allow it without the warning");
    out.println("    (a later JDK may refuse dynamic loading without that flag).");
    out.println(
        "  - The agent stays until the JVM exits; attaching again changes nothing. Edit the");
    out.println("    configuration file instead (agent.reload: true applies valid edits).");
    out.println("  - This command needs a JDK (module jdk.attach), not a JRE.");
    out.println();
    out.println("Operations guide: docs/operations.md");
  }
}
