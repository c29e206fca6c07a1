package dev.retryagent.config;

import static dev.retryagent.config.Yaml.problem;
import static dev.retryagent.config.Yaml.problems;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.tuple;

import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** Each kind of mistake is reported with its line, column, key path and what is allowed. */
class ConfigProblemsTest {

  @Test
  void reportsEveryProblemOfAFileAtOnceInFileOrder() {
    List<ConfigProblem> all =
        problems(
            "version: 2",
            "agent:",
            "  mode: bogus",
            "defaults:",
            "  retry:",
            "    maxAttempts: 0",
            "    backoff: {initial: 5}",
            "  retyr: {}",
            "routes:",
            "  - name: a",
            "    retry: {deadline: 1s, maxAttempts: 11}");
    assertThat(all)
        .extracting(ConfigProblem::line, ConfigProblem::column, ConfigProblem::path)
        .containsExactly(
            tuple(1, 10, "version"),
            tuple(3, 9, "agent.mode"),
            tuple(6, 18, "defaults.retry.maxAttempts"),
            tuple(7, 24, "defaults.retry.backoff.initial"),
            tuple(8, 3, "defaults.retyr"),
            tuple(11, 40, "routes[0].retry.maxAttempts"));
    assertThat(all).allSatisfy(p -> assertThat(p.source()).isEqualTo(Yaml.SOURCE));
  }

  @Test
  void formatsAProblemAsSourceLineColumnPathMessage() {
    ConfigProblem p = problem("routes:", "  - name: x", "    retry: {maxAttempts: 0}");
    assertThat(p).hasToString("test.yml:3:26: routes[0].retry.maxAttempts: found 0; allowed 1..10");
  }

  @Test
  void theExceptionMessageHasOneLinePerProblem() {
    assertThatThrownBy(() -> Yaml.load("version: 3", "agent: {mode: x, strict: maybe}"))
        .isInstanceOf(ConfigException.class)
        .hasMessage(
            "test.yml:1:10: version: found 3; allowed only 1\n"
                + "test.yml:2:15: agent.mode: found x; allowed one of enforce, observe, off\n"
                + "test.yml:2:26: agent.strict: found maybe; allowed true or false");
  }

  @Test
  void suggestsTheNearestKeyForATypo() {
    ConfigProblem p = problem("defaults:", "  retyr: {}");
    assertThat(p.path()).isEqualTo("defaults.retyr");
    assertThat(p.line()).isEqualTo(2);
    assertThat(p.column()).isEqualTo(3);
    assertThat(p.message())
        .isEqualTo(
            "unknown key retyr; did you mean `retry`? (allowed here: retry, budget,"
                + " circuitBreaker, rateLimit)");
  }

  @Test
  void suggestsTheKeyInAnotherCaseOrSpelling() {
    assertThat(problem("defaults: {retry: {maxattempts: 2}}").message())
        .contains("did you mean `maxAttempts`?");
    assertThat(problem("agent: {clients: {jdkHttp: false}}").message())
        .contains("did you mean `jdk-http`?");
    assertThat(problem("defaults: {circuitBreaker: {failure_rate_threshold: 50%}}").message())
        .contains("did you mean `failureRateThreshold`?");
  }

  @Test
  void suggestsTheSectionAKeyBelongsIn() {
    assertThat(problem("defaults: {maxAttempts: 2}").message())
        .startsWith("unknown key maxAttempts; did you mean `retry.maxAttempts`?");
    assertThat(problem("retry: {maxAttempts: 2}").message())
        .startsWith("unknown key retry; did you mean `defaults.retry`?");
    assertThat(problem("routes: [{name: x, hosts: [a.com]}]").message())
        .startsWith("unknown key hosts; did you mean `match.hosts`?");
  }

  @Test
  void saysNothingMisleadingForAKeyFarFromAnyKnownOne() {
    assertThat(problem("defaults: {retry: {zzzzzz: 1}}").message())
        .startsWith("unknown key zzzzzz (allowed here: enabled, maxAttempts,");
  }

  @Test
  void reportsAMapWhereAValueBelongs() {
    ConfigProblem p = problem("defaults: {retry: {maxAttempts: {a: 1}}}");
    assertThat(p.path()).isEqualTo("defaults.retry.maxAttempts");
    assertThat(p.message()).isEqualTo("found a map; allowed 1..10");
  }

  @Test
  void reportsAListWhereAMapBelongs() {
    assertThat(problem("defaults: {retry: [1, 2]}").message())
        .startsWith("found a list; allowed a map with the keys enabled, maxAttempts, backoff,");
    assertThat(problem("agent: true").message()).startsWith("found true; allowed a map with");
  }

  @Test
  void reportsAScalarWhereAListBelongsWithAHint() {
    ConfigProblem p = problem("routes: [{name: x, match: {methods: POST}}]");
    assertThat(p.path()).isEqualTo("routes[0].match.methods");
    assertThat(p.message())
        .isEqualTo(
            "found POST; allowed a list, each item an HTTP method such as GET or POST (for one"
                + " item write [POST])");
  }

