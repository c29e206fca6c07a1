package dev.retryagent.internal.observe;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.retryagent.engine.CircuitTransition;
import dev.retryagent.engine.GiveUpReason;
import dev.retryagent.policy.BudgetPolicy;
import dev.retryagent.policy.CircuitBreakerPolicy;
import dev.retryagent.policy.Mode;
import dev.retryagent.policy.Policy;
import dev.retryagent.policy.RateLimitPolicy;
import dev.retryagent.testing.FakeRequest;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

class RetryMetricsTest {
  private static final String API = "https://api.example.com:443";

  @Test
  void countsCallsAttemptsRetriesAndGiveUpsPerRouteAndHost() {
    RetryMetrics m = new RetryMetrics();
    Rig llm = new Rig(Rig.policy("llm"), m);
    Rig payments = new Rig(Rig.policy("payments"), m);

    llm.call(FakeRequest.get("api.example.com", "/v1/summarise"), 503, 200);
    llm.call(FakeRequest.get("api.example.com", "/v1/summarise"), 404);
    payments.call(FakeRequest.post("pay.example.com", "/v1/charges"), 503);

    CounterSnapshot route = m.route("llm");
    assertThat(route.calls()).isEqualTo(2);
    assertThat(route.succeeded()).isEqualTo(2);
    assertThat(route.failed()).isZero();
    assertThat(route.attempts()).isEqualTo(3);
    assertThat(route.retries()).isEqualTo(1);
    assertThat(route.giveUps()).isZero();
    assertThat(m.host(API).attempts()).isEqualTo(3);
    CounterSnapshot pay = m.route("payments");
    assertThat(pay.calls()).isEqualTo(1);
    assertThat(pay.failed()).isEqualTo(1);
    assertThat(pay.giveUps(GiveUpReason.NOT_IDEMPOTENT)).isEqualTo(1);
    assertThat(pay.giveUps()).isEqualTo(1);
    assertThat(m.routes()).containsExactly("llm", "payments");
    assertThat(m.hosts()).containsExactly(API, "https://pay.example.com:443");
    assertThat(m.total().calls()).isEqualTo(3);
    assertThat(m.route("nope")).usingRecursiveComparison().isEqualTo(CounterSnapshot.ZERO);
  }

  @Test
  void oneHostNameOnOtherPortsOrSchemesIsAnotherHost() {
    RetryMetrics m = new RetryMetrics();
    Rig rig = new Rig(Rig.policy("llm"), m);

    for (int i = 0; i < 2; i++) {
      rig.call(FakeRequest.of("GET", "https", "h.example", 443, "/"), 200);
      rig.call(FakeRequest.of("GET", "https", "h.example", 8443, "/"), 200);
      rig.call(FakeRequest.of("GET", "http", "h.example", 443, "/"), 200);
    }

    assertThat(m.hosts())
        .containsExactly("http://h.example:443", "https://h.example:443", "https://h.example:8443");
    for (String h : m.hosts()) {
      assertThat(m.host(h).calls()).as(h).isEqualTo(2);
    }
  }

  @Test
  void oneHostWrittenInAnyCaseOrWithOrWithoutBracketsIsOneSeriesWithItsBreakersState() {
    RetryMetrics m = new RetryMetrics();
    Rig rig = new Rig(Rig.breakerPolicy("search", CircuitBreakerPolicy.Scope.HOST), m);

    rig.call(FakeRequest.get("Search.Example.com", "/q"), 503);
    rig.call(FakeRequest.get("search.example.com", "/q"), 503);
    rig.call(FakeRequest.get("SEARCH.example.com", "/q"), 503);
    rig.call(FakeRequest.get("search.example.com", "/q"), 503);
    rig.call(FakeRequest.get("::1", "/"), 200);
    rig.call(FakeRequest.get("[::1]", "/"), 200);

    assertThat(m.hosts()).containsExactly("https://[::1]:443", "https://search.example.com:443");
    assertThat(m.host("https://search.example.com:443").calls()).isEqualTo(4);
    assertThat(m.host("https://[::1]:443").calls()).isEqualTo(2);
    // The breaker of the host is the series' own: its state is shown under the same key.
    assertThat(PrometheusText.render(m, rig.engine).lines())
        .contains(
            "retryagent_breaker_state{host=\"https://search.example.com:443\",state=\"open\"} 1");
  }

