package dev.retryagent.demo;

import dev.retryagent.demo.server.FaultPlan;
import dev.retryagent.demo.server.FlakyPaymentGateway;
import java.util.Locale;
import java.util.concurrent.ThreadLocalRandom;

/** The demo's command-line flags, parsed and validated. Immutable. */
public final class Options {
  public static final int DEFAULT_ARTICLES = 20;
  public static final int DEFAULT_WORKERS = 4;
  public static final double DEFAULT_RATE_LIMIT = 0.3;
  public static final double DEFAULT_SERVER_ERRORS = 0.1;
  public static final double DEFAULT_RESETS = 0.05;

  static final String USAGE =
      String.join(
          "\n",
          "Usage: java [-javaagent:retry-agent.jar=demo.yml] -jar demo-app.jar [flags]",
          "",
          "A news-processing service with no retry code. It sends each article to a simulated",
          "LLM provider twice (POST /v1/summarise, POST /v1/sentiment, each with an",
          "Idempotency-Key per article and operation) over java.net.http, then charges one",
          "order through a simulated payment gateway (POST /v1/charges with an Idempotency-Key)",
          "over OkHttp. Both servers run inside this process on 127.0.0.1.",
          "",
          "Flags (--flag value or --flag=value):",
          "  --articles N          articles to process (default 20)",
          "  --workers N           concurrent workers (default 4)",
          "  --rate-limit P        provider answers 429 + Retry-After: 1 (default 0.3)",
          "  --server-errors P     provider answers 503 (default 0.1)",
          "  --resets P            provider resets the connection after reading the request",
          "                        (default 0.05)",
          "  --gateway-failures N  gateway answers 503 to the first N attempts per key; the",
          "                        last of them has already committed the charge (default 2)",
          "  --seed S              fault pattern seed; the same seed gives the same faults",
          "                        per request (default: random, printed)",
          "  --help                this text",
          "",
          "The probabilities are exclusive bands of one draw per attempt (sum <= 1). A 429",
          "is a promise: the same key coming back after Retry-After is admitted.",
          "",
          "Ends with the ground truth counted by the servers:",
          "  Succeeded: 20 | Failed: 0",
          "  Provider requests: 57 | Charges created: 1 | Duration: 3.0s",
          "");

  private final int articles;
  private final int workers;
  private final double rateLimit;
  private final double serverErrors;
  private final double resets;
  private final int gatewayFailures;
  private final long seed;
  private final boolean help;

  private Options(
      int articles,
      int workers,
      double rateLimit,
      double serverErrors,
      double resets,
      int gatewayFailures,
      long seed,
      boolean help) {
    this.articles = articles;
    this.workers = workers;
    this.rateLimit = rateLimit;
    this.serverErrors = serverErrors;
    this.resets = resets;
    this.gatewayFailures = gatewayFailures;
    this.seed = seed;
    this.help = help;
  }

  /** The defaults, with a fixed seed. */
  public static Options defaults(long seed) {
    return new Options(
        DEFAULT_ARTICLES,
        DEFAULT_WORKERS,
        DEFAULT_RATE_LIMIT,
        DEFAULT_SERVER_ERRORS,
        DEFAULT_RESETS,
        FlakyPaymentGateway.DEFAULT_FAIL_FIRST,
        seed,
        false);
  }

  /**
   * Parses flags.
   *
   * @throws IllegalArgumentException naming the flag, for an unknown flag or a bad value
   */
  public static Options parse(String... args) {
    int articles = DEFAULT_ARTICLES;
    int workers = DEFAULT_WORKERS;
    double rateLimit = DEFAULT_RATE_LIMIT;
    double serverErrors = DEFAULT_SERVER_ERRORS;
    double resets = DEFAULT_RESETS;
    int gatewayFailures = FlakyPaymentGateway.DEFAULT_FAIL_FIRST;
    long seed = ThreadLocalRandom.current().nextLong(1, 1_000_000);
    boolean help = false;
    for (int i = 0; i < args.length; i++) {
      String flag = args[i];
      String value = null;
      int eq = flag.indexOf('=');
      if (flag.startsWith("--") && eq > 0) {
        value = flag.substring(eq + 1);
        flag = flag.substring(0, eq);
      }
      if (flag.equals("--help") || flag.equals("-h")) {
        help = true;
        continue;
      }
      if (value == null) {
        if (i + 1 >= args.length) {
          throw new IllegalArgumentException(flag + " needs a value");
        }
        value = args[++i];
      }
      switch (flag) {
        case "--articles":
          articles = intValue(flag, value, 1, 10_000);
          break;
        case "--workers":
          workers = intValue(flag, value, 1, 256);
          break;
        case "--rate-limit":
          rateLimit = probability(flag, value);
          break;
        case "--server-errors":
          serverErrors = probability(flag, value);
          break;
        case "--resets":
          resets = probability(flag, value);
          break;
        case "--gateway-failures":
          gatewayFailures = intValue(flag, value, 0, 10);
          break;
        case "--seed":
          seed = longValue(flag, value, Long.MIN_VALUE, Long.MAX_VALUE);
          break;
        default:
          throw new IllegalArgumentException("unknown flag " + flag + " (see --help)");
      }
    }
    if (rateLimit + serverErrors + resets > 1.0 + 1e-9) {
      throw new IllegalArgumentException(
          "--rate-limit + --server-errors + --resets must be at most 1, was "
              + String.format(Locale.ROOT, "%.3f", rateLimit + serverErrors + resets));
    }
    return new Options(
        articles, workers, rateLimit, serverErrors, resets, gatewayFailures, seed, help);
  }

  private static int intValue(String flag, String value, int min, int max) {
    return (int) longValue(flag, value, min, max);
  }

  private static long longValue(String flag, String value, long min, long max) {
    long v;
    try {
      v = Long.parseLong(value.trim());
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException(flag + " must be a whole number, was '" + value + "'");
    }
    if (v < min || v > max) {
      throw new IllegalArgumentException(flag + " must be in [" + min + ", " + max + "], was " + v);
    }
    return v;
  }

  private static double probability(String flag, String value) {
    double p;
    try {
      p = Double.parseDouble(value.trim());
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException(flag + " must be a number in [0, 1], was '" + value + "'");
    }
    if (!(p >= 0.0 && p <= 1.0)) {
      throw new IllegalArgumentException(flag + " must be in [0, 1], was " + value);
    }
    return p;
  }

  /** The provider's fault plan for these flags. */
  public FaultPlan faultPlan() {
    return new FaultPlan(seed, rateLimit, serverErrors, resets);
  }

  public int articles() {
    return articles;
  }

  public int workers() {
    return workers;
  }

  public double rateLimit() {
    return rateLimit;
  }

  public double serverErrors() {
    return serverErrors;
  }

  public double resets() {
    return resets;
  }

  public int gatewayFailures() {
    return gatewayFailures;
  }

  public long seed() {
    return seed;
  }

  public boolean help() {
    return help;
  }

  /** Usage text for {@code --help}. */
  public static String usage() {
    return USAGE;
  }
}
