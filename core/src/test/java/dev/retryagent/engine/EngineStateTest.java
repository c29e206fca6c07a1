package dev.retryagent.engine;

import static dev.retryagent.engine.CircuitState.OPEN;
import static dev.retryagent.engine.Script.respond;
import static org.assertj.core.api.Assertions.assertThat;

import dev.retryagent.policy.CircuitBreakerPolicy;
import dev.retryagent.policy.Mode;
import dev.retryagent.policy.Policy;
import dev.retryagent.testing.FakeRequest;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.function.BiPredicate;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/** Per-host state as the engine keeps it: bounded, per host, kept across unchanged reloads. */
class EngineStateTest {
  private static List<String> breakerKeys(RetryEngine engine) {
    return engine.breakers().stream().map(CircuitBreaker::key).collect(Collectors.toList());
  }

  private static void call(EngineFixture f, String host, int status) {
    Driver.SYNC.run(f, FakeRequest.of("GET", host), new Script(f.clock, respond(status)));
  }

  @Test
  void theHostRegistryDropsTheLeastRecentlyUsedIdleBreaker() {
    TestPolicy p = TestPolicy.create();
    p.retry.maxAttempts(1);
    p.breaker.maxHosts(2);
    EngineFixture f = EngineFixture.of(p);
    call(f, "a.example", 500); // a has a failure: not idle
    call(f, "b.example", 200); // b is idle
    call(f, "c.example", 200);
    assertThat(breakerKeys(f.engine)).containsExactly("http://a.example:80", "http://c.example:80");
    assertThat(f.engine.trackedTargets()).isEqualTo(2);
  }

  @Test
  void aBreakerWithSlowCallsInItsWindowIsNotIdle() {
    // a's slow call is half of what opens its breaker (slowCall.rateThreshold 100%, a window of 2):
    // dropped as idle, the host's next slow call was the first of a fresh window, and a host slow
    // at every call kept its breaker closed while other hosts came and went.
    TestPolicy p = TestPolicy.create();
    p.retry.maxAttempts(1);
    p.breaker.maxHosts(2).countWindow(2).minimumCalls(2);
    p.breaker.slowCallDuration(Duration.ofSeconds(1)).slowCallRateThreshold(1.0);
    EngineFixture f = EngineFixture.of(p);
    Driver.SYNC.run(
        f,
        FakeRequest.of("GET", "a.example"),
        new Script(f.clock, respond(200).takes(2_000_000_000L)));
    call(f, "b.example", 200); // b is idle
    call(f, "c.example", 200);
    assertThat(breakerKeys(f.engine)).containsExactly("http://a.example:80", "http://c.example:80");
  }

  @Test
  void aBudgetWithRetriesInItsWindowIsNotIdle() {
    // a's retry is in its budget's window: dropped as idle (ahead of b's, which holds none), the
    // failing host got a fresh budget and its retries went past the ratio.
    TestPolicy p = TestPolicy.create();
    p.retry.maxAttempts(2);
    p.breaker.maxHosts(2);
    EngineFixture f = EngineFixture.of(p);
    Driver.SYNC.run(
        f, FakeRequest.of("GET", "a.example"), new Script(f.clock, respond(503), respond(200)));
    call(f, "b.example", 200);
    call(f, "c.example", 200);
    RetryBudget a = f.engine.budgetFor("http://a.example:80", p.build());
    assertThat(a.retriesInWindow(f.clock.nanoTime())).as("a's budget, kept").isEqualTo(1);
  }

  @Test
  void withoutAnIdleBreakerTheLeastRecentlyUsedOneGoes() {
    TestPolicy p = TestPolicy.create();
    p.retry.maxAttempts(1);
    p.breaker.maxHosts(2);
    EngineFixture f = EngineFixture.of(p);
    call(f, "a.example", 500);
    call(f, "b.example", 500);
    call(f, "a.example", 500); // a used last
    call(f, "c.example", 500);
    assertThat(breakerKeys(f.engine)).containsExactly("http://a.example:80", "http://c.example:80");
  }