  @Test
  void reportsAListItemThatIsNotAScalarWithItsIndex() {
    assertThat(problems("defaults: {retry: {retryOn: {statuses: [503, [504], null]}}}"))
        .extracting(ConfigProblem::path)
        .containsExactly(
            "defaults.retry.retryOn.statuses[1]", "defaults.retry.retryOn.statuses[2]");
  }

  @Test
  void reportsRoutesThatAreNotAList() {
    assertThat(problem("routes: {name: x}").message())
        .startsWith("found a map; allowed a list of routes, each a map with the keys name, match,");
    assertThat(problem("routes: [~]").path()).isEqualTo("routes[0]");
  }

  @Test
  void reportsAFileThatIsNotAMap() {
    ConfigProblem p = problem("- a", "- b");
    assertThat(p.line()).isEqualTo(1);
    assertThat(p.path()).isEmpty();
    assertThat(p.message()).startsWith("found a list; allowed a map with the keys version, agent,");
    assertThat(problem("just text").message()).startsWith("found \"just text\"; allowed a map");
  }

  @Test
  void listsTheAllowedValuesOfAnEnumAndSuggestsTheNearest() {
    assertThat(problem("defaults: {retry: {backoff: {jitter: ful}}}").message())
        .isEqualTo(
            "found ful; did you mean full? allowed one of none, full, equal, decorrelated,"
                + " proportional");
    assertThat(problem("defaults: {retry: {unsafeMethods: sometimes}}").message())
        .isEqualTo(
            "found sometimes; allowed one of never, if-not-sent, if-idempotency-key, always");
    assertThat(problem("defaults: {circuitBreaker: {scope: hosts}}").message())
        .contains("did you mean host?");
    assertThat(problem("defaults: {retry: {retryOn: {transport: [connect, dns]}}}"))
        .satisfies(
            p -> {
              assertThat(p.path()).isEqualTo("defaults.retry.retryOn.transport[1]");
              assertThat(p.message())
                  .isEqualTo("found dns; allowed one of connect, reset, timeout");
            });
  }

  @Test
  void reportsNumbersOutOfRange() {
    assertThat(problem("defaults: {retry: {maxAttempts: 11}}").message())
        .isEqualTo("found 11; allowed 1..10");
    assertThat(problem("defaults: {retry: {maxAttempts: 3.5}}").message())
        .isEqualTo("found 3.5; allowed 1..10");
    assertThat(problem("defaults: {retry: {backoff: {multiplier: 0.5}}}").message())
        .isEqualTo("found 0.5; allowed a number 1..100");
    assertThat(problem("defaults: {rateLimit: {perSecond: 0}}").message())
        .isEqualTo("found 0; allowed a number above 0 up to 1000000000");
    assertThat(problem("agent: {metrics: {prometheus: {port: 70000}}}").message())
        .isEqualTo("found 70000; allowed 1..65535");
    assertThat(problem("defaults: {budget: {minPerSecond: -1}}").message())
        .isEqualTo("found -1; allowed 0..1000000");
  }

  @Test
  void reportsABareNumberWhereADurationBelongsWithAUnitSuggestion() {
    ConfigProblem p = problem("defaults:", "  retry:", "    deadline: 30");
    assertThat(p.line()).isEqualTo(3);
    assertThat(p.column()).isEqualTo(15);
    assertThat(p.path()).isEqualTo("defaults.retry.deadline");
    assertThat(p.message())
        .isEqualTo("found 30; a duration needs a unit: did you mean 30s or 30ms?");
  }

  @Test
  void reportsDurationsOutOfRange() {
    assertThat(problem("defaults: {retry: {deadline: 0s}}").message())
        .isEqualTo("found 0s; allowed a duration above 0 up to 1d, such as 250ms, 2s, 1m or PT2S");
    assertThat(problem("defaults: {budget: {window: 2h}}").message())
        .isEqualTo("found 2h; allowed a duration 1ms..1h, such as 250ms, 2s, 1m or PT2S");
    assertThat(problem("defaults: {retry: {deadline: none}}").message())
        .startsWith("found none; allowed a duration");
  }

  @Test
  void reportsNullWhereNoneIsNotAllowed() {
    assertThat(problem("defaults: {retry: {deadline: }}").message())
        .isEqualTo(
            "found nothing (null); allowed a duration above 0 up to 1d, such as 250ms, 2s, 1m or"
                + " PT2S");
    assertThat(problem("defaults: {retry: {perAttemptTimeout: 1x}}").message())
        .endsWith(", or none");
  }

  @Test
  void reportsBadRatiosAndSizes() {
    assertThat(problem("defaults: {circuitBreaker: {failureRateThreshold: 150%}}").message())
        .isEqualTo("found 150%; allowed a ratio above 0% up to 100%, written like 50% or 0.5");
    assertThat(problem("defaults: {circuitBreaker: {failureRateThreshold: 0}}").message())
        .startsWith("found 0; allowed a ratio above 0%");
    assertThat(problem("defaults: {budget: {ratio: lots}}").message())
        .isEqualTo("found lots; allowed a ratio 0%..1000%, written like 50% or 0.5");
    assertThat(problem("defaults: {retry: {replayBodyLimit: 64KB}}").message())
        .isEqualTo(
            "found 64KB; the unit KB is ambiguous (1000 or 1024?): write 64KiB for multiples of"
                + " 1024, or the number of bytes");
    assertThat(problem("defaults: {retry: {replayBodyLimit: 2GiB}}").message())
        .isEqualTo("found 2GiB; allowed a size up to 1GiB, such as 512, 64KiB or 1MiB");
  }