  @Test
  void manySpellingsOfOneHostKeepTheSpellingCacheBounded() {
    // A service fed host names from outside (a crawler, a webhook sender) may write one host in
    // thousands of case spellings: one series, and the cache that finds it by the name as written
    // must not keep every spelling for the JVM's life.
    RetryMetrics m = new RetryMetrics(4);
    String host = "api.example.com";
    int spellings = 1 << 12;
    for (int bits = 0; bits < spellings; bits++) {
      StringBuilder b = new StringBuilder(host);
      for (int i = 0; i < 12; i++) {
        if ((bits & (1 << i)) != 0) {
          b.setCharAt(i, Character.toUpperCase(b.charAt(i)));
        }
      }
      m.counterFor("llm", "https", b.toString(), 443).attempt();
    }

    assertThat(m.hosts()).containsExactly(API);
    assertThat(m.host(API).attempts()).isEqualTo(spellings);
    assertThat(m.spellingsCached()).isLessThanOrEqualTo(RetryMetrics.spellingCacheBound(4));
  }

  @Test
  void observeModeCountsWouldRetryNotRetries() {
    RetryMetrics m = new RetryMetrics();
    Rig rig = new Rig(Mode.OBSERVE, Rig.policy("llm"), m);

    rig.call(FakeRequest.get("api.example.com", "/v1/x"), 503);

    assertThat(m.route("llm").retries()).isZero();
    assertThat(m.route("llm").wouldRetry()).isEqualTo(1);
    assertThat(m.route("llm").failed()).isEqualTo(1);
  }

  @Test
  void hostsPastTheBoundAreCountedAsOther() {
    RetryMetrics m = new RetryMetrics(2);
    Rig rig = new Rig(Rig.policy("llm"), m);

    for (String h : List.of("a.example", "b.example", "c.example", "d.example", "a.example")) {
      rig.call(FakeRequest.get(h, "/"), 200);
    }

    assertThat(m.hosts())
        .containsExactly("https://a.example:443", "https://b.example:443", RetryMetrics.OTHER_HOST);
    assertThat(m.trackedHosts()).isEqualTo(2);
    assertThat(m.host("https://a.example:443").calls()).isEqualTo(2);
    assertThat(m.host(RetryMetrics.OTHER_HOST).calls()).isEqualTo(2);
    assertThat(m.host("https://c.example:443").calls()).isZero();
  }

  /**
   * Each host is a set of Prometheus lines and a JMX MBean's name: a 64 KB host was admitted whole,
   * in every line of the route's. Longer than a DNS name can be, it is counted as the other host.
   */
  @Test
  void aHostLongerThanADnsNameIsCountedAsOther() {
    RetryMetrics m = new RetryMetrics();
    Rig rig = new Rig(Rig.policy("llm"), m);
    String longest = "a".repeat(RetryMetrics.MAX_HOST_CHARS);
    String tooLong = "b".repeat(RetryMetrics.MAX_HOST_CHARS + 1);
    String huge = "c".repeat(64 * 1024);

    rig.call(FakeRequest.get(longest, "/"), 200);
    rig.call(FakeRequest.get(tooLong, "/"), 200);
    rig.call(FakeRequest.get(huge, "/"), 200);
    rig.call(FakeRequest.get("[fe80::1%eth0]", "/"), 200);

    assertThat(m.hosts())
        .containsExactlyInAnyOrder(
            "https://" + longest + ":443", "https://[fe80::1%eth0]:443", RetryMetrics.OTHER_HOST);
    assertThat(m.host(RetryMetrics.OTHER_HOST).calls()).isEqualTo(2);
    assertThat(m.trackedHosts()).isEqualTo(2);
  }

  @Test
  void breakerTransitionsAndRejectionsAreCounted() {
    RetryMetrics m = new RetryMetrics();
    Rig rig = new Rig(Rig.breakerPolicy("llm", CircuitBreakerPolicy.Scope.HOST), m);
    FakeRequest r = FakeRequest.get("api.example.com", "/v1/x");

    for (int i = 0; i < 4; i++) {
      rig.call(r, 503);
    }
    rig.call(r);

    CounterSnapshot host = m.host(API);
    assertThat(host.transitions(CircuitTransition.CLOSED_TO_OPEN)).isEqualTo(1);
    assertThat(host.breakerOpens()).isEqualTo(1);
    assertThat(host.breakerRejections()).isEqualTo(1);
    assertThat(host.giveUps(GiveUpReason.CIRCUIT_OPEN)).isEqualTo(1);
    assertThat(host.giveUps(GiveUpReason.ATTEMPTS)).isEqualTo(4);
    assertThat(host.calls()).isEqualTo(5);
  }