  @Test
  void manyHostsNeverGrowTheStatePastMaxHosts() {
    TestPolicy p = TestPolicy.create();
    p.retry.maxAttempts(1);
    p.breaker.maxHosts(50);
    p.rateLimit.enabled(true);
    EngineFixture f = EngineFixture.of(p);
    for (int i = 0; i < 500; i++) {
      call(f, "h" + i + ".example", i % 2 == 0 ? 200 : 503);
    }
    assertThat(f.engine.trackedTargets()).isEqualTo(50);
    assertThat(f.engine.breakers()).hasSize(50);
  }

  @Test
  void aRoutesSmallMaxHostsBoundsItsOwnHostsNotAnotherRoutesOpenBreaker() {
    TestPolicy p = TestPolicy.create();
    p.retry.maxAttempts(1);
    p.breaker.countWindow(2).minimumCalls(2);
    Policy defaults = p.build();
    CircuitBreakerPolicy small =
        CircuitBreakerPolicy.builder().countWindow(2).minimumCalls(2).maxHosts(2).build();
    Policy smallRoute =
        new Policy("small", defaults.retry(), defaults.budget(), small, defaults.rateLimit());
    EngineFixture f = EngineFixture.of(defaults);
    f.engine.reconfigure(Mode.ENFORCE, bySuffix(defaults, smallRoute));
    call(f, "a.example", 503);
    call(f, "a.example", 503);
    assertThat(f.engine.breakers()).extracting(CircuitBreaker::state).containsExactly(OPEN);

    // The small route's hosts fail too (none idle): past its bound, its own go, a.example stays.
    call(f, "h1.small", 503);
    call(f, "h2.small", 503);
    call(f, "h3.small", 503);

    assertThat(breakerKeys(f.engine))
        .containsExactlyInAnyOrder(
            "http://a.example:80", "http://h2.small:80", "http://h3.small:80");
    assertThat(f.engine.budgetFor("http://a.example:80", defaults)).isNotNull();
  }

  @Test
  void aReloadThatDropsAMaxHostsFoldsItsHostsIntoTheNewBound() {
    TestPolicy p = TestPolicy.create();
    p.retry.maxAttempts(1);
    p.breaker.maxHosts(50);
    EngineFixture f = EngineFixture.of(p);
    for (int i = 0; i < 40; i++) {
      call(f, "h" + i + ".example", 200);
    }
    p.breaker.maxHosts(10);
    f.engine.reconfigure(Mode.ENFORCE, bySuffix(p.build()));
    // The budgets of the old bound stay (their section is unchanged), within the new bound.
    assertThat(f.engine.trackedTargets()).isEqualTo(10);
    for (int i = 40; i < 100; i++) {
      call(f, "h" + i + ".example", 200);
    }
    assertThat(f.engine.trackedTargets()).isEqualTo(10);
  }

  /** {@code routes}' policy for hosts ending in .NAME, {@code defaults} for every other host. */
  private static PolicyResolver bySuffix(Policy defaults, Policy... routes) {
    return resolver((host, p) -> host.endsWith("." + p.routeName()), defaults, routes);
  }

  /** Each route's policy for the host ROUTE.example, {@code defaults} for every other host. */
  private static PolicyResolver routes(Policy defaults, Policy... routes) {
    return resolver((host, p) -> host.equals(p.routeName() + ".example"), defaults, routes);
  }

  /** The first of {@code routes} whose host test passes, {@code defaults} where none does. */
  private static PolicyResolver resolver(
      BiPredicate<String, Policy> hostOf, Policy defaults, Policy... routes) {
    List<Policy> all = new ArrayList<>(Arrays.asList(routes));
    all.add(defaults);
    return new PolicyResolver() {
      @Override
      public Policy resolve(String method, String host, int port, String path) {
        for (Policy p : routes) {
          if (hostOf.test(host, p)) {
            return p;
          }
        }
        return defaults;
      }

      @Override
      public java.util.Collection<Policy> policies() {
        return all;
      }
    };
  }