  @Test
  void reportsABadDeadLetterCapWithWhereAndWhatIsAllowed() {
    String allowed = "allowed a size 1KiB..1024GiB, such as 512, 64KiB or 1MiB, or none";
    assertThat(problem("agent:", "  deadLetter: {path: /d.jsonl, maxBytes: 100}"))
        .hasToString("test.yml:2:42: agent.deadLetter.maxBytes: found 100; " + allowed);
    assertThat(problem("agent: {deadLetter: {maxBytes: 0}}").message())
        .isEqualTo("found 0; " + allowed);
    assertThat(problem("agent: {deadLetter: {maxBytes: 2048GiB}}").message())
        .isEqualTo("found 2048GiB; " + allowed);
    assertThat(problem("agent: {deadLetter: {maxBytes: -1MiB}}").message())
        .isEqualTo("found -1MiB; " + allowed);
    assertThat(problem("agent: {deadLetter: {maxBytes: 500MB}}").message())
        .isEqualTo(
            "found 500MB; the unit MB is ambiguous (1000 or 1024?): write 500MiB for multiples of"
                + " 1024, or the number of bytes, or none");
    assertThat(problem("agent: {deadLetter: {maxBytes: lots}}").message())
        .startsWith("found lots; allowed ");
    assertThat(problem("agent: {deadLetter: {maxByte: 1MiB}}").message())
        .isEqualTo("unknown key maxByte; did you mean `maxBytes`? (allowed here: path, maxBytes)");
  }

  @Test
  void aDurationBeyondWhatAnyKeyTakesIsGivenTheKeysOwnRange() {
    // The parser stops at 10000d; the message named that cap, which no key allows.
    assertThat(problem("defaults: {retry: {deadline: 999999999999d}}").message())
        .isEqualTo(
            "found 999999999999d; allowed a duration above 0 up to 1d, such as 250ms, 2s, 1m or"
                + " PT2S");
    assertThat(problem("defaults: {retry: {backoff: {max: P99999999D}}}").message())
        .isEqualTo("found P99999999D; allowed a duration 0s..1h, such as 250ms, 2s, 1m or PT2S");
    assertThat(problem("defaults: {retry: {perAttemptTimeout: 99999999999h}}").message())
        .isEqualTo(
            "found 99999999999h; allowed a duration above 0 up to 1d, such as 250ms, 2s, 1m or"
                + " PT2S, or none");
  }

  @Test
  void reportsBadStatusTokensWithTheirIndex() {
    assertThat(problems("defaults: {circuitBreaker: {failOn: {statuses: [5xx, 600-500, 42]}}}"))
        .extracting(ConfigProblem::path, ConfigProblem::message)
        .containsExactly(
            tuple(
                "defaults.circuitBreaker.failOn.statuses[1]",
                "found 600-500; allowed a status code (503), class (5xx) or range (500-599) within"
                    + " 100..999"),
            tuple(
                "defaults.circuitBreaker.failOn.statuses[2]",
                "found 42; allowed a status code (503), class (5xx) or range (500-599) within"
                    + " 100..999"));
  }

  @Test
  void reportsBadHostGlobsPortsAndMethods() {
    List<ConfigProblem> all =
        problems(
            "routes:",
            "  - name: x",
            "    match:",
            "      hosts: ['a.com:99999', 'https://b.com', 'c.com']",
            "      methods: [GET, 'NOT A METHOD']",
            "      paths: [v1/x]");
    assertThat(all)
        .extracting(ConfigProblem::path, ConfigProblem::message)
        .containsExactly(
            tuple(
                "routes[0].match.hosts[0]",
                "found a.com:99999; allowed a port 1..65535 after the colon, or none"),
            tuple(
                "routes[0].match.hosts[1]",
                "found https://b.com; allowed a host without a scheme: write b.com and put paths"
                    + " in match.paths"),
            tuple(
                "routes[0].match.methods[1]",
                "found \"NOT A METHOD\"; allowed an HTTP method such as GET or POST"),
            tuple(
                "routes[0].match.paths[0]",
                "found v1/x; allowed a path glob such as /v1/charges/**, /v1/*/refunds or /health"
                    + " (starting with /)"));
  }

