package dev.retryagent.config;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retryagent.policy.BackoffPolicy;
import dev.retryagent.policy.CircuitBreakerPolicy;
import dev.retryagent.policy.Policy;
import dev.retryagent.policy.UnsafeMethods;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The version-1 contract as tests outside the project read it (the lead's shared CONFIG.md, which
 * docs/configuration.md restates): its layout example, fed verbatim but for the four {@code { ...
 * }} placeholders, means what its comments say; every key written with its stated default is the
 * built-in default; and the value forms it names are read. A failure here is a change of a
 * version-1 key's meaning.
 */
class ContractVersionOneTest {

  /** The contract's "File layout" block, comments and all; the placeholder lines left out. */
  static final String LAYOUT_EXAMPLE =
      String.join(
          "\n",
          "version: 1",
          "",
          "agent:",
          "  mode: enforce        # enforce | observe (decide and log, but never retry, delay or"
              + " block) | off",
          "  strict: false        # true: an invalid file stops the JVM at start with the error;",
          "                       # false: one clear error on stderr, the application runs"
              + " uninstrumented",
          "  reload: true         # watch the file; a valid edit applies to new calls, an invalid"
              + " one is",
          "                       # reported and the previous configuration stays",
          "  clients:             # per-client switches",
          "    jdk-http: true     # java.net.http.HttpClient send / sendAsync",
          "    okhttp: true       # OkHttp 3.x, 4.x, 5.x execute / enqueue",
          "    url-connection: true      # HttpURLConnection (once supported)",
          "    apache-httpclient: true   # Apache HttpClient 4.5.x / 5.x classic (once supported)",
          "  log: { level: info } # error | warn | info | debug ; one line per retry, give-up,"
              + " breaker change",
          "  metrics:",
          "    jmx: true",
          "    prometheus: { enabled: false, host: 127.0.0.1, port: 9464 }",
          "  deadLetter: { path: null }   # when set, one JSON line per call that gave up",
          "",
          "defaults:              # the policy of every call that no route claims",
          "",
          "routes:                # first match wins; a route's sections override `defaults` key"
              + " by key",
          "  - name: payments",
          "    match:",
          "      hosts: [\"api.payments.example.com\", \"*.pay.internal:8443\"]   # glob,"
              + " case-insensitive; no port = any port",
          "      methods: [POST]                                              # any if absent",
          "      paths: [\"/v1/charges/**\"]                                    # glob (**"
              + " crosses /), any if absent",
          "    retry: { maxAttempts: 5, unsafeMethods: if-idempotency-key }",
          "  - name: auth",
          "    match: { hosts: [\"auth.internal\"] }",
          "    retry: { enabled: false }",
          "");

  @Test
  void theLayoutExampleMeansWhatItsCommentsSay() throws ConfigException {
    AgentConfig c = ConfigLoader.parse(LAYOUT_EXAMPLE, "CONFIG.md", Map.of());
    assertThat(c.routes()).extracting(Route::name).containsExactly("payments", "auth");

    // hosts: glob, case-insensitive; no port = any port. methods and paths: any if absent.
    assertThat(route(c, "POST", "API.Payments.Example.COM", 443, "/v1/charges/ch_1"))
        .isEqualTo("payments");
    assertThat(route(c, "POST", "api.payments.example.com", 8080, "/v1/charges/a/b/c"))
        .isEqualTo("payments");
    assertThat(route(c, "POST", "x.y.pay.internal", 8443, "/v1/charges/1")).isEqualTo("payments");
    assertThat(route(c, "POST", "x.pay.internal", 443, "/v1/charges/1")).isEqualTo("default");
    assertThat(route(c, "GET", "api.payments.example.com", 443, "/v1/charges/1"))
        .isEqualTo("default");
    assertThat(route(c, "POST", "api.payments.example.com", 443, "/v1/refunds/1"))
        .isEqualTo("default");
    assertThat(route(c, "DELETE", "AUTH.internal", 9000, "/any/path")).isEqualTo("auth");

    // A route's sections override defaults key by key.
    Policy payments = c.resolve("POST", "api.payments.example.com", 443, "/v1/charges/1");
    assertThat(payments.retry().maxAttempts()).isEqualTo(5);
    assertThat(payments.retry().unsafeMethods()).isEqualTo(UnsafeMethods.IF_IDEMPOTENCY_KEY);
    assertThat(payments.retry().deadline()).isEqualTo(Duration.ofSeconds(30));
    Policy auth = c.resolve("GET", "auth.internal", 443, "/");
    assertThat(auth.retry().enabled()).isFalse();
    assertThat(auth.retry().maxAttempts()).isEqualTo(3);

    // The agent section, as written, is the built-in one.
    AgentConfig builtIn = AgentConfig.defaults();
    assertThat(c.mode()).isEqualTo(builtIn.mode());
    assertThat(c.strict()).isFalse();
    assertThat(c.reload()).isTrue();
    assertThat(c.clients()).isEqualTo(builtIn.clients());
    assertThat(c.logLevel()).isEqualTo(builtIn.logLevel());
    assertThat(c.metrics()).isEqualTo(builtIn.metrics());
    assertThat(c.deadLetterPath()).isNull();
    assertThat(c.defaultPolicy()).isEqualTo(builtIn.defaultPolicy());
  }

