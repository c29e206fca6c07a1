package dev.retryagent.cli;

import dev.retryagent.config.AgentConfig;
import dev.retryagent.config.Route;
import dev.retryagent.engine.Decision;
import dev.retryagent.engine.RetryRules;
import dev.retryagent.internal.observe.Sanitizer;
import dev.retryagent.policy.Mode;
import dev.retryagent.policy.Policy;
import java.io.PrintStream;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * {@code explain FILE METHOD URL [NAME:VALUE ...]}: the route the agent would pick for the request,
 * the verdict for a 503, a reset and a connect failure on its first attempt, and the effective
 * policy:
 *
 * <pre>
 * POST https://pay.example.com/v1/charges with Idempotency-Key -> route payments; 503: retried (up
 * to 5 attempts); reset: retried; connect failure: retried
 * </pre>
 *
 * (on one line), then a blank line and the policy block, and when the file has warnings a blank
 * line and them, as {@code validate} prints them. Header values and the query string are used as
 * the agent would use them but never printed.
 */
final class ExplainCommand {
  static final String USAGE = "usage: explain FILE METHOD URL [NAME:VALUE ...]";

  private ExplainCommand() {}

  static int run(String[] args, PrintStream out, PrintStream err) {
    if (args.length < 3) {
      err.println("retry-agent: explain: FILE, METHOD and URL are needed");
      err.println(USAGE);
      return Commands.USAGE;
    }
    ExplainedRequest request;
    try {
      request = ExplainedRequest.parse(args[1], args[2], Arrays.copyOfRange(args, 3, args.length));
    } catch (IllegalArgumentException e) {
      err.println("retry-agent: explain: " + e.getMessage());
      err.println(USAGE);
      return Commands.USAGE;
    }
    AgentConfig config = ValidateCommand.load(args[0], err);
    if (config == null) {
      return Commands.FAILED;
    }
    for (String line : explain(config, request)) {
      out.println(line);
    }
    // The warnings change what a key does (a backoff.initial above backoff.max is capped), so the
    // policy above is read with them: printed as validate prints them.
    String warnings = ConfigSummary.warnings(config);
    if (!warnings.isEmpty()) {
      out.println();
      out.println(config.source() + ": valid" + warnings);
    }
    return Commands.OK;
  }

  static List<String> explain(AgentConfig config, ExplainedRequest request) {
    Policy policy =
        config.resolve(request.method(), request.host(), request.port(), request.path());
    Route route = routeOf(config, policy);
    Mode mode = config.mode();
    List<String> out = new ArrayList<>();
    StringBuilder verdict = new StringBuilder(request.describe(config.pathMask()));
    List<String> names = new ArrayList<>();
    for (String name : request.headerNames()) {
      // A value empty or only spaces and tabs is no key (IdempotencyGate.isKey): said here so
      // that "with Idempotency-Key" does not contradict "POST without Idempotency-Key".
      String value = request.header(name).replace(" ", "").replace("\t", "");
      names.add(value.isEmpty() ? name + " (empty)" : name);
    }
    if (!names.isEmpty()) {
      verdict.append(" with ").append(String.join(", ", names));
    }
    verdict
        .append(" -> ")
        .append(
            route == null ? "no route, defaults" : "route " + Sanitizer.routeName(route.name()));
    RetryRules.Hypothetical moment = new RetryRules.Hypothetical();
    boolean counted = verdicts(verdict, mode, policy, request, moment);
    out.add(verdict.toString());
    ExplainedRequest sent = request.asSent();
    if (!sent.method().equals(request.method())) {
      // A METHOD written in lower case is explained as the upper-case one it most likely means;
      // but a client given that text sends it as written, and method names are case-sensitive
      // (RFC 9110 9.1): what the agent does with that other method is said too.
      StringBuilder note =
          new StringBuilder("note: ")
              .append(sent.method())
              .append(" is explained as ")
              .append(request.method())
              .append("; a client that sends ")
              .append(sent.method())
              .append(
                  " sends another method (method names are case-sensitive), not known to be"
                      + " idempotent");
      verdicts(note, mode, policy, sent, new RetryRules.Hypothetical());
      out.add(note.toString());
    }
    out.add("");
    out.add(
        (route == null ? "defaults (no route matched)" : route.toString())
            + "; mode "
            + mode.configName());
    out.addAll(PolicyText.lines(policy, config.fleet()));
    // What the first attempt's verdicts took as passed is decided only at run time.
    if (counted && mode == Mode.ENFORCE) {
      out.add("  each retry also needs: " + RetryVerdict.alsoNeeds(moment.assumed()));
    }
    return out;
  }

  /**
   * Appends {@code ; 503: ...; reset: ...; connect failure: ...} for {@code request} to {@code
   * out}; true when one of them is retried.
   */
  private static boolean verdicts(
      StringBuilder out,
      Mode mode,
      Policy policy,
      ExplainedRequest request,
      RetryRules.Hypothetical moment) {
    boolean counted = false;
    for (RetryVerdict.Case c : RetryVerdict.Case.values()) {
      Decision d = RetryVerdict.decide(policy.retry(), request, c, moment);
      boolean retried = mode != Mode.OFF && d.retry();
      out.append("; ")
          .append(c.label)
          .append(": ")
          .append(RetryVerdict.text(mode, policy.retry(), request, c, d, retried && !counted));
      counted |= retried;
    }
    return counted;
  }

  /** The route whose policy this is (routes are matched first to last), or null for defaults. */
  private static Route routeOf(AgentConfig config, Policy policy) {
    for (Route r : config.routes()) {
      if (r.policy() == policy) {
        return r;
      }
    }
    return null;
  }
}
