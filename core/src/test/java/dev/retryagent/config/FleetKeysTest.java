package dev.retryagent.config;

import static dev.retryagent.config.Yaml.load;
import static dev.retryagent.config.Yaml.loadWithEnv;
import static dev.retryagent.config.Yaml.problem;
import static dev.retryagent.config.Yaml.problems;
import static dev.retryagent.config.Yaml.problemsWithEnv;
import static org.assertj.core.api.Assertions.assertThat;

import dev.retryagent.policy.Policy;
import dev.retryagent.policy.RateLimitPolicy;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The {@code fleet} section and {@code rateLimit.scope}: values, defaults, errors, secrets. */
class FleetKeysTest {

  @Test
  void noFleetSectionMeansNoFleetAndHostScope() throws Exception {
    AgentConfig c = load("defaults: {rateLimit: {enabled: true}}");
    assertThat(c.fleet()).isNull();
    assertThat(c.defaultPolicy().rateLimit().scope()).isEqualTo(RateLimitPolicy.Scope.HOST);
    assertThat(AgentConfig.defaults().fleet()).isNull();
  }

  @Test
  void theIssuesExampleLoadsWithItsValuesAndDefaults() throws Exception {
    AgentConfig c =
        load(
            "fleet:",
            "  redis:",
            "    url: redis://127.0.0.1:6379",
            "  keyPrefix: my-service",
            "routes:",
            "  - name: llm",
            "    match: { hosts: [\"api.openai.com\"] }",
            "    rateLimit: { enabled: true, scope: fleet, perSecond: 10, burst: 5, maxWait: 30s,"
                + " pauseOn429: true }");
    FleetConfig f = c.fleet();
    assertThat(f.redis().host()).isEqualTo("127.0.0.1");
    assertThat(f.redis().port()).isEqualTo(6379);
    assertThat(f.connectTimeout()).isEqualTo(Duration.ofMillis(200));
    assertThat(f.commandTimeout()).isEqualTo(Duration.ofMillis(50));
    assertThat(f.keyPrefix()).isEqualTo("my-service");
    assertThat(f.fallbackShare()).isEqualTo(0.25);
    Policy llm = c.resolve("POST", "api.openai.com", 443, "/v1/chat");
    assertThat(llm.rateLimit().scope()).isEqualTo(RateLimitPolicy.Scope.FLEET);
    assertThat(llm.rateLimit().perSecond()).isEqualTo(10.0);
    assertThat(c.defaultPolicy().rateLimit().scope()).isEqualTo(RateLimitPolicy.Scope.HOST);
  }

  @Test
  void everyKeyIsRead() throws Exception {
    FleetConfig f =
        load(
                "fleet:",
                "  redis: { url: 'rediss://app:s3cret@cache.internal:6380/2',"
                    + " connectTimeout: 1s, commandTimeout: 20ms }",
                "  keyPrefix: 'svc:eu-1'",
                "  fallbackShare: 10%")
            .fleet();
    assertThat(f.redis().tls()).isTrue();
    assertThat(f.redis().user()).isEqualTo("app");
    assertThat(f.redis().password()).isEqualTo("s3cret");
    assertThat(f.redis().database()).isEqualTo(2);
    assertThat(f.connectTimeout()).isEqualTo(Duration.ofSeconds(1));
    assertThat(f.commandTimeout()).isEqualTo(Duration.ofMillis(20));
    assertThat(f.keyPrefix()).isEqualTo("svc:eu-1");
    assertThat(f.fallbackShare()).isEqualTo(0.1);
  }

  @Test
  void thePasswordMayComeFromTheEnvironmentAndIsNeverShown() throws Exception {
    AgentConfig c =
        loadWithEnv(
            Map.of("REDIS_PASSWORD", "p@ss:word"),
            "fleet: { redis: { url: 'redis://:${REDIS_PASSWORD}@10.0.0.7' } }");
    assertThat(c.fleet().redis().password()).isEqualTo("p@ss:word");
    assertThat(c.toString()).contains("redis://10.0.0.7:6379 (with password)");
    assertThat(c.toString()).doesNotContain("p@ss").doesNotContain("ss:word");
  }

  @Test
  void scopeFleetWithoutAFleetSectionIsAnErrorWhereItIsWritten() {
    ConfigProblem p =
        problem(
            "routes:",
            "  - name: llm",
            "    match: { hosts: [api.openai.com] }",
            "    rateLimit: { enabled: true, scope: fleet }");
    assertThat(p.path()).isEqualTo("routes[0].rateLimit.scope");
    assertThat(p.line()).isEqualTo(4);
    assertThat(p.column()).isEqualTo(40);
    assertThat(p.message())
        .startsWith("found fleet, but the file has no fleet section with fleet.redis.url");
  }

  @Test
  void scopeFleetInDefaultsIsReportedOnceNotPerRoute() {
    List<ConfigProblem> ps =
        problems(
            "fleet: { keyPrefix: x }",
            "defaults: { rateLimit: { scope: fleet } }",
            "routes:",
            "  - { name: a, match: { hosts: [a] } }",
            "  - { name: b, match: { hosts: [b] } }");
    assertThat(ps).extracting(ConfigProblem::path).containsExactly("defaults.rateLimit.scope");
  }