  @Test
  void aHostWithUserInfoIsReportedAtItsKeyAsUserInfoAndThePasswordIsNeverShown() {
    List<ConfigProblem> all =
        problems(
            "routes:",
            "  - name: x",
            "    match:",
            "      hosts: ['user:pw-SECRET@api.example.com', 'user@api.example.com',"
                + " 'user:pw-SECRET@host:*']",
            "  - name: y",
            "    match: {hosts: ['https://user:pw-SECRET@b.example.com']}");
    String why =
        "allowed a host without user-info (user@ or user:password@): a route matches hosts,"
            + " never credentials; write ";
    assertThat(all)
        .extracting(ConfigProblem::path, ConfigProblem::message)
        .containsExactly(
            tuple(
                "routes[0].match.hosts[0]",
                "found ***@api.example.com; " + why + "api.example.com"),
            tuple(
                "routes[0].match.hosts[1]",
                "found ***@api.example.com; " + why + "api.example.com"),
            tuple("routes[0].match.hosts[2]", "found ***@host:*; " + why + "host:*"),
            tuple(
                "routes[1].match.hosts[0]",
                "found https://***@b.example.com; allowed a host without a scheme or user-info:"
                    + " write b.example.com and put paths in match.paths"));
    assertThat(all).allSatisfy(p -> assertThat(p.toString()).doesNotContain("SECRET"));
  }

  /**
   * {@code user:password} written for a host, its {@code @host} left out (an empty variable, say):
   * the password stands where the port would, and is not repeated.
   */
  @Test
  void aHostWhosePortIsNoPortIsShownWithoutIt() {
    assertThat(
            problems(
                "routes:", "  - name: x", "    match: {hosts: ['svc:pw-SECRET', 'a.com:99999']}"))
        .extracting(ConfigProblem::toString)
        .containsExactly(
            "test.yml:3:21: routes[0].match.hosts[0]: found svc:***; allowed a port 1..65535"
                + " after the colon, or none",
            "test.yml:3:38: routes[0].match.hosts[1]: found a.com:99999; allowed a port 1..65535"
                + " after the colon, or none");
    assertThat(ConfigProblem.shownHost("a.com:*")).isEqualTo("a.com:*");
    assertThat(ConfigProblem.shownHost("fe80::1:zz")).isEqualTo("fe80::1:zz");
  }

  @Test
  void hostsAndPathsAreShownWithoutUserInfoOrQuery() {
    assertThat(ConfigProblem.shownHost("user:p@ss@host")).isEqualTo("***@host");
    assertThat(ConfigProblem.shownHost("https://user:p@ss@h/x")).isEqualTo("https://***@h/x");
    assertThat(ConfigProblem.shownHost("api.example.com")).isEqualTo("api.example.com");
    assertThat(ConfigProblem.shownPath("/v1/x?token=t#f")).isEqualTo("\"/v1/x?***\"");
    assertThat(ConfigProblem.shownPath("/v1/x#f?q")).isEqualTo("\"/v1/x#***\"");
    assertThat(ConfigProblem.shownPath("/up?")).isEqualTo("\"/up?\"");
    assertThat(ConfigProblem.shownPath("/v1/x")).isEqualTo("/v1/x");
  }

  @Test
  void aUrlWrittenAsAKeyIsShownWithoutItsUserInfoOrQueryInTheKeyPathToo() {
    // A Redis URL where its key belongs (a ':' too many): the key is the path's last part, and
    // problems are logged at start-up, on reload and by validate.
    List<ConfigProblem> all =
        problems("fleet:", "  redis://u:SECRET@cache:6379: 1", "redis://cache?password=SECRET: 1");

    assertThat(all).hasSize(2);
    assertThat(all.toString()).doesNotContain("SECRET");
    assertThat(all.get(0).path()).isEqualTo("fleet.redis://***@cache:6379");
    assertThat(all.get(1).path()).isEqualTo("redis://cache?***");
  }

  @Test
  void aBindHostWithUserInfoIsReportedWithoutIt() {
    // A host copied from a URL may carry a password; problems are logged.
    ConfigProblem p = problem("agent: {metrics: {prometheus: {host: 'ops:SECRET@0.0.0.0'}}}");
    assertThat(p.path()).isEqualTo("agent.metrics.prometheus.host");
    assertThat(p.message())
        .isEqualTo(
            "found ***@0.0.0.0; allowed a host name or IP address such as 127.0.0.1 or 0.0.0.0");
  }

  @Test
  void aBindHostWithAPortIsRefusedAndIpv6LiteralsStillLoad() throws Exception {
    // Found by h7: `127.0.0.1:9000` passed as an IPv6 literal, `validate` said valid, and the
    // endpoint then failed at run time (cannot serve on [127.0.0.1:9000]:9464).
    for (String host : new String[] {"127.0.0.1:9000", "0.0.0.0:9464"}) {
      ConfigProblem p = problem("agent: {metrics: {prometheus: {host: '" + host + "'}}}");
      assertThat(p.path()).isEqualTo("agent.metrics.prometheus.host");
      assertThat(p.message())
          .isEqualTo(
              "found " + host + "; allowed a host name or IP address such as 127.0.0.1 or 0.0.0.0");
    }
    for (String host : new String[] {"::1", "[::1]", "::ffff:10.0.0.1", "0.0.0.0", "localhost"}) {
      assertThat(Yaml.load("agent: {metrics: {prometheus: {host: '" + host + "'}}}")).isNotNull();
    }
  }

