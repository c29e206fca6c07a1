package dev.retryagent.config;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retryagent.policy.CircuitBreakerPolicy;
import dev.retryagent.policy.Jitter;
import dev.retryagent.policy.Mode;
import dev.retryagent.policy.Policy;
import dev.retryagent.policy.RetryPolicy;
import dev.retryagent.policy.StatusSet;
import dev.retryagent.policy.TransportFailure;
import dev.retryagent.policy.UnsafeMethods;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** Every key of the contract, set to something other than its default, lands where it should. */
class ConfigKeysTest {

  @Test
  void anEmptyFileIsTheBuiltInDefaults() throws Exception {
    assertThat(Yaml.load("")).isEqualTo(AgentConfig.defaults());
    assertThat(Yaml.load("# only a comment")).isEqualTo(AgentConfig.defaults());
    assertThat(Yaml.load("version: 1")).isEqualTo(AgentConfig.defaults());
    assertThat(Yaml.load("defaults:", "agent:", "routes:")).isEqualTo(AgentConfig.defaults());
  }

  @Test
  void theBuiltInDefaultsAreTheContractsDefaults() {
    AgentConfig d = AgentConfig.defaults();
    assertThat(d.source()).isEqualTo("built-in defaults");
    assertThat(d.version()).isEqualTo(1);
    assertThat(d.mode()).isEqualTo(Mode.ENFORCE);
    assertThat(d.strict()).isFalse();
    assertThat(d.reload()).isTrue();
    assertThat(d.clients()).isEqualTo(new ClientSwitches(true, true, true, true));
    assertThat(d.logLevel()).isEqualTo(LogLevel.INFO);
    assertThat(d.metrics().jmx()).isTrue();
    assertThat(d.metrics().prometheusEnabled()).isFalse();
    assertThat(d.metrics().prometheusHost()).isEqualTo("127.0.0.1");
    assertThat(d.metrics().prometheusPort()).isEqualTo(9464);
    assertThat(d.deadLetterPath()).isNull();
    assertThat(d.deadLetterMaxBytes()).isZero();
    assertThat(d.defaultPolicy()).isEqualTo(Policy.defaults());
    assertThat(d.routes()).isEmpty();
  }

  @Test
  void readsEveryAgentKey() throws Exception {
    AgentConfig c =
        Yaml.load(
            "version: 1",
            "agent:",
            "  mode: observe",
            "  strict: true",
            "  reload: false",
            "  clients: {jdk-http: false, okhttp: false, url-connection: false,"
                + " apache-httpclient: false}",
            "  log: {level: debug}",
            "  metrics:",
            "    jmx: false",
            "    prometheus: {enabled: true, host: 0.0.0.0, port: 9100}",
            "  deadLetter: {path: /var/log/dead.jsonl}");
    assertThat(c.mode()).isEqualTo(Mode.OBSERVE);
    assertThat(c.strict()).isTrue();
    assertThat(c.reload()).isFalse();
    assertThat(c.clients().jdkHttp()).isFalse();
    assertThat(c.clients().okhttp()).isFalse();
    assertThat(c.clients().urlConnection()).isFalse();
    assertThat(c.clients().apacheHttpClient()).isFalse();
    assertThat(c.logLevel()).isEqualTo(LogLevel.DEBUG);
    assertThat(c.metrics().jmx()).isFalse();
    assertThat(c.metrics().prometheusEnabled()).isTrue();
    assertThat(c.metrics().prometheusHost()).isEqualTo("0.0.0.0");
    assertThat(c.metrics().prometheusPort()).isEqualTo(9100);
    assertThat(c.deadLetterPath()).isEqualTo("/var/log/dead.jsonl");
    assertThat(c.source()).isEqualTo(Yaml.SOURCE);
  }

  @Test
  void readsModeOffAndEnumsInAnyCase() throws Exception {
    // YAML 1.1 would read a bare off as false; the loader reads the text.
    assertThat(Yaml.load("agent: {mode: off}").mode()).isEqualTo(Mode.OFF);
    assertThat(Yaml.load("agent: {mode: OBSERVE, log: {level: WARN}}").logLevel())
        .isEqualTo(LogLevel.WARN);
    assertThat(Yaml.load("agent: {log: {level: error}}").logLevel()).isEqualTo(LogLevel.ERROR);
  }

