package dev.retryagent.engine;

import static dev.retryagent.engine.Script.respond;
import static org.assertj.core.api.Assertions.assertThat;

import dev.retryagent.internal.engine.RateLimiter;
import dev.retryagent.policy.Policy;
import dev.retryagent.policy.RateLimitPolicy;
import dev.retryagent.testing.FakeRequest;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The engine's fleet seam: a route with {@code rateLimit.scope: fleet} takes its permits from the
 * {@link FleetLimits} given to {@link RetryEngine#useFleet}, and its 429 pause goes there too. Two
 * engines (two "JVMs") share an in-memory fleet here: one {@link RateLimiter} per route, which is
 * what the Redis fleet does across processes.
 */
class FleetSeamTest {
  private static final long S = 1_000_000_000L;

  static Driver[] drivers() {
    return new Driver[] {Driver.SYNC, Driver.ASYNC};
  }

  /** An in-memory fleet: one limiter per route for every engine that uses it. */
  static final class InMemoryFleet implements FleetLimits {
    final Map<String, RateLimiter> byRoute = new HashMap<>();
    final List<String> lookups = new ArrayList<>();
    final List<Duration> retryAfterMaxes = new ArrayList<>();

    @Override
    public synchronized PermitLimiter limiter(
        String route, RateLimitPolicy limit, Duration retryAfterMax) {
      lookups.add(route);
      retryAfterMaxes.add(retryAfterMax);
      return byRoute.computeIfAbsent(route, r -> new RateLimiter(limit, FakeClock.START_NANOS));
    }

    @Override
    public List<FleetRouteCounters> counters() {
      return List.of();
    }

    @Override
    public boolean shared() {
      return true;
    }
  }

  private static TestPolicy fleetPolicy() {
    TestPolicy p = TestPolicy.create();
    p.retry.maxAttempts(1);
    p.rateLimit.enabled(true).perSecond(1).burst(2).scope(RateLimitPolicy.Scope.FLEET);
    return p;
  }

  @ParameterizedTest
  @MethodSource("drivers")
  void twoEnginesShareOneFleetLimit(Driver driver) {
    InMemoryFleet fleet = new InMemoryFleet();
    EngineFixture a = EngineFixture.of(fleetPolicy());
    EngineFixture b = EngineFixture.of(fleetPolicy());
    a.engine.useFleet(fleet);
    b.engine.useFleet(fleet);

    assertThat(driver.run(a, FakeRequest.get(), new Script(a.clock, respond(200))).status())
        .isEqualTo(200);
    assertThat(driver.run(b, FakeRequest.get(), new Script(b.clock, respond(200))).status())
        .isEqualTo(200);
    Script third = new Script(a.clock, respond(200));
    CallResult refused = driver.run(a, FakeRequest.get(), third);

    assertThat(third.attemptCount()).isZero();
    assertThat(refused.error).isInstanceOf(RateLimitedException.class);
    assertThat(fleet.byRoute).containsOnlyKeys(TestPolicy.ROUTE);
  }

  @ParameterizedTest
  @MethodSource("drivers")
  void hostScopeNeverAsksTheFleet(Driver driver) {
    InMemoryFleet fleet = new InMemoryFleet();
    TestPolicy p = fleetPolicy();
    p.rateLimit.scope(RateLimitPolicy.Scope.HOST);
    EngineFixture a = EngineFixture.of(p);
    EngineFixture b = EngineFixture.of(p);
    a.engine.useFleet(fleet);
    b.engine.useFleet(fleet);
    for (int i = 0; i < 2; i++) {
      driver.run(a, FakeRequest.get(), new Script(a.clock, respond(200)));
      driver.run(b, FakeRequest.get(), new Script(b.clock, respond(200)));
    }
    assertThat(fleet.lookups).isEmpty();
  }

  @ParameterizedTest
  @MethodSource("drivers")
  void withoutAFleetAFleetScopeLimitIsKeptPerHost(Driver driver) {
    EngineFixture a = EngineFixture.of(fleetPolicy());
    EngineFixture b = EngineFixture.of(fleetPolicy());
    for (EngineFixture f : List.of(a, b)) {
      for (int i = 0; i < 2; i++) {
        assertThat(driver.run(f, FakeRequest.get(), new Script(f.clock, respond(200))).status())
            .isEqualTo(200);
      }
      assertThat(driver.run(f, FakeRequest.get(), new Script(f.clock, respond(200))).error)
          .isInstanceOf(RateLimitedException.class);
    }
  }

  @ParameterizedTest
  @MethodSource("drivers")
  void a429SeenByOneEnginePausesTheRouteInTheOtherBoundedByRetryAfterMax(Driver driver) {
    InMemoryFleet fleet = new InMemoryFleet();
    TestPolicy p = fleetPolicy();
    p.rateLimit.burst(10);
    p.retry.retryAfterMax(Duration.ofSeconds(4));
    EngineFixture a = EngineFixture.of(p);
    EngineFixture b = EngineFixture.of(p);
    a.engine.useFleet(fleet);
    b.engine.useFleet(fleet);

    driver.run(a, FakeRequest.get(), new Script(a.clock, respond(429, "120")));
    Script next = new Script(b.clock, respond(200));
    CallResult r = driver.run(b, FakeRequest.of("GET", "another-host.example.com"), next);

    assertThat(r.status()).isEqualTo(200);
    assertThat(next.attempts().get(0).startNanos - FakeClock.START_NANOS).isEqualTo(4 * S);
    assertThat(fleet.retryAfterMaxes).containsOnly(Duration.ofSeconds(4));
  }

  @ParameterizedTest
  @MethodSource("drivers")
  void theEngineLooksAFleetLimitUpOnceAndAgainAfterAReload(Driver driver) {
    InMemoryFleet fleet = new InMemoryFleet();
    TestPolicy p = fleetPolicy();
    p.rateLimit.burst(10);
    EngineFixture a = EngineFixture.of(p);
    a.engine.useFleet(fleet);
    for (int i = 0; i < 3; i++) {
      driver.run(a, FakeRequest.get(), new Script(a.clock, respond(200)));
    }
    assertThat(fleet.lookups).hasSize(1);
    a.engine.reconfigure(a.engine.mode(), dev.retryagent.engine.PolicyResolver.always(p.build()));
    driver.run(a, FakeRequest.get(), new Script(a.clock, respond(200)));
    assertThat(fleet.lookups).hasSize(2);
    a.engine.useFleet(null);
    driver.run(a, FakeRequest.get(), new Script(a.clock, respond(200)));
    assertThat(fleet.lookups).hasSize(2);
  }

  /**
   * A fleet limit, which cannot take a permit back: its pause as this JVM knows it reaches a caller
   * already waiting for its permit too (looked at again after the wait), whose permit stays spent.
   */
  @org.junit.jupiter.api.Test
  void aCallerWaitingForAFleetPermitWhenA429PausesTheRouteSendsNothingBeforeThePauseEnds()
      throws Exception {
    TestPolicy p = fleetPolicy();
    p.rateLimit.perSecond(4).burst(1).maxWait(Duration.ofSeconds(1));
    EngineFixture f = EngineFixture.of(p);
    RateLimiter shared = new RateLimiter(p.build().rateLimit(), FakeClock.START_NANOS);
    PermitLimiter noGiveBack =
        new PermitLimiter() {
          @Override
          public long reserve(long nowNanos, long maxPermitWaitNanos, long maxTotalWaitNanos) {
            return shared.reserve(nowNanos, maxPermitWaitNanos, maxTotalWaitNanos);
          }

          @Override
          public void pause(long nowNanos, long pauseNanos) {
            shared.pause(nowNanos, pauseNanos);
          }

          @Override
          public long pauseRemainingNanos(long nowNanos) {
            return shared.pauseRemainingNanos(nowNanos);
          }
        };
    f.engine.useFleet(
        new FleetLimits() {
          @Override
          public PermitLimiter limiter(
              String route, RateLimitPolicy limit, Duration retryAfterMax) {
            return noGiveBack;
          }

          @Override
          public List<FleetRouteCounters> counters() {
            return List.of();
          }

          @Override
          public boolean shared() {
            return true;
          }
        });
    RetryCall x = f.newCall(FakeRequest.get());
    assertThat(x.reservePermit()).isZero(); // the only permit
    x.beginAttempt();
    f.sleeper.duringNextSleep(() -> x.onResponse(429, "5"));

    Script b = new Script(f.clock, respond(200));
    CallResult r = Driver.SYNC.run(f, FakeRequest.get(), b);

    assertThat(r.status()).isEqualTo(200);
    assertThat(b.attemptCount()).isEqualTo(1);
    assertThat(b.attempts().get(0).startNanos - FakeClock.START_NANOS).isEqualTo(5 * S);
    assertThat(f.sleeper.sleeps()).containsExactly(250_000_000L, 4_750_000_000L);
  }

  /**
   * A pause another JVM set during the wait, which this JVM learns only by asking its store after
   * the wait (PermitLimiter.pauseAfterWaitNanos): the look after the wait asks it, rather than the
   * pause this JVM knows of (none), and the attempt waits the pause out.
   */
  @org.junit.jupiter.api.Test
  void theLookAfterAWaitAsksTheFleetLimitForAPauseThisJvmHadNotHeardOf() throws Exception {
    TestPolicy p = fleetPolicy();
    p.rateLimit.perSecond(4).burst(1).maxWait(Duration.ofSeconds(1));
    EngineFixture f = EngineFixture.of(p);
    RateLimiter own = new RateLimiter(p.build().rateLimit(), FakeClock.START_NANOS);
    long[] elsewhereUntil = {0};
    PermitLimiter askingTheStore =
        new PermitLimiter() {
          @Override
          public long reserve(long nowNanos, long maxPermitWaitNanos, long maxTotalWaitNanos) {
            if (elsewhereUntil[0] - nowNanos > 0) {
              own.pauseUntil(elsewhereUntil[0]); // the store's reply carries the pause
            }
            return own.reserve(nowNanos, maxPermitWaitNanos, maxTotalWaitNanos);
          }

          @Override
          public void pause(long nowNanos, long pauseNanos) {
            own.pause(nowNanos, pauseNanos);
          }

          @Override
          public long pauseRemainingNanos(long nowNanos) {
            return own.pauseRemainingNanos(nowNanos); // never heard of the other JVM's
          }

          @Override
          public long pauseAfterWaitNanos(long nowNanos, long maxLookNanos) {
            return Math.max(0, elsewhereUntil[0] - nowNanos);
          }
        };
    f.engine.useFleet(
        new FleetLimits() {
          @Override
          public PermitLimiter limiter(
              String route, RateLimitPolicy limit, Duration retryAfterMax) {
            return askingTheStore;
          }

          @Override
          public List<FleetRouteCounters> counters() {
            return List.of();
          }

          @Override
          public boolean shared() {
            return true;
          }
        });
    assertThat(f.newCall(FakeRequest.get()).reservePermit()).isZero(); // the only permit
    // Another JVM's 429 pauses the route for 5 s while b waits 250 ms for its permit.
    f.sleeper.duringNextSleep(() -> elsewhereUntil[0] = f.clock.nanoTime() + 5 * S);

    Script b = new Script(f.clock, respond(200));
    CallResult r = Driver.SYNC.run(f, FakeRequest.get(), b);

    assertThat(r.status()).isEqualTo(200);
    assertThat(b.attemptCount()).isEqualTo(1);
    assertThat(elsewhereUntil[0]).isGreaterThan(FakeClock.START_NANOS + 250_000_000L);
    assertThat(b.attempts().get(0).startNanos).isEqualTo(elsewhereUntil[0]);
  }

  /**
   * A fleet that keeps one limiter per route, as the Redis fleet does: asked with another limit it
   * replaces the route's, unless asked under an older configuration than the one that made it.
   */
  static final class OneLimitPerRouteFleet implements FleetLimits {
    final Map<String, RateLimitPolicy> latest = new HashMap<>();
    final Map<String, Long> generations = new HashMap<>();

    @Override
    public synchronized PermitLimiter limiter(
        String route, RateLimitPolicy limit, Duration retryAfterMax) {
      return limiter(route, limit, retryAfterMax, Long.MAX_VALUE);
    }

    @Override
    public synchronized PermitLimiter limiter(
        String route, RateLimitPolicy limit, Duration retryAfterMax, long generation) {
      Long newest = generations.get(route);
      if (newest == null || generation >= newest) {
        latest.put(route, limit);
        generations.put(route, generation);
      }
      return new RateLimiter(latest.get(route), FakeClock.START_NANOS);
    }

    @Override
    public List<FleetRouteCounters> counters() {
      return List.of();
    }

    @Override
    public boolean shared() {
      return true;
    }
  }

  /**
   * A call that read the settings before a reload asks the fleet for its route's limit after a call
   * under the new settings did: the old limit must not replace the new one in the fleet (it would
   * hold there until the next reload). The engine says which configuration asks.
   */
  @ParameterizedTest
  @MethodSource("drivers")
  void aCallUnderTheSettingsBeforeAReloadNeverPutsTheOldFleetLimitBackInPlaceOfTheNewOne(
      Driver driver) {
    OneLimitPerRouteFleet fleet = new OneLimitPerRouteFleet();
    TestPolicy before = fleetPolicy();
    TestPolicy after = fleetPolicy();
    after.rateLimit.perSecond(5).burst(10);
    Policy newPolicy = after.build();
    EngineFixture a = EngineFixture.of(before);
    a.engine.useFleet(fleet);
    Policy oldPolicy = before.build();
    boolean[] reloaded = {false};
    PolicyResolver old =
        new PolicyResolver() {
          @Override
          public Policy resolve(String method, String host, int port, String path) {
            if (!reloaded[0]) {
              // The call has read the settings; a reload and a call under the new ones now.
              reloaded[0] = true;
              a.engine.reconfigure(a.engine.mode(), PolicyResolver.always(newPolicy));
              driver.run(a, FakeRequest.get(), new Script(a.clock, respond(200)));
              assertThat(fleet.latest.get(TestPolicy.ROUTE)).isEqualTo(newPolicy.rateLimit());
            }
            return oldPolicy;
          }

          @Override
          public boolean readsPath() {
            return false;
          }
        };
    a.engine.reconfigure(a.engine.mode(), old);

    driver.run(a, FakeRequest.get(), new Script(a.clock, respond(200)));

    assertThat(reloaded[0]).isTrue();
    assertThat(fleet.latest.get(TestPolicy.ROUTE)).isEqualTo(newPolicy.rateLimit());
  }
}