  @Test
  void eachPortIsItsOwnHost() {
    TestPolicy p = TestPolicy.create();
    EngineFixture f = EngineFixture.of(p);
    RequestInfo on8443 = FakeRequest.of("GET", "https", "api.example.com", 8443, "/");
    f.newCall(on8443);
    f.newCall(FakeRequest.get());
    assertThat(breakerKeys(f.engine))
        .containsExactly("https://api.example.com:8443", "http://api.example.com:80");
  }

  @Test
  void aHostIsOneHostWhateverTheCaseOrBracketsItIsWrittenIn() {
    // Host names are case-insensitive, and the JDK's URI keeps an IPv6 literal's brackets where
    // OkHttp's HttpUrl drops them: one host, one breaker (one budget, one rate limit).
    TestPolicy p = TestPolicy.create();
    p.retry.maxAttempts(1);
    p.breaker.countWindow(2).minimumCalls(2);
    EngineFixture f = EngineFixture.of(p);
    call(f, "API.Example.com", 503);
    call(f, "api.example.com", 503);
    call(f, "[::1]", 200);
    call(f, "::1", 200);
    assertThat(f.listener.transitions()).containsExactly(CircuitTransition.CLOSED_TO_OPEN);
    assertThat(breakerKeys(f.engine))
        .containsExactly("http://api.example.com:80", "http://[::1]:80");
  }

  @Test
  void aHostIsOneHostHoweverItsAddressOrNameIsSpelled() {
    // An IPv6 address in two spellings, and a name with and without its trailing dot, each made a
    // breaker (a budget, a rate limit, a 429 pause) of its own: two failures of one host, one per
    // spelling, never opened its breaker.
    TestPolicy p = TestPolicy.create();
    p.retry.maxAttempts(1);
    p.breaker.countWindow(2).minimumCalls(2);
    EngineFixture f = EngineFixture.of(p);
    call(f, "[0:0:0:0:0:0:0:1]", 503);
    call(f, "[::1]", 503);
    call(f, "api.example.com.", 503);
    call(f, "API.example.com", 503);
    assertThat(f.listener.transitions())
        .containsExactly(CircuitTransition.CLOSED_TO_OPEN, CircuitTransition.CLOSED_TO_OPEN);
    assertThat(breakerKeys(f.engine))
        .containsExactly("http://[::1]:80", "http://api.example.com:80");
  }

  @Test
  void anUnchangedSectionKeepsItsStateAcrossAReload() {
    TestPolicy p = TestPolicy.create();
    p.retry.maxAttempts(1);
    p.breaker.countWindow(2).minimumCalls(2);
    Policy policy = p.build();
    EngineFixture f = EngineFixture.of(policy);
    call(f, "a.example", 503);
    // The same breaker section in a new, equal policy object: the failure is remembered.
    TestPolicy same = TestPolicy.create();
    same.retry.maxAttempts(2);
    same.breaker.countWindow(2).minimumCalls(2);
    f.engine.reconfigure(Mode.ENFORCE, PolicyResolver.always(same.build()));
    call(f, "a.example", 503);
    assertThat(f.listener.transitions()).containsExactly(CircuitTransition.CLOSED_TO_OPEN);
  }

  @Test
  void aReloadThatChangesABreakersSectionStopsTrackingTheOldOneOpenAsItWas() {
    TestPolicy p = TestPolicy.create();
    p.retry.maxAttempts(1);
    p.breaker.countWindow(2).minimumCalls(2);
    EngineFixture f = EngineFixture.of(p);
    call(f, "a.example", 503);
    call(f, "a.example", 503);
    assertThat(f.engine.breakers()).extracting(CircuitBreaker::state).containsExactly(OPEN);

    TestPolicy changed = TestPolicy.create();
    changed.breaker.countWindow(3).minimumCalls(2);
    f.engine.reconfigure(Mode.ENFORCE, PolicyResolver.always(changed.build()));

    // No call of the new configuration would ever ask it again: it stayed open, for JMX's
    // OpenBreakers and Prometheus's breakers{state="open"}, for the JVM's life.
    assertThat(f.engine.breakers()).isEmpty();
  }