  @Test
  void aHostBreakerKeptAcrossARouteRenameCountsItsTransitionsUnderTheNewName() {
    // A reload that renames a route and keeps its circuitBreaker section keeps its host breakers
    // (operations.md). Their transitions were counted under the route that made them: after the
    // rename, a breaker the renamed route's calls opened was counted (breaker_transitions_total,
    // the route's BreakerOpens, the exit summary) under a route the configuration no longer has.
    RetryMetrics m = new RetryMetrics();
    Rig rig = new Rig(Rig.breakerPolicy("llm", CircuitBreakerPolicy.Scope.HOST), m);
    FakeRequest r = FakeRequest.get("api.example.com", "/v1/x");
    rig.call(r, 200); // the host's breaker, made under llm

    rig.engine.reconfigure(
        Mode.ENFORCE,
        dev.retryagent.engine.PolicyResolver.always(
            Rig.breakerPolicy("chat", CircuitBreakerPolicy.Scope.HOST)));
    for (int i = 0; i < 3; i++) {
      rig.call(r, 503); // with the 200, 3 failures of 4 calls: open
    }
    rig.call(r);

    assertThat(m.route("chat").breakerOpens()).isEqualTo(1);
    assertThat(m.route("chat").breakerRejections()).isEqualTo(1);
    assertThat(m.route("llm").breakerOpens()).isZero();
    assertThat(m.host(API).breakerOpens()).isEqualTo(1);
  }

  @Test
  void aHostBreakerMadeByACallOnTheSettingsBeforeARenameCountsUnderTheNewName() {
    // The race of the test above: a call read the settings before the reload (route llm), the
    // reload re-pointed the breakers it found (none yet), then the call made the host's breaker,
    // kept because chat has its section. It told its transitions under llm for good: chat's calls
    // opened it, and llm was counted.
    RetryMetrics m = new RetryMetrics();
    Policy llm = Rig.breakerPolicy("llm", CircuitBreakerPolicy.Scope.HOST);
    Rig rig = new Rig(llm, m);
    dev.retryagent.engine.PolicyResolver renamedMeanwhile =
        new dev.retryagent.engine.PolicyResolver() {
          private boolean reloaded;

          @Override
          public Policy resolve(String method, String host, int port, String path) {
            if (!reloaded) {
              reloaded = true;
              rig.engine.reconfigure(
                  Mode.ENFORCE,
                  dev.retryagent.engine.PolicyResolver.always(
                      Rig.breakerPolicy("chat", CircuitBreakerPolicy.Scope.HOST)));
            }
            return llm;
          }

          @Override
          public java.util.Collection<Policy> policies() {
            return java.util.List.of(llm);
          }
        };
    rig.engine.reconfigure(Mode.ENFORCE, renamedMeanwhile);
    FakeRequest r = FakeRequest.get("api.example.com", "/v1/x");
    rig.call(r, 200); // on the settings before the reload: the host's breaker, made under llm

    for (int i = 0; i < 3; i++) {
      rig.call(r, 503); // chat's calls: with the 200, 3 failures of 4: open
    }

    assertThat(m.route("chat").breakerOpens()).isEqualTo(1);
    assertThat(m.route("llm").breakerOpens()).isZero();
  }

  @Test
  void aRouteScopedBreakerIsCountedUnderItsRouteNotAsAHost() {
    RetryMetrics m = new RetryMetrics(1);
    Rig rig = new Rig(Rig.breakerPolicy("llm", CircuitBreakerPolicy.Scope.ROUTE), m);

    for (int i = 0; i < 4; i++) {
      rig.call(FakeRequest.get("api.example.com", "/v1/x"), 503);
    }

    assertThat(m.route("llm").breakerOpens()).isEqualTo(1);
    assertThat(m.hosts()).containsExactly(API);
    assertThat(m.host("route:llm").breakerOpens()).isEqualTo(1);
  }

