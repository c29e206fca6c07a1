package dev.retryagent.config;

import static dev.retryagent.config.Schema.leaf;
import static dev.retryagent.config.Schema.noneOr;
import static dev.retryagent.config.Schema.section;
import static dev.retryagent.config.ValueType.BOOLEAN;
import static dev.retryagent.config.ValueType.duration;
import static dev.retryagent.config.ValueType.enumOf;
import static dev.retryagent.config.ValueType.integer;
import static dev.retryagent.config.ValueType.listOf;
import static dev.retryagent.config.ValueType.ratio;

import dev.retryagent.config.Schema.Leaf;
import dev.retryagent.config.Schema.Section;
import dev.retryagent.config.Schema.SectionList;
import dev.retryagent.policy.CircuitBreakerPolicy;
import dev.retryagent.policy.Jitter;
import dev.retryagent.policy.Mode;
import dev.retryagent.policy.StatusSet;
import dev.retryagent.policy.TransportFailure;
import dev.retryagent.policy.UnsafeMethods;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * Every key of the configuration contract (shared/CONFIG.md, version 1): its type, bounds, default,
 * one-line doc and where its value goes. The bounds match the policy builders', so a value the
 * walker accepts never makes a builder throw.
 */
final class ConfigSchema {
  private ConfigSchema() {}

  static final Duration ONE_MS = Duration.ofMillis(1);
  static final Duration ONE_HOUR = Duration.ofHours(1);
  static final Duration ONE_DAY = Duration.ofDays(1);

  /** Most routes in one file: matching is a linear scan, first match wins. */
  static final int MAX_ROUTES = 1000;

  /** Largest replayBodyLimit: the agent may hold this much of one body in memory. */
  static final long MAX_REPLAY_BODY = 1L << 30;

  static final ValueType HEADER_NAME =
      ValueType.string(
          "[!#$%&'*+.^_`|~0-9A-Za-z-]{1,256}", "an HTTP header name such as Idempotency-Key");
  static final ValueType METHOD =
      ValueType.string("[A-Za-z][A-Za-z0-9_-]{0,31}", "an HTTP method such as GET or POST");
  static final ValueType CLASS_NAME =
      ValueType.string(
          "[A-Za-z_$][A-Za-z0-9_$]*(\\.[A-Za-z_$][A-Za-z0-9_$]*){0,64}",
          "a fully qualified class name such as java.net.UnknownHostException");
  static final ValueType ROUTE_NAME =
      ValueType.string(
          "[A-Za-z0-9][A-Za-z0-9._-]{0,63}",
          "a name of letters, digits, '.', '_' and '-' (at most 64) such as payments");
  static final ValueType BIND_HOST =
      ValueType.string(
          "[A-Za-z0-9._-]{1,253}|\\[?[0-9A-Fa-f:.%]{2,64}\\]?",
          "a host name or IP address such as 127.0.0.1 or 0.0.0.0");
  static final ValueType FILE_PATH =
      ValueType.string("[^\\x00]{1,4096}", "a file path such as /var/log/retry-dead-letters.jsonl");

  // ---------------------------------------------------------------- retry

  static final Section BACKOFF =
      section(
          "backoff",
          "Delay between attempts: min(max, initial x multiplier^(n-1)), then jitter.",
          leaf(
              "initial",
              duration(Duration.ZERO, true, ONE_HOUR),
              "100ms",
              "delay before the first retry, before jitter",
              (t, v) -> t.backoff.initial((Duration) v)),
          leaf(
              "multiplier",
              ValueType.number(1.0, 100.0),
              "2.0",
              "growth per retry (1.0 = constant)",
              (t, v) -> t.backoff.multiplier((Double) v)),
          leaf(
              "max",
              duration(Duration.ZERO, true, ONE_HOUR),
              "5s",
              "cap on the computed delay",
              (t, v) -> t.backoff.max((Duration) v)),
          leaf(
              "jitter",
              enumOf(Jitter.class, Jitter::configName),
              "full",
              "none; full = U(0, d); equal = d/2 + U(0, d/2); decorrelated = min(max, U(initial,"
                  + " 3 x previous)); proportional = d + U(0, jitterFactor x d)",
              (t, v) -> t.backoff.jitter((Jitter) v)),
          leaf(
              "jitterFactor",
              ratio(0, 1, false),
              "0.2",
              "used by proportional jitter",
              (t, v) -> t.backoff.jitterFactor((Double) v)));