  @Test
  void aBindHostThatCannotBeBoundIsRefusedAndEveryAddressFormStillLoads() throws Exception {
    // Each passed `validate` and then failed at run time: no IPv4 address has a byte above 255, no
    // host name label starts with '-', and an IPv6 literal's brackets come in pairs.
    for (String host :
        new String[] {"999.1.1.1", "1.2.3.256", "-bad", "bad-", "a..b", "[::1", "::1]"}) {
      ConfigProblem p = problem("agent: {metrics: {prometheus: {host: '" + host + "'}}}");
      assertThat(p.path()).as(host).isEqualTo("agent.metrics.prometheus.host");
      assertThat(p.message())
          .as(host)
          .isEqualTo(
              "found " + host + "; allowed a host name or IP address such as 127.0.0.1 or 0.0.0.0");
    }
    for (String host :
        new String[] {
          "localhost",
          "localhost.",
          "metrics-1.internal.example",
          "my_host",
          "10.0.0.1",
          "0.0.0.0",
          "255.255.255.255",
          "::",
          "[::]",
          "::1",
          "[::1]",
          "fe80::1%1",
          "2001:db8::8a2e:370:7334",
          "::ffff:10.0.0.1",
          "0x7f.example"
        }) {
      assertThat(Yaml.load("agent: {metrics: {prometheus: {host: '" + host + "'}}}"))
          .as(host)
          .isNotNull();
    }
  }

  @Test
  void aRefusedDeadLetterPathIsReportedWithoutAPasswordAsEveryLineShowsThePath() {
    // A problem about the path (a NUL, say) quoted it through the generic redaction, which shows
    // a scheme-less user:password@host and a URL's password of digits that the lines hide.
    String[][] cases = {
      // (its NUL, not an authority's, takes the "URL" host://dlq... along: the safe side)
      {"u:CANARY7z@host:/dlq", "***@host://***"},
      {"/data/u:CANARY7z@host/dlq", "/data/***@host/dlq"},
      {"https://u:73519/", "https://***"},
    };
    for (String[] c : cases) {
      ConfigProblem p = problem("agent: {deadLetter: {path: \"" + c[0] + "\\0x\"}}");
      assertThat(p.path()).isEqualTo("agent.deadLetter.path");
      assertThat(p.message())
          .as(c[0])
          .contains(c[1])
          .doesNotContain("CANARY7z")
          .doesNotContain("73519");
    }
  }

  @Test
  void aPathWithAQueryIsReportedWithoutTheQuery() {
    // A path pasted from a URL brings its query, a token as often as not; problems are logged.
    List<ConfigProblem> all =
        problems(
            "routes:",
            "  - name: x",
            "    match: {paths: ['/v1/charges?token=SECRET', '/v1/x#SECRET', 'v1/y?k=SECRET']}");
    assertThat(all)
        .extracting(ConfigProblem::path, ConfigProblem::message)
        .containsExactly(
            tuple(
                "routes[0].match.paths[0]",
                "found \"/v1/charges?***\"; allowed a path glob such as /v1/charges/**, /v1/*/refunds"
                    + " or /health (paths are matched without the query string)"),
            tuple(
                "routes[0].match.paths[1]",
                "found \"/v1/x#***\"; allowed a path glob such as /v1/charges/**, /v1/*/refunds"
                    + " or /health (paths are matched without the query string)"),
            tuple(
                "routes[0].match.paths[2]",
                "found \"v1/y?***\"; allowed a path glob such as /v1/charges/**, /v1/*/refunds or"
                    + " /health (starting with /)"));
  }

  @Test
  void aHostWithUserInfoFromTheEnvironmentIsNotShownEither() {
    ConfigProblem p =
        Yaml.problemWithEnv(
            Map.of("API_HOST", "user:pw-SECRET@api.example.com"),
            "routes: [{name: x, match: {hosts: ['${API_HOST}']}}]");
    assertThat(p.path()).isEqualTo("routes[0].match.hosts[0]");
    assertThat(p.message())
        .startsWith("found ***@api.example.com (from ${API_HOST}); allowed a host without")
        .doesNotContain("SECRET");
  }

  @Test
  void reportsBadHeaderNamesAndClassNames() {
    assertThat(problem("defaults: {retry: {attemptHeader: 'X Attempt'}}").message())
        .isEqualTo(
            "found \"X Attempt\"; allowed an HTTP header name such as Idempotency-Key, or none");
    assertThat(problem("defaults: {retry: {retryOn: {exceptions: ['java.net.']}}}").message())
        .isEqualTo(
            "found java.net.; allowed a fully qualified class name such as"
                + " java.net.UnknownHostException");
  }

  @Test
  void anIdempotencyKeyHeaderThatEveryRequestCarriesIsAWarning() throws Exception {
    AgentConfig config =
        Yaml.load(
            "defaults:",
            "  retry: {unsafeMethods: if-idempotency-key, idempotencyKeyHeader: Authorization}",
            "routes:",
            "  - name: a",
            "    retry: {idempotencyKeyHeader: X-Idempotency-Key}");

    assertThat(config.warnings())
        .extracting(ConfigProblem::path)
        .containsExactly("defaults.retry.idempotencyKeyHeader");
    assertThat(config.warnings().get(0).message())
        .startsWith("found Authorization, a header most requests carry for another reason")
        .contains("a payment could be sent twice");
    // Applied as written: a version-1 key keeps its meaning.
    assertThat(config.defaultPolicy().retry().idempotencyKeyHeader()).isEqualTo("Authorization");
    assertThat(Yaml.load("defaults: {retry: {idempotencyKeyHeader: cookie}}").warnings())
        .hasSize(1);
  }