  @Test
  void aReloadThatRemovesARouteDropsItsRouteScopedBreakerAndKeepsTheOthers() {
    CircuitBreakerPolicy perRoute =
        CircuitBreakerPolicy.builder()
            .scope(CircuitBreakerPolicy.Scope.ROUTE)
            .countWindow(2)
            .minimumCalls(2)
            .build();
    TestPolicy p = TestPolicy.create();
    p.retry.maxAttempts(1);
    Policy kept = p.build();
    Policy payments =
        new Policy("payments", kept.retry(), kept.budget(), perRoute, kept.rateLimit());
    Policy search = new Policy("search", kept.retry(), kept.budget(), perRoute, kept.rateLimit());
    EngineFixture f = EngineFixture.of(kept);
    f.engine.reconfigure(Mode.ENFORCE, routes(kept, payments, search));
    call(f, "payments.example", 503);
    call(f, "payments.example", 503);
    call(f, "search.example", 503);
    call(f, "plain.example", 200);
    assertThat(breakerKeys(f.engine))
        .containsExactlyInAnyOrder("route:payments", "route:search", "http://plain.example:80");

    // The route is removed; search keeps its breaker, and so does the host of the defaults.
    f.engine.reconfigure(Mode.ENFORCE, routes(kept, search));

    assertThat(breakerKeys(f.engine))
        .containsExactlyInAnyOrder("route:search", "http://plain.example:80");
  }

  @Test
  void aCallThatResolvedBeforeAReloadsCleanUpLeavesNoBreakerOfTheOldSectionBehind() {
    TestPolicy p = TestPolicy.create();
    p.retry.maxAttempts(1);
    p.breaker.countWindow(1).minimumCalls(1);
    Policy old = p.build();
    TestPolicy changed = TestPolicy.create();
    changed.breaker.countWindow(3).minimumCalls(2);
    EngineFixture f = EngineFixture.of(old);
    f.engine.reconfigure(Mode.ENFORCE, new ReloadingWhileResolving(f.engine, old, changed.build()));

    call(f, "a.example", 503);

    // The call still had the old section's breaker to record its failure in...
    assertThat(f.listener.transitions()).containsExactly(CircuitTransition.CLOSED_TO_OPEN);
    // ...but made it after the reload's clean-up: kept, it stayed open, for JMX's OpenBreakers and
    // Prometheus's breakers{state="open"}, until the next reload.
    assertThat(f.engine.breakers()).isEmpty();
  }

  @Test
  void aCallThatResolvedInObserveModeBeforeAReloadToEnforceLeavesNoObserveBreakerBehind() {
    // Same section, other mode: the call's observe breaker, made after the reload's clean-up, is
    // no breaker of enforce mode's, and kept it showed the host open while enforce refused nothing.
    TestPolicy p = TestPolicy.create();
    p.retry.maxAttempts(1);
    p.breaker.countWindow(1).minimumCalls(1);
    Policy old = p.build();
    EngineFixture f = EngineFixture.of(old, Mode.OBSERVE);
    f.engine.reconfigure(
        Mode.OBSERVE, new ReloadingWhileResolving(f.engine, old, old, Mode.ENFORCE));

    call(f, "a.example", 503);

    assertThat(f.listener.transitions()).containsExactly(CircuitTransition.CLOSED_TO_OPEN);
    assertThat(f.engine.breakers()).isEmpty();
  }