  static final Section RETRY_ON =
      section(
          "retryOn",
          "Which outcomes are retryable.",
          leaf(
              "statuses",
              listOf(ValueType.STATUS),
              "[429, 502, 503, 504]",
              "codes, classes (5xx) or ranges (500-599)",
              (t, v) -> t.retry.retryOnStatuses(StatusSet.of(strings(v)))),
          leaf(
              "transport",
              listOf(enumOf(TransportFailure.class, TransportFailure::configName)),
              "[connect, reset, timeout]",
              "connect: never sent; reset: broke after sending; timeout: no response in time",
              (t, v) -> t.retry.retryOnTransport(ConfigSchema.<TransportFailure>items(v))),
          leaf(
              "exceptions",
              listOf(CLASS_NAME),
              "[]",
              "extra exception class names, matched on the class and its supertypes",
              (t, v) -> t.retry.retryOnExceptions(strings(v))));

  static final Section RETRY_AFTER =
      section(
          "retryAfter",
          "The Retry-After header of a retryable status.",
          leaf(
              "enabled",
              BOOLEAN,
              "true",
              "wait at least what Retry-After asks (delta-seconds or HTTP-date)",
              (t, v) -> t.retry.retryAfterEnabled((Boolean) v)),
          leaf(
              "max",
              duration(Duration.ZERO, false, ONE_DAY),
              "30s",
              "a longer Retry-After is not waited for: the response goes back at once",
              (t, v) -> t.retry.retryAfterMax((Duration) v)));

  static final Section RETRY =
      section(
          "retry",
          "What is retried, how often and how long to wait.",
          leaf(
              "enabled",
              BOOLEAN,
              "true",
              "false: calls pass through untouched by retries",
              (t, v) -> t.retry.enabled((Boolean) v)),
          leaf(
              "maxAttempts",
              integer(1, 10),
              "3",
              "attempts in all, the first included",
              (t, v) -> t.retry.maxAttempts(toInt(v))),
          BACKOFF,
          RETRY_ON,
          leaf(
              "methods",
              listOf(METHOD),
              "[GET, HEAD, OPTIONS, TRACE, PUT, DELETE]",
              "idempotent methods, retried on any retryable outcome",
              (t, v) -> t.retry.methods(strings(v))),
          leaf(
              "unsafeMethods",
              enumOf(UnsafeMethods.class, UnsafeMethods::configName),
              "if-not-sent",
              "other methods: never; if-not-sent (connect failures only); if-idempotency-key"
                  + " (also any retryable outcome when the key header is present); always",
              (t, v) -> t.retry.unsafeMethods((UnsafeMethods) v)),
          leaf(
              "idempotencyKeyHeader",
              HEADER_NAME,
              "Idempotency-Key",
              "the header that marks a request safe to repeat; sent unchanged on every attempt",
              (t, v) -> t.retry.idempotencyKeyHeader((String) v)),
          RETRY_AFTER,
          leaf(
              "deadline",
              duration(Duration.ZERO, true, ONE_DAY),
              "30s",
              "total time of a call across attempts and delays",
              (t, v) -> t.retry.deadline((Duration) v)),
          noneOr(
              "perAttemptTimeout",
              duration(Duration.ZERO, true, ONE_DAY),
              "none",
              "when set, each attempt gets this timeout (the client's own otherwise)",
              (t, v) -> t.retry.perAttemptTimeout((Duration) v)),
          noneOr(
              "attemptHeader",
              HEADER_NAME,
              "none",
              "when set (e.g. X-Retry-Attempt), each attempt carries its 1-based number",
              (t, v) -> t.retry.attemptHeader((String) v)),
          leaf(
              "replayBodyLimit",
              ValueType.size(MAX_REPLAY_BODY),
              "64KiB",
              "most bytes of a streamed body kept to send it again; a larger body is not retried"
                  + " once sent",
              (t, v) -> t.retry.replayBodyLimit((Long) v)));