  @Test
  void readsEveryRetryKey() throws Exception {
    RetryPolicy r =
        Yaml.load(
                "defaults:",
                "  retry:",
                "    enabled: false",
                "    maxAttempts: 7",
                "    backoff: {initial: 250ms, multiplier: 1.5, max: 2s, jitter: proportional,"
                    + " jitterFactor: 10%}",
                "    retryOn:",
                "      statuses: [500-503, 429, 5XX]",
                "      transport: [connect]",
                "      exceptions: [java.net.UnknownHostException, com.acme.Flaky$Inner]",
                "    methods: [get, PUT]",
                "    unsafeMethods: always",
                "    idempotencyKeyHeader: X-Request-Id",
                "    retryAfter: {enabled: false, max: 10s}",
                "    deadline: 1m",
                "    perAttemptTimeout: 5s",
                "    attemptHeader: X-Retry-Attempt",
                "    replayBodyLimit: 1MiB")
            .defaultPolicy()
            .retry();
    assertThat(r.enabled()).isFalse();
    assertThat(r.maxAttempts()).isEqualTo(7);
    assertThat(r.backoff().initial()).isEqualTo(Duration.ofMillis(250));
    assertThat(r.backoff().multiplier()).isEqualTo(1.5);
    assertThat(r.backoff().max()).isEqualTo(Duration.ofSeconds(2));
    assertThat(r.backoff().jitter()).isEqualTo(Jitter.PROPORTIONAL);
    assertThat(r.backoff().jitterFactor()).isEqualTo(0.1);
    assertThat(r.retryOnStatuses()).isEqualTo(StatusSet.of("500-503", "429", "5xx"));
    assertThat(r.retryOnStatuses().spec()).containsExactly("500-503", "429", "5xx");
    assertThat(r.retryOnTransport()).containsExactly(TransportFailure.CONNECT);
    assertThat(r.retryOnExceptions())
        .containsExactly("java.net.UnknownHostException", "com.acme.Flaky$Inner");
    assertThat(r.methods()).containsExactly("GET", "PUT");
    assertThat(r.unsafeMethods()).isEqualTo(UnsafeMethods.ALWAYS);
    assertThat(r.idempotencyKeyHeader()).isEqualTo("X-Request-Id");
    assertThat(r.retryAfterEnabled()).isFalse();
    assertThat(r.retryAfterMax()).isEqualTo(Duration.ofSeconds(10));
    assertThat(r.deadline()).isEqualTo(Duration.ofMinutes(1));
    assertThat(r.perAttemptTimeout()).isEqualTo(Duration.ofSeconds(5));
    assertThat(r.attemptHeader()).isEqualTo("X-Retry-Attempt");
    assertThat(r.replayBodyLimit()).isEqualTo(1L << 20);
  }

  @Test
  void readsEmptyListsAsNothing() throws Exception {
    RetryPolicy r =
        Yaml.load("defaults: {retry: {retryOn: {statuses: [], transport: []}, methods: []}}")
            .defaultPolicy()
            .retry();
    assertThat(r.retryOnStatuses().contains(503)).isFalse();
    assertThat(r.retryOnTransport()).isEmpty();
    assertThat(r.methods()).isEmpty();
  }

  @Test
  void readsNoneAndNullWhereTheContractAllowsNone() throws Exception {
    AgentConfig c =
        Yaml.load(
            "agent: {deadLetter: {path: null}}",
            "defaults:",
            "  retry: {perAttemptTimeout: ~, attemptHeader: NONE}",
            "  circuitBreaker: {slowCall: {duration: none}}");
    assertThat(c.deadLetterPath()).isNull();
    assertThat(c.defaultPolicy().retry().perAttemptTimeout()).isNull();
    assertThat(c.defaultPolicy().retry().attemptHeader()).isNull();
    assertThat(c.defaultPolicy().circuitBreaker().slowCallDuration()).isNull();
  }

  @Test
  void readsEveryBudgetKey() throws Exception {
    var b =
        Yaml.load("defaults: {budget: {enabled: false, ratio: 10%, minPerSecond: 0, window: 1m}}")
            .defaultPolicy()
            .budget();
    assertThat(b.enabled()).isFalse();
    assertThat(b.ratio()).isEqualTo(0.1);
    assertThat(b.minPerSecond()).isZero();
    assertThat(b.window()).isEqualTo(Duration.ofMinutes(1));
  }