  @Test
  void anExceptionNameWithoutItsPackageIsAWarningThatNamesTheLikelyFullName() throws Exception {
    AgentConfig config =
        Yaml.load(
            "defaults:",
            "  retry: {retryOn: {exceptions: [IOException, java.net.ConnectException]}}",
            "routes:",
            "  - name: a",
            "    retry: {retryOn: {exceptions: [sockettimeoutexception, Flaky]}}");

    assertThat(config.warnings())
        .extracting(ConfigProblem::line, ConfigProblem::column, ConfigProblem::path)
        .containsExactly(
            tuple(2, 34, "defaults.retry.retryOn.exceptions[0]"),
            tuple(5, 36, "routes[0].retry.retryOn.exceptions[0]"),
            tuple(5, 60, "routes[0].retry.retryOn.exceptions[1]"));
    assertThat(config.warnings().get(0).message())
        .isEqualTo(
            "found IOException, a class name without its package: it matches no exception (names"
                + " are compared in full, with the package); did you mean java.io.IOException?");
    assertThat(config.warnings().get(1).message())
        .endsWith("did you mean java.net.SocketTimeoutException?");
    assertThat(config.warnings().get(2).message())
        .endsWith("write the fully qualified name, such as java.io.IOException");
    // The contract keeps what the key accepts and matches: the names apply as written.
    assertThat(config.defaultPolicy().retry().retryOnExceptions())
        .containsExactly("IOException", "java.net.ConnectException");
    assertThat(config.withMode(dev.retryagent.policy.Mode.OBSERVE).warnings())
        .isEqualTo(config.warnings());
    assertThat(
            Yaml.load("defaults: {retry: {retryOn: {exceptions: [java.io.IOException]}}}")
                .warnings())
        .isEmpty();
  }

  @Test
  void reportsADuplicateKeyWithBothLines() {
    ConfigProblem p =
        problem(
            "defaults:", "  retry: {maxAttempts: 3}", "  budget: {}", "  retry: {maxAttempts: 4}");
    assertThat(p.line()).isEqualTo(4);
    assertThat(p.column()).isEqualTo(3);
    assertThat(p.path()).isEqualTo("defaults.retry");
    assertThat(p.message())
        .isEqualTo("found the key retry a second time (first at line 2); a key may appear once");
  }

  @Test
  void reportsDuplicateRouteNamesAnyCase() {
    ConfigProblem p =
        problem(
            "routes:",
            "  - name: pay",
            "    match: {hosts: [a]}",
            "  - name: PAY",
            "    match: {hosts: [b]}");
    assertThat(p.line()).isEqualTo(4);
    assertThat(p.path()).isEqualTo("routes[1].name");
    assertThat(p.message())
        .isEqualTo(
            "found the route name PAY a second time (first at routes[0], line 2); route names are"
                + " unique");
  }

  /**
   * Found by review (r8): a fleet.keyPrefix starting with '.', '_' or '-' (or ':') is refused, but
   * the message and the docs said those characters were allowed, not where. (A route name may start
   * with any of them since version 1 of the contract sets no rule for it: RouteNameRuleTest.)
   */
  @Test
  void aKeyPrefixStartingWithPunctuationIsRefusedSayingWhy() {
    assertThat(problem("fleet: {redis: {url: 'redis://h'}, keyPrefix: ':svc'}").message())
        .isEqualTo(
            "found :svc; allowed letters, digits, '.', '_', ':' and '-', starting with a letter or"
                + " digit (at most 100), such as my-service");
  }

  @Test
  void reservesTheRouteNameDefault() {
    assertThat(problem("routes: [{name: default, match: {hosts: [a]}}]").message())
        .startsWith("found default; allowed any other name");
  }

  @Test
  void reportsAMatchListThatMatchesNothing() {
    ConfigProblem p = problem("routes: [{name: x, match: {hosts: []}}]");
    assertThat(p.path()).isEqualTo("routes[0].match.hosts");
    assertThat(p.message())
        .isEqualTo(
            "found an empty list, which matches nothing; allowed at least one host glob (leave"
                + " the key out to match any host)");
  }

  /**
   * Found by review (r8): a route after a catch-all was an error, so a file version 1 accepts
   * ("first match wins") made the application run without retries, or stopped the JVM under strict.
   * It is a warning; the file loads and the first match still wins.
   */
  @Test
  void aRouteShadowedByACatchAllRouteIsAWarningAndTheFirstMatchWins() throws Exception {
    AgentConfig c =
        Yaml.load(
            "agent: {strict: true}",
            "routes:",
            "  - name: everything",
            "    match: {hosts: ['*'], paths: ['/**']}",
            "    retry: {maxAttempts: 2}",
            "  - name: never",
            "    match: {hosts: [a.com]}",
            "  - name: nor-this",
            "    retry: {maxAttempts: 5}");
    assertThat(c.routes())
        .extracting(Route::name)
        .containsExactly("everything", "never", "nor-this");
    assertThat(c.resolve("GET", "a.com", 443, "/x").routeName()).isEqualTo("everything");
    assertThat(c.resolve("GET", "a.com", 443, "/x").retry().maxAttempts()).isEqualTo(2);
    assertThat(c.warnings())
        .extracting(ConfigProblem::line, ConfigProblem::path)
        .containsExactly(tuple(6, "routes[1]"), tuple(8, "routes[2]"));
    assertThat(c.warnings().get(0).message())
        .isEqualTo(
            "this route can never match: routes[0] before it matches every request (first match"
                + " wins); put catch-all routes last or use defaults");
  }