  @Test
  void everyKeyWrittenWithItsContractDefaultIsTheBuiltInDefault() throws ConfigException {
    AgentConfig c =
        Yaml.load(
            "defaults:",
            "  retry:",
            "    enabled: true",
            "    maxAttempts: 3",
            "    backoff: { initial: 100ms, multiplier: 2.0, max: 5s, jitter: full,"
                + " jitterFactor: 0.2 }",
            "    retryOn: { statuses: [429, 502, 503, 504], transport: [connect, reset,"
                + " timeout], exceptions: [] }",
            "    methods: [GET, HEAD, OPTIONS, TRACE, PUT, DELETE]",
            "    unsafeMethods: if-not-sent",
            "    idempotencyKeyHeader: Idempotency-Key",
            "    retryAfter: { enabled: true, max: 30s }",
            "    deadline: 30s",
            "    perAttemptTimeout: none",
            "    attemptHeader: none",
            "    replayBodyLimit: 64KiB",
            "  budget: { enabled: true, ratio: 0.2, minPerSecond: 10, window: 10s }",
            "  circuitBreaker:",
            "    enabled: true",
            "    scope: host",
            "    window: { type: count, size: 50 }",
            "    minimumCalls: 20",
            "    failureRateThreshold: 50%",
            "    slowCall: { duration: none, rateThreshold: 100% }",
            "    openFor: 30s",
            "    halfOpenCalls: 5",
            "    failOn: { statuses: [5xx], transport: true }",
            "    maxHosts: 10000",
            "  rateLimit: { enabled: false, perSecond: 50, burst: 50, maxWait: 0s,"
                + " pauseOn429: true }",
            "");
    assertThat(c).isEqualTo(AgentConfig.defaults());
  }

  @Test
  void theValueFormsTheContractNamesAreRead() throws ConfigException {
    AgentConfig c =
        Yaml.load(
            "defaults:",
            "  retry:",
            "    backoff: { initial: 250ms, max: PT2S }",
            "    retryOn: { statuses: [5xx, 500-599, 429] }",
            "    deadline: 1h",
            "    perAttemptTimeout: 1m",
            "    replayBodyLimit: 1MiB",
            "  circuitBreaker:",
            "    window: { type: time, size: 30s }",
            "    failureRateThreshold: 0.5",
            "    slowCall: { duration: 2s, rateThreshold: 50% }",
            "  rateLimit: { enabled: true, maxWait: 2s }",
            "");
    Policy p = c.defaultPolicy();
    assertThat(p.retry().backoff().initial()).isEqualTo(Duration.ofMillis(250));
    assertThat(p.retry().backoff().max()).isEqualTo(Duration.ofSeconds(2));
    assertThat(p.retry().retryOnStatuses().contains(599)).isTrue();
    assertThat(p.retry().retryOnStatuses().contains(429)).isTrue();
    assertThat(p.retry().retryOnStatuses().contains(404)).isFalse();
    assertThat(p.retry().deadline()).isEqualTo(Duration.ofHours(1));
    assertThat(p.retry().perAttemptTimeout()).isEqualTo(Duration.ofMinutes(1));
    assertThat(p.retry().replayBodyLimit()).isEqualTo(1L << 20);
    assertThat(p.circuitBreaker().windowType()).isEqualTo(CircuitBreakerPolicy.WindowType.TIME);
    assertThat(p.circuitBreaker().windowDuration()).isEqualTo(Duration.ofSeconds(30));
    assertThat(p.circuitBreaker().failureRateThreshold()).isEqualTo(0.5);
    assertThat(p.rateLimit().maxWait()).isEqualTo(Duration.ofSeconds(2));
  }

  @Test
  void aBackoffOfZeroIsReadAsRetryAtOnce() throws ConfigException {
    // The contract bounds neither backoff.initial nor backoff.max from below, and an immediate
    // retry is what a test of retries writes first; both were refused as "above 0", the whole file
    // invalid and the application run without the agent. (BackoffTest: every jitter gives 0.)
    AgentConfig c =
        Yaml.load(
            "defaults:",
            "  retry:",
            "    backoff: { initial: 0ms, jitter: none }",
            "routes:",
            "  - name: capped",
            "    match: { hosts: [\"capped.example\"] }",
            "    retry: { backoff: { max: 0s, jitter: decorrelated } }",
            "");
    BackoffPolicy atOnce = c.defaultPolicy().retry().backoff();
    assertThat(atOnce.initial()).isEqualTo(Duration.ZERO);
    BackoffPolicy capped = c.resolve("GET", "capped.example", 443, "/").retry().backoff();
    assertThat(capped.max()).isEqualTo(Duration.ZERO);
    assertThat(capped.initial()).as("follows max down").isEqualTo(Duration.ZERO);
  }

  private static String route(AgentConfig c, String method, String host, int port, String path) {
    return c.resolve(method, host, port, path).routeName();
  }
}