  @Test
  void aCallThatResolvedBeforeAReloadThatKeepsItsSectionLeavesItsBreakerTracked() {
    TestPolicy p = TestPolicy.create();
    p.retry.maxAttempts(1);
    p.breaker.countWindow(1).minimumCalls(1);
    Policy old = p.build();
    EngineFixture f = EngineFixture.of(old);
    f.engine.reconfigure(Mode.ENFORCE, new ReloadingWhileResolving(f.engine, old, p.build()));

    call(f, "a.example", 503);

    assertThat(f.engine.breakers()).extracting(CircuitBreaker::state).containsExactly(OPEN);
  }

  @Test
  void aReloadThatComesWhileFleetModeIsSwitchedIsNotUndone() throws Exception {
    // useFleet starts the per-host states afresh with the settings it read; a reload on another
    // thread (a library user's, or the agent's watcher while fleet mode is switched elsewhere) that
    // swapped the settings in between was overwritten: every call went on with the old policies,
    // for good, while the reload had been said applied.
    TestPolicy p = TestPolicy.create();
    Policy old = p.build();
    Policy next = TestPolicy.create().build();
    EngineFixture f = EngineFixture.of(old);
    Thread[] reload = new Thread[1];
    PolicyResolver reloadingOnceAsked =
        new PolicyResolver() {
          private int asked;

          @Override
          public Policy resolve(String method, String host, int port, String path) {
            return old;
          }

          @Override
          public boolean readsPath() {
            if (++asked == 2) { // useFleet's settings read this configuration: the reload comes
              reload[0] =
                  new Thread(() -> f.engine.reconfigure(Mode.ENFORCE, PolicyResolver.always(next)));
              reload[0].start();
              // Done, or held by useFleet until it has finished: either way it stays applied.
              org.awaitility.Awaitility.await()
                  .atMost(Duration.ofSeconds(10))
                  .until(
                      () ->
                          reload[0].getState() == Thread.State.TERMINATED
                              || reload[0].getState() == Thread.State.BLOCKED
                              || reload[0].getState() == Thread.State.WAITING);
            }
            return false;
          }
        };
    f.engine.reconfigure(Mode.ENFORCE, reloadingOnceAsked);

    f.engine.useFleet(new FleetSeamTest.InMemoryFleet());
    reload[0].join(10_000);

    assertThat(reload[0].isAlive()).isFalse();
    assertThat(f.engine.newCall(FakeRequest.get()).policy()).isSameAs(next);
    assertThat(f.engine.fleet()).isNotNull();
  }

  /**
   * Resolves every request to {@code old}, but first reloads the engine to {@code next}: the call
   * read this configuration, and goes on with its policy after the reload swapped the settings and
   * dropped the breakers no policy of {@code next} uses.
   */
  private static final class ReloadingWhileResolving implements PolicyResolver {
    private final RetryEngine engine;
    private final Policy old;
    private final Policy next;
    private final Mode mode;

    ReloadingWhileResolving(RetryEngine engine, Policy old, Policy next) {
      this(engine, old, next, Mode.ENFORCE);
    }

    /** Reloads to {@code next} in {@code mode}. */
    ReloadingWhileResolving(RetryEngine engine, Policy old, Policy next, Mode mode) {
      this.engine = engine;
      this.old = old;
      this.next = next;
      this.mode = mode;
    }

    @Override
    public Policy resolve(String method, String host, int port, String path) {
      engine.reconfigure(mode, PolicyResolver.always(next));
      return old;
    }

    @Override
    public java.util.Collection<Policy> policies() {
      return java.util.Collections.singletonList(old);
    }
  }

  @Test
  void aChangedSectionStartsFresh() {
    TestPolicy p = TestPolicy.create();
    p.retry.maxAttempts(1);
    p.breaker.countWindow(2).minimumCalls(2);
    EngineFixture f = EngineFixture.of(p);
    call(f, "a.example", 503);
    TestPolicy changed = TestPolicy.create();
    changed.retry.maxAttempts(1);
    changed.breaker.countWindow(3).minimumCalls(2);
    f.engine.reconfigure(Mode.ENFORCE, PolicyResolver.always(changed.build()));
    call(f, "a.example", 503);
    assertThat(f.listener.transitions()).isEmpty();
  }
}