  /**
   * Found by review (r8): a route whose match (or the route itself) could not be read was taken as
   * one that matches every request, so every later route got a second, spurious report that it can
   * never match. Also checked on the assembler's warnings, where that report may go.
   */
  @Test
  void aRouteWhoseMatchCannotBeReadIsReportedOnceNotAlsoAsACatchAll() {
    String[][] files = {
      {"routes:", "  - name: a", "    match: api.example.com", "  - name: b"},
      {"routes:", "  - name: a", "    match: !foo {hosts: [x]}", "  - name: b"},
      {"routes:", "  - name: a", "    match: {host: [x]}", "  - name: b"},
      {"routes:", "  - name: a", "    mtch: {hosts: [x]}", "  - name: b"},
      {"routes:", "  - api.example.com", "  - name: b"},
      {"routes:", "  - ~", "  - name: b"},
    };
    for (String[] file : files) {
      String text = String.join("\n", file);
      List<ConfigProblem> all = problems(file);
      assertThat(all).as(text).hasSize(1);
      assertThat(all.get(0).path()).as(text).startsWith("routes[0]");
      FileProblems problems = new FileProblems(Yaml.SOURCE);
      FileProblems warnings = new FileProblems(Yaml.SOURCE);
      YamlNode root = YamlComposer.compose(Yaml.lines(file), problems);
      ConfigWalker.ParsedFile parsed =
          new ConfigWalker(problems, warnings, new EnvSubstitution(Map.of())).walk(root);
      assertThat(new ConfigAssembler(problems, warnings).assemble(parsed, Yaml.SOURCE)).isNull();
      assertThat(problems.sorted()).as(text).isEqualTo(all);
      assertThat(warnings.sorted()).as(text).isEmpty();
    }
  }

  @Test
  void aRouteWithoutMatchOrMatchingEveryHostIsStillACatchAll() throws Exception {
    assertThat(Yaml.load("routes:", "  - name: a", "  - name: b").warnings())
        .extracting(ConfigProblem::path)
        .containsExactly("routes[1]");
    assertThat(
            Yaml.load("routes:", "  - {name: a, match: {hosts: ['*']}}", "  - name: b").warnings())
        .extracting(ConfigProblem::path)
        .containsExactly("routes[1]");
  }

  @Test
  void acceptsACatchAllRouteLast() throws Exception {
    AgentConfig c =
        Yaml.load(
            "routes:",
            "  - {name: a, match: {hosts: [a.com]}}",
            "  - {name: rest, retry: {maxAttempts: 2}}");
    assertThat(c.routes()).extracting(Route::name).containsExactly("a", "rest");
  }

  @Test
  void requiresVersionOne() {
    assertThat(problem("version: 2").message()).isEqualTo("found 2; allowed only 1");
    assertThat(problem("version: '1.0'").message()).isEqualTo("found 1.0; allowed only 1");
  }

  @Test
  void reportsAnUnsetVariableAtItsValue() {
    ConfigProblem p = problem("defaults:", "  retry:", "    deadline: ${DEADLINE}");
    assertThat(p.line()).isEqualTo(3);
    assertThat(p.column()).isEqualTo(15);
    assertThat(p.path()).isEqualTo("defaults.retry.deadline");
    assertThat(p.message())
        .isEqualTo(
            "environment variable DEADLINE is not set and there is no fallback; set it or write"
                + " ${DEADLINE:-value}");
  }

  @Test
  void showsTheSubstitutedValueAndWhereItCameFrom() {
    List<ConfigProblem> all =
        Yaml.problemsWithEnv(Map.of("N", "99"), "defaults: {retry: {maxAttempts: '${N}'}}");
    assertThat(all.get(0).message()).isEqualTo("found 99 (from ${N}); allowed 1..10");
  }

  @Test
  void reportsYamlSyntaxErrorsWithTheirLocation() {
    ConfigProblem p = problem("defaults:", "  retry: [1, 2", "budget: 3");
    assertThat(p.path()).isEmpty();
    assertThat(p.line()).isGreaterThanOrEqualTo(2);
    assertThat(p.message()).startsWith("invalid YAML: ");
    ConfigProblem tab = problem("defaults:", "\tretry: {}");
    assertThat(tab.line()).isEqualTo(2);
    assertThat(tab.message()).contains("TAB");
  }

  @Test
  void refusesASecondDocument() {
    ConfigProblem p = problem("version: 1", "---", "version: 1");
    assertThat(p.line()).isEqualTo(2);
    assertThat(p.message())
        .isEqualTo("found a second document (---); a configuration file holds one");
  }