  @Test
  void readsEveryCircuitBreakerKey() throws Exception {
    CircuitBreakerPolicy cb =
        Yaml.load(
                "defaults:",
                "  circuitBreaker:",
                "    enabled: false",
                "    scope: route",
                "    window: {type: time, size: 1m}",
                "    minimumCalls: 100",
                "    failureRateThreshold: 0.25",
                "    slowCall: {duration: 2s, rateThreshold: 80%}",
                "    openFor: 1m",
                "    halfOpenCalls: 3",
                "    failOn: {statuses: [500, 503], transport: false}",
                "    maxHosts: 500")
            .defaultPolicy()
            .circuitBreaker();
    assertThat(cb.enabled()).isFalse();
    assertThat(cb.scope()).isEqualTo(CircuitBreakerPolicy.Scope.ROUTE);
    assertThat(cb.windowType()).isEqualTo(CircuitBreakerPolicy.WindowType.TIME);
    assertThat(cb.windowDuration()).isEqualTo(Duration.ofMinutes(1));
    assertThat(cb.minimumCalls()).isEqualTo(100);
    assertThat(cb.failureRateThreshold()).isEqualTo(0.25);
    assertThat(cb.slowCallDuration()).isEqualTo(Duration.ofSeconds(2));
    assertThat(cb.slowCallRateThreshold()).isEqualTo(0.8);
    assertThat(cb.openFor()).isEqualTo(Duration.ofMinutes(1));
    assertThat(cb.halfOpenCalls()).isEqualTo(3);
    assertThat(cb.failOnStatuses()).isEqualTo(StatusSet.of("500", "503"));
    assertThat(cb.failOnTransport()).isFalse();
    assertThat(cb.maxHosts()).isEqualTo(500);
  }

  @Test
  void readsACountWindowAndATimeWindowWithItsDefaultSize() throws Exception {
    CircuitBreakerPolicy count =
        Yaml.load("defaults: {circuitBreaker: {window: {type: count, size: 200}}}")
            .defaultPolicy()
            .circuitBreaker();
    assertThat(count.windowType()).isEqualTo(CircuitBreakerPolicy.WindowType.COUNT);
    assertThat(count.windowSize()).isEqualTo(200);
    CircuitBreakerPolicy time =
        Yaml.load("defaults: {circuitBreaker: {window: {type: time}}}")
            .defaultPolicy()
            .circuitBreaker();
    assertThat(time.windowType()).isEqualTo(CircuitBreakerPolicy.WindowType.TIME);
    assertThat(time.windowDuration()).isEqualTo(Duration.ofSeconds(30));
    CircuitBreakerPolicy sizeOnly =
        Yaml.load("defaults: {circuitBreaker: {window: {size: 30}}}")
            .defaultPolicy()
            .circuitBreaker();
    assertThat(sizeOnly.windowType()).isEqualTo(CircuitBreakerPolicy.WindowType.COUNT);
    assertThat(sizeOnly.windowSize()).isEqualTo(30);
  }

  @Test
  void readsEveryRateLimitKey() throws Exception {
    var rl =
        Yaml.load(
                "defaults: {rateLimit: {enabled: true, perSecond: 2.5, burst: 10, maxWait: 500ms,"
                    + " pauseOn429: false}}")
            .defaultPolicy()
            .rateLimit();
    assertThat(rl.enabled()).isTrue();
    assertThat(rl.perSecond()).isEqualTo(2.5);
    assertThat(rl.burst()).isEqualTo(10);
    assertThat(rl.maxWait()).isEqualTo(Duration.ofMillis(500));
    assertThat(rl.pauseOn429()).isFalse();
  }

  @Test
  void readsRoutesWithTheirMatchAndName() throws Exception {
    AgentConfig c =
        Yaml.load(
            "routes:",
            "  - name: payments",
            "    match:",
            "      hosts: [\"API.payments.example.com\", \"*.pay.internal:8443\", \"[::1]:8080\"]",
            "      methods: [post, Patch]",
            "      paths: [\"/v1/charges/**\"]",
            "    retry: {maxAttempts: 5, unsafeMethods: if-idempotency-key}",
            "  - match: {hosts: [auth.internal]}",
            "    retry: {enabled: false}");
    assertThat(c.routes()).hasSize(2);
    Route payments = c.routes().get(0);
    assertThat(payments.name()).isEqualTo("payments");
    assertThat(payments.hosts())
        .containsExactly("api.payments.example.com", "*.pay.internal:8443", "[::1]:8080");
    assertThat(payments.methods()).containsExactly("POST", "PATCH");
    assertThat(payments.paths()).containsExactly("/v1/charges/**");
    assertThat(payments.policy().routeName()).isEqualTo("payments");
    assertThat(payments.policy().retry().maxAttempts()).isEqualTo(5);
    assertThat(payments.policy().retry().unsafeMethods())
        .isEqualTo(UnsafeMethods.IF_IDEMPOTENCY_KEY);
    Route unnamed = c.routes().get(1);
    assertThat(unnamed.name()).isEqualTo("route-1");
    assertThat(unnamed.methods()).isEmpty();
    assertThat(unnamed.paths()).isEmpty();
    assertThat(unnamed.policy().retry().enabled()).isFalse();
  }