  // ---------------------------------------------------------------- budget

  static final Section BUDGET =
      section(
          "budget",
          "Retry budget per target host.",
          leaf("enabled", BOOLEAN, "true", "", (t, v) -> t.budget.enabled((Boolean) v)),
          leaf(
              "ratio",
              ratio(0, 10, false),
              "0.2",
              "retries in the window may add at most this share of the calls in it",
              (t, v) -> t.budget.ratio((Double) v)),
          leaf(
              "minPerSecond",
              integer(0, 1_000_000),
              "10",
              "retries always allowed at this rate, whatever the ratio",
              (t, v) -> t.budget.minPerSecond(toInt(v))),
          leaf(
              "window",
              duration(ONE_MS, false, ONE_HOUR),
              "10s",
              "the sliding window of the ratio",
              (t, v) -> t.budget.window((Duration) v)));

  // ---------------------------------------------------------------- circuit breaker

  static final Section WINDOW =
      section(
          "window",
          "{type: count, size: 50} (last N attempts) or {type: time, size: 30s}.",
          leaf(
              "type",
              enumOf(
                  CircuitBreakerPolicy.WindowType.class,
                  CircuitBreakerPolicy.WindowType::configName),
              "count",
              "count: the last size attempts; time: the attempts of the last size",
              (t, v) -> t.windowType = (CircuitBreakerPolicy.WindowType) v),
          // Applied by the assembler, which knows the window type: 1..10000 calls or 1ms..1h.
          leaf(
              "size",
              ValueType.COUNT_OR_DURATION,
              "50",
              "count: a number of attempts (1..10000, default 50); time: a duration (1ms..1h,"
                  + " default 30s)",
              (t, v) -> {}));

  static final Section SLOW_CALL =
      section(
          "slowCall",
          "Slow attempts count towards a second rate.",
          noneOr(
              "duration",
              duration(Duration.ZERO, true, ONE_DAY),
              "none",
              "attempts longer than this count as slow",
              (t, v) -> t.circuitBreaker.slowCallDuration((Duration) v)),
          leaf(
              "rateThreshold",
              ratio(0, 1, true),
              "100%",
              "opens at or above this slow-call rate",
              (t, v) -> t.circuitBreaker.slowCallRateThreshold((Double) v)));

  static final Section FAIL_ON =
      section(
          "failOn",
          "Outcomes that count as failures.",
          leaf(
              "statuses",
              listOf(ValueType.STATUS),
              "[5xx]",
              "429 does not count by default",
              (t, v) -> t.circuitBreaker.failOnStatuses(StatusSet.of(strings(v)))),
          leaf(
              "transport",
              BOOLEAN,
              "true",
              "transport failures count as failures",
              (t, v) -> t.circuitBreaker.failOnTransport((Boolean) v)));