  @Test
  void rateLimitRejectionsAndWaitsAreCounted() {
    Policy p =
        Rig.policy(
            "llm",
            b -> b,
            CircuitBreakerPolicy.defaults(),
            BudgetPolicy.defaults(),
            RateLimitPolicy.builder()
                .enabled(true)
                .perSecond(1)
                .burst(1)
                .maxWait(Duration.ofSeconds(2))
                .build());
    RetryMetrics m = new RetryMetrics();
    Rig rig = new Rig(p, m);
    Rig rejecting = new Rig(Rig.onePermitASecond("strict"), m);

    rig.call(FakeRequest.get("api.example.com", "/v1/x"), 200);
    rig.call(FakeRequest.get("api.example.com", "/v1/x"), 200);
    rejecting.call(FakeRequest.get("api.example.com", "/v1/x"), 200);
    rejecting.call(FakeRequest.get("api.example.com", "/v1/x"));

    assertThat(m.route("llm").rateLimitWaits()).isEqualTo(1);
    assertThat(m.route("llm").succeeded()).isEqualTo(2);
    assertThat(m.route("strict").rateLimitRejections()).isEqualTo(1);
    assertThat(m.route("strict").giveUps(GiveUpReason.RATE_LIMITED)).isEqualTo(1);
  }

  @Test
  void countsFromManyThreadsAddUpExactlyAndTheHostBoundHolds() throws Exception {
    RetryMetrics m = new RetryMetrics(2);
    Policy p =
        Rig.policy(
            "llm",
            // The fake clock is shared: other threads' waits must not run this call's deadline out.
            b -> b.deadline(Duration.ofDays(1)),
            CircuitBreakerPolicy.builder().enabled(false).build(),
            BudgetPolicy.builder().enabled(false).build(),
            RateLimitPolicy.defaults());
    Rig rig = new Rig(p, m);
    int threads = 8;
    int perThread = 300;
    Rig.onThreads(
        threads,
        perThread,
        (id, i) -> rig.call(FakeRequest.get("h" + ((id + i) % 5) + ".example", "/x"), 503, 200));

    CounterSnapshot total = m.total();
    assertThat(total.calls()).isEqualTo(threads * perThread);
    assertThat(total.attempts()).isEqualTo(2L * threads * perThread);
    assertThat(total.retries()).isEqualTo(threads * perThread);
    assertThat(m.trackedHosts()).isEqualTo(2);
    assertThat(m.hosts()).hasSize(3).contains(RetryMetrics.OTHER_HOST);
    long perHost = 0;
    for (String h : m.hosts()) {
      perHost += m.host(h).calls();
    }
    assertThat(perHost).isEqualTo(threads * perThread);
  }

  @Test
  void aBoundBelowOneIsRejected() {
    assertThatThrownBy(() -> new RetryMetrics(0))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("maxHosts");
  }

  @Test
  void aThreadMeetingTheLastSlotWhileAnotherAdmitsItsHostCountsUnderThatHost() throws Exception {
    // Two threads see a host first at once, one free slot left: the first takes it and, before
    // its host is published, the second found the slots full and filed its event under "other".
    RetryMetrics m = new RetryMetrics(1);
    java.util.concurrent.CountDownLatch inside = new java.util.concurrent.CountDownLatch(1);
    java.util.concurrent.CountDownLatch release = new java.util.concurrent.CountDownLatch(1);
    java.util.concurrent.atomic.AtomicBoolean first =
        new java.util.concurrent.atomic.AtomicBoolean();
    m.duringAdmission(
        () -> {
          if (first.compareAndSet(false, true)) {
            inside.countDown();
            try {
              release.await(10, java.util.concurrent.TimeUnit.SECONDS);
            } catch (InterruptedException e) {
              Thread.currentThread().interrupt();
            }
          }
        });
    Thread admitting =
        new Thread(() -> m.counterFor("llm", "https", "api.example.com", 443).attempt());
    Thread meeting =
        new Thread(() -> m.counterFor("llm", "https", "api.example.com", 443).attempt());
    admitting.start();
    assertThat(inside.await(10, java.util.concurrent.TimeUnit.SECONDS)).isTrue();
    meeting.start();
    org.awaitility.Awaitility.await()
        .atMost(Duration.ofSeconds(10))
        .until(
            () ->
                meeting.getState() == Thread.State.BLOCKED
                    || meeting.getState() == Thread.State.TERMINATED);
    release.countDown();
    admitting.join(10_000);
    meeting.join(10_000);

    assertThat(m.hosts()).containsExactly(API);
    assertThat(m.host(API).attempts()).isEqualTo(2);
    assertThat(m.host(RetryMetrics.OTHER_HOST).attempts()).isZero();
  }
}