  @Test
  void readsQuotedNumbersAndBooleansAsTheirText() throws Exception {
    RetryPolicy r =
        Yaml.load(
                "defaults: {retry: {maxAttempts: \"4\", enabled: 'TRUE', retryOn: {statuses: ['503']}}}")
            .defaultPolicy()
            .retry();
    assertThat(r.maxAttempts()).isEqualTo(4);
    assertThat(r.enabled()).isTrue();
    assertThat(r.retryOnStatuses().contains(503)).isTrue();
  }

  @Test
  void substitutesTheEnvironmentInValues() throws Exception {
    Map<String, String> env = Map.of("ATTEMPTS", "6", "PAY_HOST", "pay.example.com");
    AgentConfig c =
        Yaml.loadWithEnv(
            env,
            "agent: {mode: '${MODE:-observe}'}",
            "defaults: {retry: {maxAttempts: '${ATTEMPTS}', deadline: '${DEADLINE:-45s}'}}",
            "routes:",
            "  - name: pay",
            "    match: {hosts: ['${PAY_HOST}', 'api-${REGION:-eu}.example.com']}");
    assertThat(c.mode()).isEqualTo(Mode.OBSERVE);
    assertThat(c.defaultPolicy().retry().maxAttempts()).isEqualTo(6);
    assertThat(c.defaultPolicy().retry().deadline()).isEqualTo(Duration.ofSeconds(45));
    assertThat(c.routes().get(0).hosts()).containsExactly("pay.example.com", "api-eu.example.com");
  }

  @Test
  void readsADeadLetterCapAsASizeAndNoneAsNoCap() throws Exception {
    assertThat(Yaml.load("agent: {deadLetter: {path: /d.jsonl, maxBytes: 512MiB}}"))
        .satisfies(c -> assertThat(c.deadLetterMaxBytes()).isEqualTo(512L << 20));
    assertThat(Yaml.load("agent: {deadLetter: {maxBytes: 1KiB}}").deadLetterMaxBytes())
        .isEqualTo(1024);
    assertThat(Yaml.load("agent: {deadLetter: {maxBytes: 1000000}}").deadLetterMaxBytes())
        .isEqualTo(1_000_000);
    assertThat(Yaml.load("agent: {deadLetter: {maxBytes: 1024GiB}}").deadLetterMaxBytes())
        .isEqualTo(1L << 40);
    assertThat(Yaml.load("agent: {deadLetter: {maxBytes: none}}").deadLetterMaxBytes()).isZero();
    assertThat(Yaml.load("agent: {deadLetter: {maxBytes: ~}}").deadLetterMaxBytes()).isZero();
    // A version-1 file without the key means what it meant: no cap.
    assertThat(Yaml.load("agent: {deadLetter: {path: /d.jsonl}}").deadLetterMaxBytes()).isZero();
    assertThat(Yaml.load("agent: {deadLetter: {maxBytes: 2GiB}}"))
        .isNotEqualTo(Yaml.load("agent: {deadLetter: {maxBytes: 1GiB}}"));
  }

  @Test
  void substitutionCanTurnANullableKeyOff() throws Exception {
    AgentConfig c = Yaml.load("agent: {deadLetter: {path: '${DLQ:-}'}}");
    assertThat(c.deadLetterPath()).isNull();
  }

  @Test
  void aValueFromTheEnvironmentCannotInjectYamlStructure() throws Exception {
    List<ConfigProblem> problems =
        Yaml.problemsWithEnv(
            Map.of("N", "3\n    enabled: false"), "defaults:", "  retry:", "    maxAttempts: ${N}");
    assertThat(problems).hasSize(1);
    assertThat(problems.get(0).path()).isEqualTo("defaults.retry.maxAttempts");
    assertThat(problems.get(0).message()).startsWith("found \"3\\u000a    enabled: false\"");
  }
}