  @Test
  void aUrlThatIsNotRedisIsAProblemThatNeverShowsTheUserInfo() {
    ConfigProblem p = problem("fleet: { redis: { url: 'http://admin:hunter2@cache:6379' } }");
    assertThat(p.path()).isEqualTo("fleet.redis.url");
    assertThat(p.message())
        .contains("found http://***@cache:6379;")
        .contains("must start with redis:// or rediss://")
        .doesNotContain("hunter2")
        .doesNotContain("admin");
    ConfigProblem port = problem("fleet: { redis: { url: 'redis://:hunter2@cache:99999' } }");
    assertThat(port.message()).contains("invalid port").doesNotContain("hunter2");
  }

  @Test
  void aValueThatIsNoUrlIsNeverShownItMayBeThePassword() {
    // url: ${REDIS_PASSWORD} where ${REDIS_URL} was meant: the problem printed the password.
    ConfigProblem fromEnv =
        Yaml.problemWithEnv(
            Map.of("REDIS_PASSWORD", "hunter2"), "fleet: { redis: { url: '${REDIS_PASSWORD}' } }");
    assertThat(fromEnv.message())
        .isEqualTo(
            "found *** (from ${REDIS_PASSWORD}); fleet.redis.url must start with redis:// or"
                + " rediss://; allowed a URL redis://[[user]:password@]host[:port][/database]"
                + " (rediss:// for TLS), or none");
    assertThat(problem("fleet: { redis: { url: hunter2 } }").message())
        .startsWith("found ***; fleet.redis.url must start with redis:// or rediss://")
        .doesNotContain("hunter2");
  }

  @Test
  void aPasswordInTheQueryOfARefusedUrlIsNeverShown() {
    // Other Redis clients take redis://host?password=...; this one refuses a query, and its
    // problem (start-up, every reload, validate) must not print the password it refuses.
    for (String url :
        List.of(
            "redis://cache:6379?password=hunter2",
            "redis://admin@cache:6379/0?password=hunter2&timeout=1",
            "redis://cache:6379#hunter2")) {
      ConfigProblem p = problem("fleet: { redis: { url: '" + url + "' } }");
      assertThat(p.message())
          .as(url)
          .contains("takes no query or fragment")
          .contains("redis://")
          .contains("cache:6379")
          .doesNotContain("hunter2")
          .doesNotContain("admin");
      // The same URL written as fleet.redis, where a map belongs: shown by the general rule.
      ConfigProblem slip = problem("fleet: { redis: '" + url + "' }");
      assertThat(slip.message()).as(url).contains("cache:6379").doesNotContain("hunter2");
    }
  }

  @Test
  void aFallbackWrittenTheSpringWayInTheUrlIsNeverShown() {
    // ${NAME:default} is Spring's placeholder syntax, an easy slip for ${NAME:-default}; the hint
    // must not print the default password it holds.
    ConfigProblem p =
        problem("fleet: { redis: { url: 'redis://:${REDIS_PASSWORD:hunter2}@cache:6379' } }");
    assertThat(p.path()).isEqualTo("fleet.redis.url");
    assertThat(p.message())
        .contains("for a fallback write ${REDIS_PASSWORD:-")
        .doesNotContain("hunter2");
  }

  @Test
  void aRedisUrlWrittenWhereAMapOrAnotherValueBelongsNeverShowsItsPassword() {
    // fleet.redis: URL (for fleet.redis.url) is an easy slip; its problem is printed at start-up,
    // on every reload and by validate.
    String longPassword = "0123456789abcdef0123456789abcdef0123456789abcdef";
    for (String yaml :
        List.of(
            "fleet: { redis: 'redis://:hunter2@cache:6379' }",
            "fleet: 'redis://admin:hunter2@cache:6379'",
            "fleet: { redis: { url: 'redis://cache:6379', connectTimeout: 'redis://:hunter2@c' } }",
            "fleet: { redis: 'redis://default:" + longPassword + "@cache.internal:6379' }")) {
      ConfigProblem p = problem(yaml);
      assertThat(p.message())
          .as(yaml)
          .contains("***@c")
          .doesNotContain("hunter2")
          .doesNotContain("admin")
          .doesNotContain("0123456789");
    }
  }

  @Test
  void aSubstitutedUrlIsShownRedactedTogetherWithWhereItCameFrom() {
    List<ConfigProblem> ps =
        problemsWithEnv(
            Map.of("URL", "redis://:hunter2@cache:0"), "fleet: { redis: { url: '${URL}' } }");
    assertThat(ps).hasSize(1);
    assertThat(ps.get(0).message())
        .contains("redis://***@cache:0")
        .contains("(from ${URL})")
        .doesNotContain("hunter2");
  }

  @Test
  void boundsOfTheTimeoutsTheShareAndThePrefix() {
    assertThat(problem("fleet: { redis: { connectTimeout: 0s } }").message())
        .contains("above 0 up to 1m");
    assertThat(problem("fleet: { redis: { commandTimeout: 11s } }").message())
        .contains("above 0 up to 10s");
    assertThat(problem("fleet: { fallbackShare: 0% }").message()).contains("above 0% up to 100%");
    assertThat(problem("fleet: { keyPrefix: 'a b' }").path()).isEqualTo("fleet.keyPrefix");
  }

  @Test
  void equalityFollowsTheSettingsAndTheCredentials() throws Exception {
    AgentConfig a = load("fleet: { redis: { url: 'redis://:one@h' } }");
    AgentConfig b = load("fleet: { redis: { url: 'redis://:two@h' } }");
    AgentConfig a2 = load("fleet: { redis: { url: 'redis://:one@h:6379' } }");
    assertThat(a).isNotEqualTo(b).isEqualTo(a2);
    assertThat(a.fleet().toString()).isEqualTo(b.fleet().toString());
  }
}