  static final Section CIRCUIT_BREAKER =
      section(
          "circuitBreaker",
          "Circuit breaker per target host (scheme://host:port) or per route.",
          leaf("enabled", BOOLEAN, "true", "", (t, v) -> t.circuitBreaker.enabled((Boolean) v)),
          leaf(
              "scope",
              enumOf(CircuitBreakerPolicy.Scope.class, CircuitBreakerPolicy.Scope::configName),
              "host",
              "host: one breaker per scheme://host:port; route: one per route",
              (t, v) -> t.circuitBreaker.scope((CircuitBreakerPolicy.Scope) v)),
          WINDOW,
          leaf(
              "minimumCalls",
              integer(1, 1_000_000),
              "20",
              "no decision before this many calls in the window",
              (t, v) -> t.circuitBreaker.minimumCalls(toInt(v))),
          leaf(
              "failureRateThreshold",
              ratio(0, 1, true),
              "50%",
              "opens at or above this failure rate",
              (t, v) -> t.circuitBreaker.failureRateThreshold((Double) v)),
          SLOW_CALL,
          leaf(
              "openFor",
              duration(Duration.ZERO, true, ONE_DAY),
              "30s",
              "time open before half-open",
              (t, v) -> t.circuitBreaker.openFor((Duration) v)),
          leaf(
              "halfOpenCalls",
              integer(1, 10_000),
              "5",
              "trial calls in half-open; all must succeed to close",
              (t, v) -> t.circuitBreaker.halfOpenCalls(toInt(v))),
          FAIL_ON,
          leaf(
              "maxHosts",
              integer(1, 10_000_000),
              "10000",
              "bound on tracked hosts; the least recently used idle one is dropped",
              (t, v) -> t.circuitBreaker.maxHosts(toInt(v))));

  // ---------------------------------------------------------------- rate limit

  static final Section RATE_LIMIT =
      section(
          "rateLimit",
          "Client-side token bucket per target host.",
          leaf("enabled", BOOLEAN, "false", "", (t, v) -> t.rateLimit.enabled((Boolean) v)),
          leaf(
              "perSecond",
              new ValueType.Bounded(ValueType.Kind.NUMBER, 0, 1e9, true),
              "50",
              "permits added per second",
              (t, v) -> t.rateLimit.perSecond((Double) v)),
          leaf(
              "burst",
              integer(1, 1_000_000_000),
              "50",
              "bucket size: calls that may go at once after a quiet period",
              (t, v) -> t.rateLimit.burst(toInt(v))),
          leaf(
              "maxWait",
              duration(Duration.ZERO, false, ONE_DAY),
              "0s",
              "wait this long for a permit, then fail with an IOException",
              (t, v) -> t.rateLimit.maxWait((Duration) v)),
          leaf(
              "pauseOn429",
              BOOLEAN,
              "true",
              "a 429 with Retry-After pauses every caller of that host until then (bounded by"
                  + " retryAfter.max)",
              (t, v) -> t.rateLimit.pauseOn429((Boolean) v)));

  /** The four sections a policy has, in {@code defaults} and in each route. */
  static final List<Section> POLICY_SECTIONS = List.of(RETRY, BUDGET, CIRCUIT_BREAKER, RATE_LIMIT);

  // ---------------------------------------------------------------- agent