  @Test
  void refusesTagsAndNeverInstantiatesTypes() {
    assertThat(
            problem(
                    "defaults: !!javax.script.ScriptEngineManager [!!java.net.URLClassLoader"
                        + " [[!!java.net.URL ['http://127.0.0.1/']]]]")
                .message())
        .startsWith("invalid YAML: Global tag is not allowed");
    ConfigProblem local = problem("defaults: {retry: {deadline: !secret 5s}}");
    assertThat(local.path()).isEqualTo("defaults.retry.deadline");
    assertThat(local.message()).isEqualTo("found the tag !secret; YAML tags are not allowed here");
  }

  @Test
  void refusesANullTagBeforeAValueInsteadOfDroppingTheValue() throws Exception {
    // Found by h7: `path: !!null /var/log/dead.jsonl` loaded as no dead letters at all, and
    // `perAttemptTimeout: !!null 2s` as none, with no word of the value left out.
    List<ConfigProblem> all =
        problems(
            "agent: {deadLetter: {path: !!null /tmp/dead.jsonl}}",
            "defaults: {retry: {perAttemptTimeout: !!null 2s}, budget: !!null x}",
            "routes: !!null x");
    assertThat(all)
        .extracting(ConfigProblem::line, ConfigProblem::path)
        .containsExactly(
            tuple(1, "agent.deadLetter.path"),
            tuple(2, "defaults.retry.perAttemptTimeout"),
            tuple(2, "defaults.budget"),
            tuple(3, "routes"));
    assertThat(all)
        .allSatisfy(
            p ->
                assertThat(p.message())
                    .isEqualTo(
                        "found the tag !!null before a value; YAML tags are not allowed here:"
                            + " write the value alone, or none"));
    // A null spelled out stays what it was: the setting is off.
    assertThat(
            Yaml.load("agent: {deadLetter: {path: !!null , maxBytes: !!null null}}")
                .deadLetterPath())
        .isNull();
  }

  @Test
  void refusesMergeKeysWithAPointerToDefaults() {
    List<ConfigProblem> all =
        problems(
            "defaults: {retry: &r {maxAttempts: 4}}",
            "routes:",
            "  - name: x",
            "    match: {hosts: [a]}",
            "    retry: {<<: *r, deadline: 5s}");
    assertThat(all).hasSize(1);
    assertThat(all.get(0).path()).isEqualTo("routes[0].retry");
    assertThat(all.get(0).message()).contains("merge keys are not supported");
  }

  @Test
  void acceptsAliasesToScalarsAndSmallCollections() throws Exception {
    AgentConfig c =
        Yaml.load(
            "defaults: {retry: {retryOn: {statuses: &s [502, 503]}, deadline: &d 10s}}",
            "routes:",
            "  - name: x",
            "    match: {hosts: [a]}",
            "    circuitBreaker: {failOn: {statuses: *s}, openFor: *d}");
    assertThat(c.routes().get(0).policy().circuitBreaker().failOnStatuses().spec())
        .containsExactly("502", "503");
  }

  @Test
  void aValueReachedThroughAnAliasIsReportedWhereTheAliasIsWritten() {
    // Before: at the anchor's line (SnakeYAML hands out the anchor's node for every alias), where
    // the value is valid for its own key.
    List<ConfigProblem> all =
        problems(
            "routes:",
            "  - name: &n payments",
            "    match: {hosts: [a]}",
            "    retry: {maxAttempts: *n}");
    assertThat(all).hasSize(1);
    assertThat(all.get(0).path()).isEqualTo("routes[0].retry.maxAttempts");
    assertThat(all.get(0).line()).isEqualTo(4);
    assertThat(all.get(0).column()).isEqualTo(26);
  }

  @Test
  void survivesARecursiveAlias() {
    List<ConfigProblem> all = problems("defaults: &d {retry: *d}");
    assertThat(all).isNotEmpty();
    assertThat(all).allSatisfy(p -> assertThat(p.line()).isPositive());
  }

  @Test
  void remembersAStrictFileEvenWhenItIsInvalidElsewhere() {
    assertThatThrownBy(
            () -> Yaml.load("agent: {strict: true}", "defaults: {retry: {maxAttempts: 0}}"))
        .isInstanceOfSatisfying(ConfigException.class, e -> assertThat(e.strict()).isTrue());
    assertThatThrownBy(() -> Yaml.load("defaults: {retry: {maxAttempts: 0}}"))
        .isInstanceOfSatisfying(ConfigException.class, e -> assertThat(e.strict()).isFalse());
    assertThatThrownBy(() -> Yaml.load("agent: {strict: true", "x"))
        .isInstanceOfSatisfying(ConfigException.class, e -> assertThat(e.strict()).isFalse());
  }

  @Test
  void problemsCarryTheirSourceName() {
    assertThatThrownBy(() -> ConfigLoader.parse("version: 0", "conf/app.yml", Map.of()))
        .isInstanceOfSatisfying(
            ConfigException.class,
            e -> assertThat(e.getMessage()).startsWith("conf/app.yml:1:10: version: found 0"));
  }
}
