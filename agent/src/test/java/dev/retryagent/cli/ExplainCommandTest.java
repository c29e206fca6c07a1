package dev.retryagent.cli;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retryagent.engine.GiveUpReason;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.EnumSet;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class ExplainCommandTest {
  @TempDir Path dir;
  private Path config;

  @BeforeEach
  void writeConfig() throws IOException {
    config = write("agent: { mode: enforce }\n");
  }

  private Path write(String agentSection) throws IOException {
    return Files.writeString(
        dir.resolve("config.yml"),
        agentSection
            + "routes:\n"
            + "  - name: payments\n"
            + "    match: { hosts: [pay.example.com], methods: [POST], paths: [/v1/charges/**] }\n"
            + "    retry: { maxAttempts: 5, unsafeMethods: if-idempotency-key }\n"
            + "    rateLimit: { enabled: true, perSecond: 20, burst: 5, maxWait: 250ms }\n"
            + "  - name: auth\n"
            + "    match: { hosts: [auth.internal] }\n"
            + "    retry: { enabled: false }\n"
            + "  - name: llm\n"
            + "    match: { hosts: [api.llm.example.com] }\n"
            + "    retry: { maxAttempts: 4, retryOn: { transport: [connect] } }\n"
            + "    circuitBreaker: { scope: route, window: { type: time, size: 1m } }\n");
  }

  /** An empty key is no key: the header is named as empty, not as the key it is not. */
  @Test
  void anEmptyKeyIsShownAsEmptyNotAsAKey() {
    CliRun r =
        CliRun.of(
            "explain",
            config.toString(),
            "POST",
            "https://pay.example.com/v1/charges/ch_1",
            "Idempotency-Key:");

    assertThat(r.exitCode).as(r.toString()).isZero();
    assertThat(r.verdict())
        .startsWith(
            "POST https://pay.example.com/v1/charges/ch_1 with Idempotency-Key (empty) -> route"
                + " payments;")
        .contains("POST without Idempotency-Key");
  }

  @Test
  void aKeyedPostToPaymentsIsRetriedOnEveryOutcome() {
    CliRun r =
        CliRun.of(
            "explain",
            config.toString(),
            "POST",
            "https://pay.example.com/v1/charges/ch_1",
            "Idempotency-Key:order-7");

    assertThat(r.exitCode).as(r.toString()).isZero();
    assertThat(r.verdict())
        .isEqualTo(
            "POST https://pay.example.com/v1/charges/ch_1 with Idempotency-Key -> route payments;"
                + " 503: retried (up to 5 attempts); reset: retried; connect failure: retried");
  }

  @Test
  void pathSegmentsTheConfigurationMasksAreMaskedAndNoQueryOrUserInfoIsShown() throws IOException {
    config = write("agent: { redact: { pathSegments: ['ch_[A-Za-z0-9]+'] } }\n");
    CliRun r =
        CliRun.of(
            "explain",
            config.toString(),
            "POST",
            "https://user:hunter2@pay.example.com/v1/charges/ch_9xYz?api_key=k3y#frag",
            "Idempotency-Key:order-7");

    assertThat(r.exitCode).as(r.toString()).isZero();
    assertThat(r.verdict())
        .startsWith(
            "POST https://pay.example.com/v1/charges/<redacted> with Idempotency-Key -> route"
                + " payments;");
    assertThat(r.out + r.err)
        .doesNotContain("ch_9xYz")
        .doesNotContain("hunter2")
        .doesNotContain("user")
        .doesNotContain("k3y")
        .doesNotContain("order-7")
        .doesNotContain("frag");
  }

  @Test
  void pathParametersAreNotPrintedAsNoLogLineOrDeadLetterPrintsThem() {
    // A servlet container's ;jsessionid=... is a session's credential (Sanitizer.path).
    CliRun r =
        CliRun.of(
            "explain",
            config.toString(),
            "POST",
            "https://pay.example.com/v1;jsessionid=canary-session/charges/ch_1;v=canary2");

    assertThat(r.exitCode).as(r.toString()).isZero();
    assertThat(r.out + r.err).doesNotContain("canary").doesNotContain("jsessionid");
    assertThat(r.verdict()).startsWith("POST https://pay.example.com/v1/charges/ch_1 -> ");
  }

  @ParameterizedTest
  @ValueSource(strings = {"https://u:12/ca?nary@h.example/x", "https://u:12/ca#nary@h.example/x"})
  void aPasswordWithASlashThenAQueryOrFragmentIsNotPrintedAsThePath(String url) {
    // Host u, port 12, path /ca: a reader taking the URL's last '@' reads 12/ca?nary as the
    // password, and explain printed https://u:12/ca.
    CliRun r = CliRun.of("explain", config.toString(), "GET", url);

    assertThat(r.exitCode).as(r.toString()).isZero();
    assertThat(r.out + r.err).doesNotContain("nary").doesNotContain("/ca");
    assertThat(r.verdict()).startsWith("GET https://u:12/<redacted> -> ");
  }

  @Test
  void aPostWithoutTheKeyIsRetriedOnlyWhenItWasNeverSent() {
    CliRun r =
        CliRun.of("explain", config.toString(), "post", "https://pay.example.com/v1/charges/ch_1");

    assertThat(r.verdict())
        .isEqualTo(
            "POST https://pay.example.com/v1/charges/ch_1 -> route payments;"
                + " 503: not retried (POST without Idempotency-Key);"
                + " reset: not retried (POST without Idempotency-Key);"
                + " connect failure: retried (up to 5 attempts)");
  }

  @Test
  void headerValuesAndTheQueryAreNeverPrinted() {
    CliRun r =
        CliRun.of(
            "explain",
            config.toString(),
            "POST",
            "https://user:pw@pay.example.com/v1/charges/ch_1?token=secret-query#frag",
            "Authorization:Bearer secret-token",
            "Cookie:session=secret-cookie",
            "Idempotency-Key:secret-key");

    assertThat(r.out + r.err).doesNotContain("secret").doesNotContain("pw@").doesNotContain("?");
    assertThat(r.verdict())
        .startsWith(
            "POST https://pay.example.com/v1/charges/ch_1 with Authorization, Cookie,"
                + " Idempotency-Key -> route payments;");
  }

  @Test
  void aRequestNoRouteClaimsGetsTheDefaults() {
    CliRun r = CliRun.of("explain", config.toString(), "GET", "http://other.example.com:8080/x");

    assertThat(r.verdict())
        .isEqualTo(
            "GET http://other.example.com:8080/x -> no route, defaults; 503: retried (up to 3"
                + " attempts); reset: retried; connect failure: retried");
    assertThat(r.out).contains("defaults (no route matched); mode enforce");
  }

  @Test
  void aRouteWithRetriesOffRetriesNothing() {
    CliRun r = CliRun.of("explain", config.toString(), "GET", "https://auth.internal/token");

    assertThat(r.verdict())
        .isEqualTo(
            "GET https://auth.internal/token -> route auth; 503: not retried (retry.enabled:"
                + " false); reset: not retried (retry.enabled: false); connect failure: not retried"
                + " (retry.enabled: false)");
    assertThat(r.out).contains("retry      off (retry.enabled: false)");
  }

  @Test
  void outcomesMissingFromRetryOnAreNamed() {
    CliRun r = CliRun.of("explain", config.toString(), "GET", "https://api.llm.example.com/v1");

    assertThat(r.verdict())
        .isEqualTo(
            "GET https://api.llm.example.com/v1 -> route llm; 503: retried (up to 4 attempts);"
                + " reset: not retried (reset is not in retryOn.transport); connect failure:"
                + " retried");
  }

  @Test
  void thePolicyBlockShowsEverySection() {
    CliRun r =
        CliRun.of("explain", config.toString(), "POST", "https://pay.example.com/v1/charges/x");

    assertThat(r.out)
        .contains(
            "route payments {hosts=[pay.example.com], methods=[POST], paths=[/v1/charges/**]};"
                + " mode enforce")
        .contains(
            "  retry      up to 5 attempts within a deadline of 30s; backoff 100ms x2.0 up to 5s,"
                + " jitter full")
        .contains("retryOn statuses 429, 502, 503, 504; transport connect, reset, timeout;")
        .contains("other methods: retried when never sent, or on any retryable outcome with the")
        .contains(
            "  budget     per host: retries may add 20% of the calls in 10s, and 10 per second")
        .contains(
            "  breaker    per host: opens at 50% failures over the last 50 calls (from 20 calls"
                + " on); open for 30s, then 5 trial calls")
        .contains(
            "  rateLimit  per host: 20.0 per second, burst 5, wait up to 250ms for a permit;");
  }

  @Test
  void aRetriedRequestNamesWhatEachRetryAlsoNeedsAtRunTime() {
    CliRun r = CliRun.of("explain", config.toString(), "GET", "https://x.example.com/");

    assertThat(r.out)
        .contains(
            "\n  each retry also needs: time left before the deadline, budget left for the host, a"
                + " breaker that is not open, and a Retry-After no longer than retryAfter.max\n");
  }

  @Test
  void nothingMoreIsNeededWhenNothingIsRetried() {
    CliRun r = CliRun.of("explain", config.toString(), "GET", "https://auth.internal/token");

    assertThat(r.out).doesNotContain("also needs");
  }

  @Test
  void aRuleTheLadderGainsLaterIsNamedToo() {
    assertThat(
            RetryVerdict.alsoNeeds(
                EnumSet.of(GiveUpReason.DEADLINE, GiveUpReason.BUDGET, GiveUpReason.RATE_LIMITED)))
        .isEqualTo("time left before the deadline, budget left for the host, and no rate-limited");
    assertThat(RetryVerdict.alsoNeeds(EnumSet.of(GiveUpReason.BUDGET)))
        .isEqualTo("budget left for the host");
  }

  @Test
  void aTimeWindowedRouteScopedBreakerIsDescribed() {
    CliRun r = CliRun.of("explain", config.toString(), "GET", "https://api.llm.example.com/v1");

    assertThat(r.out).contains("breaker    per route: opens at 50% failures over the last 1m");
    assertThat(r.out).contains("rateLimit  off");
  }

  @Test
  void observeModeSaysWhatWouldBeRetried() throws IOException {
    config = write("agent: { mode: observe }\n");

    CliRun r = CliRun.of("explain", config.toString(), "GET", "https://x.example.com/");

    assertThat(r.verdict())
        .contains("503: would be retried (up to 3 attempts) (mode observe: logged, not retried)");
  }

  @Test
  void modeOffRetriesNothing() throws IOException {
    config = write("agent: { mode: off }\n");

    CliRun r = CliRun.of("explain", config.toString(), "GET", "https://x.example.com/");

    assertThat(r.verdict()).contains("503: not retried (mode off: calls pass through)");
  }

  @Test
  void aMethodInLowerCaseIsExplainedInUpperCaseAndTheNoteSaysWhatTheMethodAsSentGets() {
    CliRun r = CliRun.of("explain", config.toString(), "get", "https://api.example.com/v1/items");

    assertThat(r.exitCode).as(r.toString()).isZero();
    assertThat(r.out.split("\\R"))
        .startsWith(
            "GET https://api.example.com/v1/items -> no route, defaults; 503: retried (up to 3"
                + " attempts); reset: retried; connect failure: retried",
            "note: get is explained as GET; a client that sends get sends another method (method"
                + " names are case-sensitive), not known to be idempotent; 503: not retried (get may"
                + " have reached the server; unsafeMethods: if-not-sent retries it only when it was"
                + " never sent); reset: not retried (get may have reached the server; unsafeMethods:"
                + " if-not-sent retries it only when it was never sent); connect failure: retried"
                + " (up to 3 attempts)",
            "");
    assertThat(CliRun.of("explain", config.toString(), "GET", "https://api.example.com/").out)
        .doesNotContain("note:");
  }

  @Test
  void aMethodTheConfigurationAcceptsCanBeExplained() throws IOException {
    Path dav =
        Files.writeString(
            dir.resolve("dav.yml"),
            "routes:\n"
                + "  - name: dav\n"
                + "    match: { methods: [VERSION-CONTROL, M_SEARCH2] }\n"
                + "    retry: { methods: [VERSION-CONTROL, M_SEARCH2] }\n");

    for (String method : new String[] {"VERSION-CONTROL", "m_search2"}) {
      CliRun r = CliRun.of("explain", dav.toString(), method, "https://dav.example.com/r");

      assertThat(r.exitCode).as(r.toString()).isZero();
      assertThat(r.verdict())
          .as(r.toString())
          .startsWith(method.toUpperCase(java.util.Locale.ROOT) + " https://dav.example.com/r")
          .contains("-> route dav; 503: retried");
    }
  }

  @Test
  void aRelativeUrlIsAUsageError() {
    CliRun r = CliRun.of("explain", config.toString(), "GET", "/v1/items");

    assertThat(r.exitCode).isEqualTo(2);
    assertThat(r.err).contains("URL must be absolute").contains("usage: explain");
  }

  @Test
  void aPortOutsideOneTo65535IsAUsageErrorNamingIt() {
    for (String port : new String[] {"0", "65536", "99999999999"}) {
      CliRun r =
          CliRun.of(
              "explain", config.toString(), "GET", "https://u:secret@x.example.com:" + port + "/");

      assertThat(r.exitCode).as(r.toString()).isEqualTo(2);
      assertThat(r.out).as(r.toString()).isEmpty();
      assertThat(r.err)
          .as(r.toString())
          .contains("URL port " + port + " is not 1..65535")
          .contains("usage: explain")
          .doesNotContain("secret");
    }
    CliRun host = CliRun.of("explain", config.toString(), "GET", "https://my_host:8080/");
    assertThat(host.err).as(host.toString()).contains("URL has no host").doesNotContain("port");
  }

  @Test
  void aHeaderWithoutAColonIsRefusedWithoutRepeatingIt() {
    CliRun r =
        CliRun.of(
            "explain", config.toString(), "GET", "https://x.example.com/", "Bearer-secret-token");

    assertThat(r.exitCode).isEqualTo(2);
    assertThat(r.err).contains("header argument 1 must be NAME:VALUE").doesNotContain("secret");
  }

  @Test
  void anInvalidConfigurationIsReportedAsByValidate() throws IOException {
    Path bad = Files.writeString(dir.resolve("bad.yml"), "routes: [ { name: x, retry: 3 } ]\n");

    CliRun r = CliRun.of("explain", bad.toString(), "GET", "https://x.example.com/");

    assertThat(r.exitCode).isEqualTo(1);
    assertThat(r.err).contains(bad + ":1:").contains("invalid, 1 problem");
  }

  @Test
  void aHostWithUserInfoInTheConfigurationIsReportedAsByValidate() throws IOException {
    Path bad =
        Files.writeString(
            dir.resolve("creds.yml"),
            "routes: [ { name: x, match: { hosts: ['user:pw-SECRET@x.example.com'] } } ]\n");

    CliRun r = CliRun.of("explain", bad.toString(), "GET", "https://x.example.com/");

    assertThat(r.exitCode).isEqualTo(1);
    assertThat(r.err)
        .contains(
            bad
                + ":1:39: routes[0].match.hosts[0]: found ***@x.example.com; allowed a host"
                + " without user-info")
        .doesNotContain("SECRET");
  }

  /**
   * A route name outside the earlier rule: the verdict and the route line quote it (";" in a name
   * would end the verdict), the fleet's Redis key holds it percent-encoded, as FleetRateLimiter's
   * keys do.
   */
  @Test
  void aRouteNameWithAColonIsQuotedAndItsFleetKeyEncoded() throws IOException {
    Path fleet =
        Files.writeString(
            dir.resolve("colon.yml"),
            "fleet:\n"
                + "  redis: { url: 'redis://cache.internal:6380' }\n"
                + "  keyPrefix: billing\n"
                + "routes:\n"
                + "  - name: 'openai:chat; v2'\n"
                + "    match: { hosts: [api.openai.com] }\n"
                + "    rateLimit: { enabled: true, scope: fleet, perSecond: 10, burst: 5 }\n");
    CliRun r = CliRun.of("explain", fleet.toString(), "GET", "https://api.openai.com/v1/models");

    assertThat(r.exitCode).as(r.toString()).isZero();
    assertThat(r.out)
        .contains(" -> route \"openai:chat; v2\"; ")
        .contains("route \"openai:chat; v2\" {hosts=[api.openai.com]")
        .contains("shared in redis://cache.internal:6380 under billing:openai%3Achat%3B%20v2;");
  }

  @Test
  void aFleetScopedRouteShowsTheFleetLimitAndWhereItIsSharedWithoutThePassword()
      throws IOException {
    Path fleet =
        Files.writeString(
            dir.resolve("fleet.yml"),
            "fleet:\n"
                + "  redis: { url: 'redis://app:hunter2@cache.internal:6380', commandTimeout: 40ms }\n"
                + "  keyPrefix: billing\n"
                + "  fallbackShare: 20%\n"
                + "routes:\n"
                + "  - name: llm\n"
                + "    match: { hosts: [api.openai.com] }\n"
                + "    rateLimit: { enabled: true, scope: fleet, perSecond: 10, burst: 5,"
                + " maxWait: 30s }\n");
    CliRun r = CliRun.of("explain", fleet.toString(), "POST", "https://api.openai.com/v1/chat");

    assertThat(r.exitCode).as(r.toString()).isZero();
    assertThat(r.out)
        .contains(
            "  rateLimit  fleet-wide (every JVM together): 10.0 per second, burst 5, wait up to"
                + " 30s for a permit; a 429 with Retry-After pauses the route in every JVM")
        .contains(
            "shared in redis://cache.internal:6380 under billing:llm; while Redis does not"
                + " answer within 40ms, this JVM keeps to 20% of it (2.0 per second)")
        .doesNotContain("hunter2")
        .doesNotContain("app:");
  }

  /**
   * A warning changes what a key does (here the first delay, capped at backoff.max): explain's
   * policy block is read with it, so explain prints it after the block as validate prints it.
   */
  @Test
  void theFilesWarningsFollowThePolicyAsValidatePrintsThem() throws IOException {
    config = write("defaults:\n  retry: { backoff: { initial: 10s } }\n");

    CliRun r = CliRun.of("explain", config.toString(), "GET", "https://auth.internal/x");
    CliRun validate = CliRun.of("validate", config.toString());

    assertThat(r.exitCode).as(r.toString()).isZero();
    String warnings = validate.out.substring(validate.out.indexOf("; 1 warning"));
    assertThat(r.out)
        .endsWith("\n\n" + config + ": valid" + warnings)
        .contains(
            "  warning: "
                + config
                + ":2:32: defaults.retry.backoff.initial: found 10s; above retry.backoff.max");
    assertThat(r.err).isEmpty();
  }

  @Test
  void aFileWithoutWarningsEndsWithThePolicy() {
    CliRun r = CliRun.of("explain", config.toString(), "GET", "https://auth.internal/x");

    assertThat(r.exitCode).as(r.toString()).isZero();
    assertThat(r.out).doesNotContain("warning");
  }
}