  static final Section AGENT =
      section(
          "agent",
          "How the agent itself behaves.",
          leaf(
              "mode",
              enumOf(Mode.class, Mode::configName),
              "enforce",
              "enforce | observe (decide and log, never retry, delay or block) | off",
              (t, v) -> t.mode = (Mode) v),
          leaf(
              "strict",
              BOOLEAN,
              "false",
              "true: an invalid file stops the JVM at start; false: one error on stderr and the"
                  + " application runs uninstrumented",
              (t, v) -> t.strict = (Boolean) v),
          leaf(
              "reload",
              BOOLEAN,
              "true",
              "watch the file; a valid edit applies to new calls, an invalid one is reported and"
                  + " the previous configuration stays",
              (t, v) -> t.reload = (Boolean) v),
          section(
              "clients",
              "Per-client switches.",
              leaf(
                  "jdk-http",
                  BOOLEAN,
                  "true",
                  "java.net.http.HttpClient send / sendAsync",
                  (t, v) -> t.jdkHttp = (Boolean) v),
              leaf(
                  "okhttp",
                  BOOLEAN,
                  "true",
                  "OkHttp 3.x, 4.x, 5.x execute / enqueue",
                  (t, v) -> t.okhttp = (Boolean) v),
              leaf(
                  "url-connection",
                  BOOLEAN,
                  "true",
                  "HttpURLConnection (once supported)",
                  (t, v) -> t.urlConnection = (Boolean) v),
              leaf(
                  "apache-httpclient",
                  BOOLEAN,
                  "true",
                  "Apache HttpClient 4.5.x / 5.x classic (once supported)",
                  (t, v) -> t.apacheHttpClient = (Boolean) v)),
          section(
              "log",
              "Agent log lines: one per retry, give-up, breaker change.",
              leaf(
                  "level",
                  enumOf(LogLevel.class, LogLevel::configName),
                  "info",
                  "error | warn | info | debug",
                  (t, v) -> t.logLevel = (LogLevel) v)),
          section(
              "metrics",
              "Where the agent publishes its counters.",
              leaf("jmx", BOOLEAN, "true", "platform MBeans", (t, v) -> t.jmx = (Boolean) v),
              section(
                  "prometheus",
                  "A Prometheus text endpoint served by the agent.",
                  leaf(
                      "enabled", BOOLEAN, "false", "", (t, v) -> t.prometheusEnabled = (Boolean) v),
                  leaf(
                      "host",
                      BIND_HOST,
                      "127.0.0.1",
                      "address to bind; loopback keeps it private",
                      (t, v) -> t.prometheusHost = (String) v),
                  leaf(
                      "port",
                      integer(1, 65535),
                      "9464",
                      "",
                      (t, v) -> t.prometheusPort = toInt(v)))),
          section(
              "deadLetter",
              "A record of calls that gave up.",
              noneOr(
                  "path",
                  FILE_PATH,
                  "none",
                  "when set, one JSON line per call that gave up",
                  (t, v) -> t.deadLetterPath = (String) v)));

  // ---------------------------------------------------------------- routes and root

  static final Section MATCH =
      section(
          "match",
          "Which requests a route claims; every list given must match.",
          leaf(
              "hosts",
              listOf(ValueType.HOST_GLOB),
              null,
              "host globs, any case, * matches any run; :port optional (none = any port); any host when"
                  + " left out",
              (t, v) -> t.hosts = items(v)),
          leaf(
              "methods",
              listOf(METHOD),
              null,
              "HTTP methods, any case; any method when left out",
              (t, v) -> {
                t.methods.clear();
                for (String m : strings(v)) {
                  t.methods.add(m.toUpperCase(Locale.ROOT));
                }
              }),
          leaf(
              "paths",
              listOf(ValueType.PATH_GLOB),
              null,
              "path globs without the query: * within a segment, ** across segments; any path when"
                  + " left out",
              (t, v) -> t.paths = items(v)));

  static final Section ROUTE =
      section(
          "route",
          "A route: which requests it claims and how its sections differ from defaults.",
          List.of(
              leaf(
                  "name",
                  ROUTE_NAME,
                  null,
                  "shown in logs and metrics; unique; route-<index> when left out",
                  (t, v) -> t.routeName = (String) v),
              MATCH),
          POLICY_SECTIONS.toArray(new Section[0]));

  static final Section DEFAULTS =
      section(
          "defaults",
          "The policy of every call that no route claims.",
          POLICY_SECTIONS.toArray(new Section[0]));

  static final SectionList ROUTES =
      new SectionList(
          "routes",
          "First match wins; a route's sections override defaults key by key.",
          ROUTE,
          MAX_ROUTES);

  static final Leaf VERSION =
      leaf(
          "version",
          integer(1, 1),
          "1",
          "format version of the file; 1 when left out",
          (t, v) -> t.version = toInt(v));

  static final Section ROOT =
      section("", "retry-agent configuration, version 1.", VERSION, AGENT, DEFAULTS, ROUTES);

  // ---------------------------------------------------------------- helpers for setters

  static int toInt(Object v) {
    return Math.toIntExact((Long) v);
  }

  static List<String> strings(Object v) {
    List<String> out = new ArrayList<>();
    for (Object o : (List<?>) v) {
      out.add((String) o);
    }
    return out;
  }

  @SuppressWarnings("unchecked")
  static <T> List<T> items(Object v) {
    return new ArrayList<>((List<T>) v);
  }
}
