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
              new Set("retry.backoff.initial")),
          leaf(
              "multiplier",
              ValueType.number(1.0, 100.0),
              "2.0",
              "growth per retry (1.0 = constant)",
              new Set("retry.backoff.multiplier")),
          leaf(
              "max",
              duration(Duration.ZERO, true, ONE_HOUR),
              "5s",
              "cap on the computed delay",
              new Set("retry.backoff.max")),
          leaf(
              "jitter",
              enumOf(Jitter.class),
              "full",
              "none; full = U(0, d); equal = d/2 + U(0, d/2); decorrelated = min(max, U(initial,"
                  + " 3 x previous)); proportional = d + U(0, jitterFactor x d)",
              new Set("retry.backoff.jitter")),
          leaf(
              "jitterFactor",
              ratio(0, 1, false),
              "0.2",
              "used by proportional jitter",
              new Set("retry.backoff.jitterFactor")));

  static final Section RETRY_ON =
      section(
          "retryOn",
          "Which outcomes are retryable.",
          leaf(
              "statuses",
              listOf(ValueType.STATUS),
              "[429, 502, 503, 504]",
              "codes, classes (5xx) or ranges (500-599)",
              new Set("retry.retryOn.statuses")),
          leaf(
              "transport",
              listOf(enumOf(TransportFailure.class)),
              "[connect, reset, timeout]",
              "connect: never sent; reset: broke after sending; timeout: no response in time",
              new Set("retry.retryOn.transport")),
          leaf(
              "exceptions",
              listOf(CLASS_NAME),
              "[]",
              "extra exception class names, matched on the class and its supertypes",
              new Set("retry.retryOn.exceptions")));

  static final Section RETRY_AFTER =
      section(
          "retryAfter",
          "The Retry-After header of a retryable status.",
          leaf(
              "enabled",
              BOOLEAN,
              "true",
              "wait at least what Retry-After asks (delta-seconds or HTTP-date)",
              new Set("retry.retryAfter.enabled")),
          leaf(
              "max",
              duration(Duration.ZERO, false, ONE_DAY),
              "30s",
              "a longer Retry-After is not waited for: the response goes back at once",
              new Set("retry.retryAfter.max")));

  static final Section RETRY =
      section(
          "retry",
          "What is retried, how often and how long to wait.",
          leaf(
              "enabled",
              BOOLEAN,
              "true",
              "false: calls pass through untouched by retries",
              new Set("retry.enabled")),
          leaf(
              "maxAttempts",
              integer(1, 10),
              "3",
              "attempts in all, the first included",
              new Set("retry.maxAttempts")),
          BACKOFF,
          RETRY_ON,
          leaf(
              "methods",
              listOf(METHOD),
              "[GET, HEAD, OPTIONS, TRACE, PUT, DELETE]",
              "idempotent methods, retried on any retryable outcome",
              new Set("retry.methods")),
          leaf(
              "unsafeMethods",
              enumOf(UnsafeMethods.class),
              "if-not-sent",
              "other methods: never; if-not-sent (connect failures only); if-idempotency-key"
                  + " (also any retryable outcome when the key header is present); always",
              new Set("retry.unsafeMethods")),
          leaf(
              "idempotencyKeyHeader",
              HEADER_NAME,
              "Idempotency-Key",
              "the header that marks a request safe to repeat; sent unchanged on every attempt",
              new Set("retry.idempotencyKeyHeader")),
          RETRY_AFTER,
          leaf(
              "deadline",
              duration(Duration.ZERO, true, ONE_DAY),
              "30s",
              "total time of a call across attempts and delays",
              new Set("retry.deadline")),
          noneOr(
              "perAttemptTimeout",
              duration(Duration.ZERO, true, ONE_DAY),
              "none",
              "when set, each attempt gets this timeout (the client's own otherwise)",
              new Set("retry.perAttemptTimeout")),
          noneOr(
              "attemptHeader",
              HEADER_NAME,
              "none",
              "when set (e.g. X-Retry-Attempt), each attempt carries its 1-based number",
              new Set("retry.attemptHeader")),
          leaf(
              "replayBodyLimit",
              ValueType.size(MAX_REPLAY_BODY),
              "64KiB",
              "most bytes of a streamed body kept to send it again; a larger body is not retried"
                  + " once sent",
              new Set("retry.replayBodyLimit")));

  // ---------------------------------------------------------------- budget

  static final Section BUDGET =
      section(
          "budget",
          "Retry budget per target host.",
          leaf("enabled", BOOLEAN, "true", "", new Set("budget.enabled")),
          leaf(
              "ratio",
              ratio(0, 10, false),
              "0.2",
              "retries in the window may add at most this share of the calls in it",
              new Set("budget.ratio")),
          leaf(
              "minPerSecond",
              integer(0, 1_000_000),
              "10",
              "retries always allowed at this rate, whatever the ratio",
              new Set("budget.minPerSecond")),
          leaf(
              "window",
              duration(ONE_MS, false, ONE_HOUR),
              "10s",
              "the sliding window of the ratio",
              new Set("budget.window")));

  // ---------------------------------------------------------------- circuit breaker

  static final Section WINDOW =
      section(
          "window",
          "{type: count, size: 50} (last N attempts) or {type: time, size: 30s}.",
          leaf(
              "type",
              enumOf(CircuitBreakerPolicy.WindowType.class),
              "count",
              "count: the last size attempts; time: the attempts of the last size",
              new Set("circuitBreaker.window.type")),
          // Applied by the assembler, which knows the window type: 1..10000 calls or 1ms..1h.
          leaf(
              "size",
              ValueType.COUNT_OR_DURATION,
              "50",
              "count: a number of attempts (1..10000, default 50); time: a duration (1ms..1h,"
                  + " default 30s)",
              new Set("circuitBreaker.window.size")));

  static final Section SLOW_CALL =
      section(
          "slowCall",
          "Slow attempts count towards a second rate.",
          noneOr(
              "duration",
              duration(Duration.ZERO, true, ONE_DAY),
              "none",
              "attempts longer than this count as slow",
              new Set("circuitBreaker.slowCall.duration")),
          leaf(
              "rateThreshold",
              ratio(0, 1, true),
              "100%",
              "opens at or above this slow-call rate",
              new Set("circuitBreaker.slowCall.rateThreshold")));

  static final Section FAIL_ON =
      section(
          "failOn",
          "Outcomes that count as failures.",
          leaf(
              "statuses",
              listOf(ValueType.STATUS),
              "[5xx]",
              "429 does not count by default",
              new Set("circuitBreaker.failOn.statuses")),
          leaf(
              "transport",
              BOOLEAN,
              "true",
              "transport failures count as failures",
              new Set("circuitBreaker.failOn.transport")));

  static final Section CIRCUIT_BREAKER =
      section(
          "circuitBreaker",
          "Circuit breaker per target host (scheme://host:port) or per route.",
          leaf("enabled", BOOLEAN, "true", "", new Set("circuitBreaker.enabled")),
          leaf(
              "scope",
              enumOf(CircuitBreakerPolicy.Scope.class),
              "host",
              "host: one breaker per scheme://host:port; route: one per route",
              new Set("circuitBreaker.scope")),
          WINDOW,
          leaf(
              "minimumCalls",
              integer(1, 1_000_000),
              "20",
              "no decision before this many calls in the window",
              new Set("circuitBreaker.minimumCalls")),
          leaf(
              "failureRateThreshold",
              ratio(0, 1, true),
              "50%",
              "opens at or above this failure rate",
              new Set("circuitBreaker.failureRateThreshold")),
          SLOW_CALL,
          leaf(
              "openFor",
              duration(Duration.ZERO, true, ONE_DAY),
              "30s",
              "time open before half-open",
              new Set("circuitBreaker.openFor")),
          leaf(
              "halfOpenCalls",
              integer(1, 10_000),
              "5",
              "trial calls in half-open; all must succeed to close",
              new Set("circuitBreaker.halfOpenCalls")),
          FAIL_ON,
          leaf(
              "maxHosts",
              integer(1, 10_000_000),
              "10000",
              "bound on tracked hosts; the least recently used idle one is dropped",
              new Set("circuitBreaker.maxHosts")));

  // ---------------------------------------------------------------- rate limit

  static final Section RATE_LIMIT =
      section(
          "rateLimit",
          "Client-side token bucket per target host.",
          leaf("enabled", BOOLEAN, "false", "", new Set("rateLimit.enabled")),
          leaf(
              "perSecond",
              new ValueType.Bounded(ValueType.Kind.NUMBER, 0, 1e9, true),
              "50",
              "permits added per second",
              new Set("rateLimit.perSecond")),
          leaf(
              "burst",
              integer(1, 1_000_000_000),
              "50",
              "bucket size: calls that may go at once after a quiet period",
              new Set("rateLimit.burst")),
          leaf(
              "maxWait",
              duration(Duration.ZERO, false, ONE_DAY),
              "0s",
              "wait this long for a permit, then fail with an IOException",
              new Set("rateLimit.maxWait")),
          leaf(
              "pauseOn429",
              BOOLEAN,
              "true",
              "a 429 with Retry-After pauses every caller of that host until then (bounded by"
                  + " retryAfter.max)",
              new Set("rateLimit.pauseOn429")));

  /** The four sections a policy has, in {@code defaults} and in each route. */
  static final List<Section> POLICY_SECTIONS = List.of(RETRY, BUDGET, CIRCUIT_BREAKER, RATE_LIMIT);

  // ---------------------------------------------------------------- agent

  static final Section AGENT =
      section(
          "agent",
          "How the agent itself behaves.",
          leaf(
              "mode",
              enumOf(Mode.class),
              "enforce",
              "enforce | observe (decide and log, never retry, delay or block) | off",
              new Set("agent.mode")),
          leaf(
              "strict",
              BOOLEAN,
              "false",
              "true: an invalid file stops the JVM at start; false: one error on stderr and the"
                  + " application runs uninstrumented",
              new Set("agent.strict")),
          leaf(
              "reload",
              BOOLEAN,
              "true",
              "watch the file; a valid edit applies to new calls, an invalid one is reported and"
                  + " the previous configuration stays",
              new Set("agent.reload")),
          section(
              "clients",
              "Per-client switches.",
              leaf(
                  "jdk-http",
                  BOOLEAN,
                  "true",
                  "java.net.http.HttpClient send / sendAsync",
                  new Set("agent.clients.jdk-http")),
              leaf(
                  "okhttp",
                  BOOLEAN,
                  "true",
                  "OkHttp 3.x, 4.x, 5.x execute / enqueue",
                  new Set("agent.clients.okhttp")),
              leaf(
                  "url-connection",
                  BOOLEAN,
                  "true",
                  "HttpURLConnection (once supported)",
                  new Set("agent.clients.url-connection")),
              leaf(
                  "apache-httpclient",
                  BOOLEAN,
                  "true",
                  "Apache HttpClient 4.5.x / 5.x classic (once supported)",
                  new Set("agent.clients.apache-httpclient"))),
          section(
              "log",
              "Agent log lines: one per retry, give-up, breaker change.",
              leaf(
                  "level",
                  enumOf(LogLevel.class),
                  "info",
                  "error | warn | info | debug",
                  new Set("agent.log.level"))),
          section(
              "metrics",
              "Where the agent publishes its counters.",
              leaf("jmx", BOOLEAN, "true", "platform MBeans", new Set("agent.metrics.jmx")),
              section(
                  "prometheus",
                  "A Prometheus text endpoint served by the agent.",
                  leaf(
                      "enabled", BOOLEAN, "false", "", new Set("agent.metrics.prometheus.enabled")),
                  leaf(
                      "host",
                      BIND_HOST,
                      "127.0.0.1",
                      "address to bind; loopback keeps it private",
                      new Set("agent.metrics.prometheus.host")),
                  leaf(
                      "port",
                      integer(1, 65535),
                      "9464",
                      "",
                      new Set("agent.metrics.prometheus.port")))),
          section(
              "deadLetter",
              "A record of calls that gave up.",
              noneOr(
                  "path",
                  FILE_PATH,
                  "none",
                  "when set, one JSON line per call that gave up",
                  new Set("agent.deadLetter.path"))));

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
              new Set("routes.match.hosts")),
          leaf(
              "methods",
              listOf(METHOD),
              null,
              "HTTP methods, any case; any method when left out",
              new Set("routes.match.methods")),
          leaf(
              "paths",
              listOf(ValueType.PATH_GLOB),
              null,
              "path globs without the query: * within a segment, ** across segments; any path when"
                  + " left out",
              new Set("routes.match.paths")));

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
                  new Set("routes.name")),
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
          new Set("version"));

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

  /**
   * Where each key's value goes, as one class with a switch rather than one lambda per key: the
   * agent reads its configuration in {@code premain}, where every lambda is a class spun at
   * start-up (about a millisecond each while the JVM is cold).
   */
  private static final class Set implements Schema.Setter {
    private final String key;

    Set(String key) {
      this.key = key;
    }

    @Override
    public void apply(Target t, Object v) {
      switch (key) {
        case "retry.backoff.initial":
          t.backoff.initial((Duration) v);
          return;
        case "retry.backoff.multiplier":
          t.backoff.multiplier((Double) v);
          return;
        case "retry.backoff.max":
          t.backoff.max((Duration) v);
          return;
        case "retry.backoff.jitter":
          t.backoff.jitter((Jitter) v);
          return;
        case "retry.backoff.jitterFactor":
          t.backoff.jitterFactor((Double) v);
          return;
        case "retry.retryOn.statuses":
          t.retry.retryOnStatuses(StatusSet.of(strings(v)));
          return;
        case "retry.retryOn.transport":
          t.retry.retryOnTransport(ConfigSchema.<TransportFailure>items(v));
          return;
        case "retry.retryOn.exceptions":
          t.retry.retryOnExceptions(strings(v));
          return;
        case "retry.retryAfter.enabled":
          t.retry.retryAfterEnabled((Boolean) v);
          return;
        case "retry.retryAfter.max":
          t.retry.retryAfterMax((Duration) v);
          return;
        case "retry.enabled":
          t.retry.enabled((Boolean) v);
          return;
        case "retry.maxAttempts":
          t.retry.maxAttempts(toInt(v));
          return;
        case "retry.methods":
          t.retry.methods(strings(v));
          return;
        case "retry.unsafeMethods":
          t.retry.unsafeMethods((UnsafeMethods) v);
          return;
        case "retry.idempotencyKeyHeader":
          t.retry.idempotencyKeyHeader((String) v);
          return;
        case "retry.deadline":
          t.retry.deadline((Duration) v);
          return;
        case "retry.perAttemptTimeout":
          t.retry.perAttemptTimeout((Duration) v);
          return;
        case "retry.attemptHeader":
          t.retry.attemptHeader((String) v);
          return;
        case "retry.replayBodyLimit":
          t.retry.replayBodyLimit((Long) v);
          return;
        case "budget.enabled":
          t.budget.enabled((Boolean) v);
          return;
        case "budget.ratio":
          t.budget.ratio((Double) v);
          return;
        case "budget.minPerSecond":
          t.budget.minPerSecond(toInt(v));
          return;
        case "budget.window":
          t.budget.window((Duration) v);
          return;
        case "circuitBreaker.window.type":
          t.windowType = (CircuitBreakerPolicy.WindowType) v;
          return;
        case "circuitBreaker.window.size":
          // Nothing to set here: the assembler reads the size with the window's type.
          return;
        case "circuitBreaker.slowCall.duration":
          t.circuitBreaker.slowCallDuration((Duration) v);
          return;
        case "circuitBreaker.slowCall.rateThreshold":
          t.circuitBreaker.slowCallRateThreshold((Double) v);
          return;
        case "circuitBreaker.failOn.statuses":
          t.circuitBreaker.failOnStatuses(StatusSet.of(strings(v)));
          return;
        case "circuitBreaker.failOn.transport":
          t.circuitBreaker.failOnTransport((Boolean) v);
          return;
        case "circuitBreaker.enabled":
          t.circuitBreaker.enabled((Boolean) v);
          return;
        case "circuitBreaker.scope":
          t.circuitBreaker.scope((CircuitBreakerPolicy.Scope) v);
          return;
        case "circuitBreaker.minimumCalls":
          t.circuitBreaker.minimumCalls(toInt(v));
          return;
        case "circuitBreaker.failureRateThreshold":
          t.circuitBreaker.failureRateThreshold((Double) v);
          return;
        case "circuitBreaker.openFor":
          t.circuitBreaker.openFor((Duration) v);
          return;
        case "circuitBreaker.halfOpenCalls":
          t.circuitBreaker.halfOpenCalls(toInt(v));
          return;
        case "circuitBreaker.maxHosts":
          t.circuitBreaker.maxHosts(toInt(v));
          return;
        case "rateLimit.enabled":
          t.rateLimit.enabled((Boolean) v);
          return;
        case "rateLimit.perSecond":
          t.rateLimit.perSecond((Double) v);
          return;
        case "rateLimit.burst":
          t.rateLimit.burst(toInt(v));
          return;
        case "rateLimit.maxWait":
          t.rateLimit.maxWait((Duration) v);
          return;
        case "rateLimit.pauseOn429":
          t.rateLimit.pauseOn429((Boolean) v);
          return;
        case "agent.mode":
          t.mode = (Mode) v;
          return;
        case "agent.strict":
          t.strict = (Boolean) v;
          return;
        case "agent.reload":
          t.reload = (Boolean) v;
          return;
        case "agent.clients.jdk-http":
          t.jdkHttp = (Boolean) v;
          return;
        case "agent.clients.okhttp":
          t.okhttp = (Boolean) v;
          return;
        case "agent.clients.url-connection":
          t.urlConnection = (Boolean) v;
          return;
        case "agent.clients.apache-httpclient":
          t.apacheHttpClient = (Boolean) v;
          return;
        case "agent.log.level":
          t.logLevel = (LogLevel) v;
          return;
        case "agent.metrics.jmx":
          t.jmx = (Boolean) v;
          return;
        case "agent.metrics.prometheus.enabled":
          t.prometheusEnabled = (Boolean) v;
          return;
        case "agent.metrics.prometheus.host":
          t.prometheusHost = (String) v;
          return;
        case "agent.metrics.prometheus.port":
          t.prometheusPort = toInt(v);
          return;
        case "agent.deadLetter.path":
          t.deadLetterPath = (String) v;
          return;
        case "routes.match.hosts":
          t.hosts = items(v);
          return;
        case "routes.match.methods":
          {
            t.methods.clear();
            for (String m : strings(v)) {
              t.methods.add(m.toUpperCase(Locale.ROOT));
            }
          }
          return;
        case "routes.match.paths":
          t.paths = items(v);
          return;
        case "routes.name":
          t.routeName = (String) v;
          return;
        case "version":
          t.version = toInt(v);
          return;
        default:
          throw new AssertionError("no setter " + key);
      }
    }
  }
}
