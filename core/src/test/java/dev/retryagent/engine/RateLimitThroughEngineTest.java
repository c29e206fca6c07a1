package dev.retryagent.engine;

import static dev.retryagent.engine.Script.fail;
import static dev.retryagent.engine.Script.respond;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import dev.retryagent.internal.engine.RateLimiter;
import dev.retryagent.policy.Mode;
import dev.retryagent.policy.Policy;
import dev.retryagent.testing.FakeRequest;
import java.io.IOException;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/** The per-host rate limit as calls meet it, through both loops. */
class RateLimitThroughEngineTest {
  private static final long S = 1_000_000_000L;
  private static final long MS = 1_000_000L;

  static Driver[] drivers() {
    return new Driver[] {Driver.SYNC, Driver.ASYNC};
  }

  private static long waited(EngineFixture f) {
    long sum = f.sleeper.total();
    for (long d : f.scheduler.delays()) {
      sum += d;
    }
    return sum;
  }

  @ParameterizedTest
  @MethodSource("drivers")
  void noPermitWithinMaxWaitFailsTheCallWithoutAnAttempt(Driver driver) {
    TestPolicy p = TestPolicy.create();
    p.rateLimit.enabled(true).perSecond(1).burst(2);
    EngineFixture f = EngineFixture.of(p);
    driver.run(f, FakeRequest.get(), new Script(f.clock, respond(200)));
    driver.run(f, FakeRequest.get(), new Script(f.clock, respond(200)));

    Script third = new Script(f.clock, respond(200));
    CallResult r = driver.run(f, FakeRequest.get(), third);

    assertThat(third.attemptCount()).isZero();
    assertThat(r.error).isInstanceOf(RateLimitedException.class).isInstanceOf(IOException.class);
    assertThat(((RateLimitedException) r.error).host()).isEqualTo("http://api.example.com:80");
    assertThat(r.error.getMessage()).contains("http://api.example.com:80").contains("maxWait 0ms");
  }

  @ParameterizedTest
  @MethodSource("drivers")
  void aCallerWaitsForAPermitWithinMaxWait(Driver driver) {
    TestPolicy p = TestPolicy.create();
    p.rateLimit.enabled(true).perSecond(4).burst(1).maxWait(Duration.ofSeconds(1));
    EngineFixture f = EngineFixture.of(p);
    driver.run(f, FakeRequest.get(), new Script(f.clock, respond(200)));
    Script second = new Script(f.clock, respond(200));
    CallResult r = driver.run(f, FakeRequest.get(), second);
    assertThat(r.status()).isEqualTo(200);
    assertThat(second.attempts().get(0).startNanos - FakeClock.START_NANOS).isEqualTo(250 * MS);
    RetryEvent waitEvent = f.listener.events(RetryEvent.Type.RATE_LIMITED).get(0);
    assertThat(waitEvent.delayNanos()).isEqualTo(250 * MS);
    assertThat(waitEvent.reason()).isNull();
  }

  @ParameterizedTest
  @MethodSource("drivers")
  void retriesTakePermitsToo(Driver driver) {
    TestPolicy p = TestPolicy.create();
    p.rateLimit.enabled(true).perSecond(1).burst(2);
    EngineFixture f = EngineFixture.of(p);
    IOException reset = new java.net.SocketException("Connection reset");
    Script s =
        new Script(
            f.clock,
            fail(new java.net.SocketException("Connection reset")),
            fail(reset),
            respond(200));
    CallResult r = driver.run(f, FakeRequest.get(), s);
    // Two tokens: the first attempt and the first retry. The second retry, 300 ms in, finds none:
    // it is not made, and the caller gets the attempt before it as it came, as when a retry could
    // not start before the deadline. Before, the rate limit's RateLimitedException took its place.
    assertThat(s.attemptCount()).isEqualTo(2);
    assertThat(r.error).isSameAs(reset);
    assertThat(f.listener.events(RetryEvent.Type.GIVE_UP))
        .singleElement()
        .satisfies(e -> assertThat(e.reason()).isEqualTo(GiveUpReason.RATE_LIMITED));
    assertThat(f.listener.events(RetryEvent.Type.RATE_LIMITED)).hasSize(1);
  }

  /**
   * A retry the rate limit refuses after a response ends the call with that response, as the caller
   * has it without the agent: from the copy made before its release (a response that could not be
   * copied ends as one released before a wait that ended late). The first attempt's refusal stays
   * the rate limit's exception (noPermitWithinMaxWaitFailsTheCallWithoutAnAttempt).
   */
  @ParameterizedTest
  @MethodSource("drivers")
  void aRetryTheRateLimitRefusesEndsTheCallWithTheResponseBeforeIt(Driver driver) {
    TestPolicy p = TestPolicy.create();
    p.rateLimit.enabled(true).perSecond(1).burst(2);
    EngineFixture f = EngineFixture.of(p);
    Script s = new Script(f.clock, respond(503), respond(502), respond(200));
    CallResult r = runCopying(driver, f, s);
    assertThat(s.attemptCount()).isEqualTo(2);
    assertThat(r.error).isNull();
    assertThat(r.status()).isEqualTo(502);
    assertThat(f.listener.events(RetryEvent.Type.GIVE_UP))
        .singleElement()
        .satisfies(
            e -> {
              assertThat(e.reason()).isEqualTo(GiveUpReason.RATE_LIMITED);
              assertThat(e.status()).isEqualTo(502);
            });
    // The refused retry took no permit, and none went back twice: one second on, one token.
    f.clock.advance(Duration.ofSeconds(1));
    Script next = new Script(f.clock, respond(200), respond(200));
    assertThat(driver.run(f, FakeRequest.get(), next).status()).isEqualTo(200);
    Script after = new Script(f.clock, respond(200));
    assertThat(driver.run(f, FakeRequest.get(), after).error)
        .isInstanceOf(RateLimitedException.class);
  }

  /**
   * A response no copy is made of (a body over 8 KiB; every HttpURLConnection response) is kept
   * through a short retry wait of a call the rate limit governs, and the retry's permit asked for
   * before it goes: a refusal ends the call with that very response, as the caller has it without
   * the agent. Before, it was released at the decision, and the caller got RateLimitedException.
   */
  @org.junit.jupiter.api.Test
  void aRetryTheRateLimitRefusesAfterAShortWaitEndsWithTheResponseItselfThoughNotCopied() {
    TestPolicy p = TestPolicy.create();
    p.rateLimit.enabled(true).perSecond(1).burst(2);
    EngineFixture f = EngineFixture.of(p);
    Script s = new Script(f.clock, respond(503), respond(502), respond(200));
    CallResult r = Driver.SYNC.run(f, FakeRequest.get(), s);

    assertThat(s.attemptCount()).isEqualTo(2);
    assertThat(r.error).isNull();
    FakeResponse badGateway = s.responsesServed().get(1);
    assertThat(r.response).isSameAs(badGateway);
    assertThat(badGateway.discards.get()).as("given to the caller, not released").isZero();
    assertThat(s.responsesServed().get(0).discards.get()).isEqualTo(1);
    assertThat(f.listener.events(RetryEvent.Type.GIVE_UP))
        .singleElement()
        .satisfies(e -> assertThat(e.reason()).isEqualTo(GiveUpReason.RATE_LIMITED));
    // The refused retry took no permit, and none went back twice: one second on, one token.
    f.clock.advance(Duration.ofSeconds(1));
    Script next = new Script(f.clock, respond(200), respond(200));
    assertThat(Driver.SYNC.run(f, FakeRequest.get(), next).status()).isEqualTo(200);
    Script after = new Script(f.clock, respond(200));
    assertThat(Driver.SYNC.run(f, FakeRequest.get(), after).error)
        .isInstanceOf(RateLimitedException.class);
  }

  /**
   * A response no copy is made of (a body over 8 KiB; every HttpURLConnection response) before a
   * retry wait too long to keep it through (over 1 s): the retry's permit is reserved at the
   * decision, before the response goes, and a refusal ends the call with that very response at
   * once, as the caller has it without the agent. Before, it was released, the permit asked for
   * after the 2 s backoff, and the caller got RateLimitedException. A copied response asks after
   * its backoff as before, and ends with its copy.
   */
  @org.junit.jupiter.api.Test
  void aRetryTheRateLimitRefusesAfterALongWaitEndsWithTheResponseItselfThoughNotCopied() {
    TestPolicy p = TestPolicy.create().backoff(Duration.ofSeconds(2), 2, Duration.ofSeconds(10));
    p.rateLimit.enabled(true).perSecond(0.1).burst(1); // maxWait 0: the next token in 10 s
    EngineFixture f = EngineFixture.of(p);
    Script s = new Script(f.clock, respond(503), respond(200));
    CallResult r = Driver.SYNC.run(f, FakeRequest.get(), s);

    assertThat(r.error).isNull();
    FakeResponse unavailable = s.responsesServed().get(0);
    assertThat(r.response).isSameAs(unavailable);
    assertThat(unavailable.discards.get()).as("given to the caller, not released").isZero();
    assertThat(s.attemptCount()).isEqualTo(1);
    assertThat(f.sleeper.sleeps()).as("no wait for a retry never made").isEmpty();
    assertThat(f.listener.events(RetryEvent.Type.GIVE_UP))
        .singleElement()
        .satisfies(e -> assertThat(e.reason()).isEqualTo(GiveUpReason.RATE_LIMITED));
    RateLimiter bucket = (RateLimiter) f.newCall(FakeRequest.get()).state.limiter;
    assertThat(bucket.availableTokens(f.clock.nanoTime())).as("no permit taken").isZero();

    EngineFixture g = EngineFixture.of(p);
    Script copied = new Script(g.clock, respond(503), respond(200));
    CallResult c = runCopying(Driver.SYNC, g, copied);
    assertThat(c.status()).isEqualTo(503);
    assertThat(c.response).isNotSameAs(copied.responsesServed().get(0));
    assertThat(g.sleeper.sleeps()).as("asked after its backoff").containsExactly(2 * S);
  }

  /**
   * Granted at the decision, the permit of a retry whose response could be neither kept nor copied
   * is the one the retry takes: its wait is the longer of the backoff (2 s) and the permit's (4 s),
   * one wait, the response released before it; one RATE_LIMITED event tells the part past the
   * backoff, and the bucket is spent by one token, not two.
   */
  @org.junit.jupiter.api.Test
  void aRetrysPermitReservedAtTheDecisionIsTheOneItsAttemptTakes() {
    TestPolicy p = TestPolicy.create().backoff(Duration.ofSeconds(2), 2, Duration.ofSeconds(10));
    p.rateLimit.enabled(true).perSecond(0.25).burst(1).maxWait(Duration.ofSeconds(3));
    EngineFixture f = EngineFixture.of(p);
    Script s = new Script(f.clock, respond(503), respond(200));
    CallResult r = Driver.SYNC.run(f, FakeRequest.get(), s);

    assertThat(r.status()).isEqualTo(200);
    assertThat(s.attemptCount()).isEqualTo(2);
    assertThat(s.responsesServed().get(0).discards.get()).isEqualTo(1);
    assertThat(f.sleeper.sleeps()).containsExactly(4 * S);
    assertThat(s.attempts().get(1).startNanos - FakeClock.START_NANOS).isEqualTo(4 * S);
    assertThat(f.listener.events(RetryEvent.Type.RATE_LIMITED))
        .singleElement()
        .satisfies(e -> assertThat(e.delayNanos()).isEqualTo(2 * S));
    RateLimiter bucket = (RateLimiter) f.newCall(FakeRequest.get()).state.limiter;
    assertThat(bucket.availableTokens(f.clock.nanoTime())).isZero();
    f.clock.advance(Duration.ofSeconds(4));
    assertThat(bucket.availableTokens(f.clock.nanoTime())).isEqualTo(1.0);
  }

  /**
   * What the listeners let through (out of memory, a broken JVM: an InternalError from the
   * RATE_LIMITED event the reservation at the decision tells) reaches the caller, and the response
   * the reservation was made for is released, as the loop releases a kept one when its permit's
   * reservation throws. Before, the reservation at the decision was not guarded: the response was
   * neither released nor returned (an OkHttp connection, an Apache pool's lease, leaked).
   */
  @org.junit.jupiter.api.Test
  void whatTheListenersLetThroughAtTheDecisionsReservationReleasesTheResponse() {
    TestPolicy p = TestPolicy.create().backoff(Duration.ofSeconds(2), 2, Duration.ofSeconds(10));
    p.rateLimit.enabled(true).perSecond(0.25).burst(1).maxWait(Duration.ofSeconds(3));
    RetryListener breaks =
        new RetryListener() {
          @Override
          public void onRateLimited(RetryEvent event) {
            throw new InternalError("broken");
          }
        };
    EngineFixture f = EngineFixture.withListener(p.build(), breaks);
    Script s = new Script(f.clock, respond(503), respond(200));

    org.assertj.core.api.Assertions.assertThatThrownBy(
            () ->
                SyncRetryLoop.execute(
                    f.newCall(FakeRequest.get()), f.sleeper, s::runSync, FakeResponse.ACCESS))
        .isInstanceOf(InternalError.class);
    assertThat(s.attemptCount()).isEqualTo(1);
    assertThat(s.responsesServed().get(0).discards.get()).as("released").isEqualTo(1);
  }

  /**
   * A permit reserved at the decision for a retry never made (its wait ended past the deadline)
   * goes back to the bucket once at the call's end: neither kept spent, nor given back twice.
   */
  @org.junit.jupiter.api.Test
  void aPermitReservedAtTheDecisionForARetryNeverMadeGoesBackOnce() {
    TestPolicy p = TestPolicy.create().backoff(Duration.ofSeconds(2), 2, Duration.ofSeconds(10));
    p.rateLimit.enabled(true).perSecond(0.01).burst(2);
    EngineFixture f = EngineFixture.of(p);
    f.sleeper.late(2 * S);
    Script s = new Script(f.clock, respond(503), respond(200));
    CallResult r =
        Driver.SYNC.run(
            f,
            FakeRequest.get(),
            s,
            call -> call.limitDeadline(f.clock.nanoTime() + 3 * S)); // the wait ends at 4 s

    assertThat(s.attemptCount()).isEqualTo(1);
    assertThat(r.error).hasMessageContaining("past the call's deadline");
    RateLimiter bucket = (RateLimiter) f.newCall(FakeRequest.get()).state.limiter;
    // Two tokens, the first attempt's spent, the retry's back: one (and 4 s of 100 s accrued).
    assertThat(bucket.availableTokens(f.clock.nanoTime())).isCloseTo(1.04, within(1e-9));
  }

  /**
   * An adapter whose copy reads a body away when it makes none (HttpClient classic, a body of no
   * declared length: copyLeavesWhole false) has the retry's permit reserved before the copy: a
   * refusal ends the call with the response, no copy asked for, nothing read.
   */
  @org.junit.jupiter.api.Test
  void aRetrysPermitIsReservedBeforeACopyThatMayReadTheBodyAway() throws Exception {
    TestPolicy p = TestPolicy.create().backoff(Duration.ofSeconds(2), 2, Duration.ofSeconds(10));
    p.rateLimit.enabled(true).perSecond(0.1).burst(1);
    EngineFixture f = EngineFixture.of(p);
    java.util.concurrent.atomic.AtomicInteger copies =
        new java.util.concurrent.atomic.AtomicInteger();
    ResponseAccess<FakeResponse> readsAway =
        new FakeResponse.Delegating() {
          @Override
          public FakeResponse copyToGiveBack(FakeResponse response) {
            copies.incrementAndGet();
            return null; // read past the limit: no copy, the body gone
          }

          @Override
          public boolean copyLeavesWhole(FakeResponse response) {
            return false;
          }
        };
    Script s = new Script(f.clock, respond(503), respond(200));
    FakeResponse r =
        SyncRetryLoop.execute(f.newCall(FakeRequest.get()), f.sleeper, s::runSync, readsAway);

    assertThat(r).isSameAs(s.responsesServed().get(0));
    assertThat(copies.get()).as("no copy asked for").isZero();
    assertThat(r.discards.get()).isZero();
    assertThat(s.attemptCount()).isEqualTo(1);
  }

  /**
   * A permit reserved after a copy that made none (500 ms reading the body) waits for its token
   * from the moment it asked: the token due 2.5 s after the decision (0.4/s, the first attempt took
   * the only one) is 2 s from the ask, 500 ms past the backoff's rest, within maxWait (1 s), and
   * the retry starts at 2.5 s, not at the backoff's 2 s from the decision, half a second before its
   * token (the rate exceeded).
   */
  @org.junit.jupiter.api.Test
  void aPermitReservedAfterASlowCopyStartsTheRetryNoEarlierThanItsToken() throws Exception {
    TestPolicy p = TestPolicy.create().backoff(Duration.ofSeconds(2), 2, Duration.ofSeconds(10));
    p.rateLimit.enabled(true).perSecond(0.4).burst(1).maxWait(Duration.ofSeconds(1));
    EngineFixture f = EngineFixture.of(p);
    ResponseAccess<FakeResponse> slowCopy = copyMakingNoneIn500Ms(f);
    Script s = new Script(f.clock, respond(503), respond(200));
    FakeResponse r =
        SyncRetryLoop.execute(f.newCall(FakeRequest.get()), f.sleeper, s::runSync, slowCopy);

    assertThat(r.status).isEqualTo(200);
    assertThat(s.attempts().get(1).startNanos - FakeClock.START_NANOS).isEqualTo(2500 * MS);
  }

  /**
   * The same with maxWait 0: the token comes 500 ms after the retry's backoff from the decision, so
   * the retry is refused, as when its permit was asked at the decision without a copy or after the
   * backoff; the call ends with the response. The copy's time counted as backoff granted it.
   */
  @org.junit.jupiter.api.Test
  void aPermitReservedAfterASlowCopyIsRefusedAsIfAskedAtTheDecision() throws Exception {
    TestPolicy p = TestPolicy.create().backoff(Duration.ofSeconds(2), 2, Duration.ofSeconds(10));
    p.rateLimit.enabled(true).perSecond(0.4).burst(1);
    EngineFixture f = EngineFixture.of(p);
    ResponseAccess<FakeResponse> slowCopy = copyMakingNoneIn500Ms(f);
    Script s = new Script(f.clock, respond(503), respond(200));
    FakeResponse r =
        SyncRetryLoop.execute(f.newCall(FakeRequest.get()), f.sleeper, s::runSync, slowCopy);

    assertThat(r.status).isEqualTo(503);
    assertThat(s.attemptCount()).isEqualTo(1);
  }

  /**
   * A retry granted its permit after a wait, during which another call's 429 pauses the host past
   * the deadline: the retry is not made, and the caller gets the response before it (from the copy
   * taken as the response kept through the retry's wait was released for the permit's wait), not
   * the rate limit's exception. The permit reserved goes back once: the bucket is as if the retry
   * had never asked.
   */
  @ParameterizedTest
  @MethodSource("drivers")
  void aRetryA429PauseHoldsPastTheDeadlineDuringItsPermitWaitEndsWithTheResponseBeforeIt(
      Driver driver) throws Exception {
    TestPolicy p = TestPolicy.create();
    p.rateLimit.enabled(true).perSecond(4).burst(2).maxWait(Duration.ofSeconds(1));
    EngineFixture f = EngineFixture.of(p);
    RetryCall a = f.newCall(FakeRequest.get()); // takes one of the two tokens
    assertThat(a.reservePermit()).isZero();
    a.beginAttempt();
    // b's first attempt takes the other; its retry, 100 ms on, waits 150 ms for the next token,
    // and a's 429 (Retry-After 5s) comes during that wait. b's deadline is 2 s away.
    Script s = new Script(f.clock, respond(503), respond(200));
    RetryCall b = f.newCall(FakeRequest.get());
    b.limitDeadline(f.clock.nanoTime() + 2 * S);
    CallResult r;
    if (driver == Driver.SYNC) {
      f.sleeper.duringNextSleep(() -> f.sleeper.duringNextSleep(() -> a.onResponse(429, "5")));
      r =
          new CallResult(
              SyncRetryLoop.execute(b, f.sleeper, s::runSync, FakeResponse.COPYING), null);
      assertThat(f.sleeper.sleeps()).containsExactly(100 * MS, 150 * MS);
    } else {
      java.util.concurrent.CompletableFuture<FakeResponse> future =
          AsyncRetryLoop.execute(f.engine, b, s::runAsync, FakeResponse.COPYING);
      f.scheduler.advance(100 * MS); // the retry's wait ends: the permit's wait is scheduled
      assertThat(f.scheduler.delays()).containsExactly(100 * MS, 150 * MS);
      a.onResponse(429, "5");
      f.scheduler.runUntilIdle();
      r = new CallResult(future.join(), null);
    }

    assertThat(s.attemptCount()).as("the retry not made").isEqualTo(1);
    assertThat(r.status()).isEqualTo(503);
    assertThat(f.clock.nanoTime() - FakeClock.START_NANOS).isEqualTo(250 * MS);
    assertThat(f.listener.events(RetryEvent.Type.GIVE_UP))
        .singleElement()
        .satisfies(
            e -> {
              assertThat(e.reason()).isEqualTo(GiveUpReason.RATE_LIMITED);
              assertThat(e.status()).isEqualTo(503);
            });
    // Two tokens taken at the start, one accrued in 250 ms: one left. Kept, b's reservation made
    // it none; given back twice, two.
    RateLimiter bucket = (RateLimiter) b.state.limiter;
    assertThat(bucket.availableTokens(f.clock.nanoTime())).isEqualTo(1.0);
  }

  /**
   * A call that ended is not the limiter's last taker any more (r1's review of d4866f4c): the
   * limiter kept a reference to the last call that took a permit until its bucket was next full,
   * for the life of the JVM on a host called once (the call's request, its body's replay copy, the
   * application's callbacks). Seen through a give-back the ended call could not make: it stays
   * spent, where the call still remembered would put its token back.
   */
  @org.junit.jupiter.api.Test
  void aCallThatEndedIsForgottenByItsHostsLimiter() throws Exception {
    TestPolicy p = TestPolicy.create();
    p.rateLimit.enabled(true).perSecond(1).burst(5);
    EngineFixture f = EngineFixture.of(p);
    Script s = new Script(f.clock, respond(200));
    RetryCall call = f.newCall(FakeRequest.get());
    FakeResponse r =
        SyncRetryLoop.execute(call, f.engine.sleeper(), s::runSync, FakeResponse.ACCESS);
    assertThat(r.status).isEqualTo(200);
    RateLimiter bucket = (RateLimiter) call.state.limiter;
    long now = f.clock.nanoTime();
    assertThat(bucket.availableTokens(now)).isEqualTo(4.0);
    bucket.giveBack(now, call);
    assertThat(bucket.availableTokens(now)).as("the ended call's permit, not known").isEqualTo(4.0);
  }

  /** As the drivers run a call, with an access that copies a response before its release. */
  private static CallResult runCopying(Driver driver, EngineFixture f, Script s) {
    ResponseAccess<FakeResponse> copying = FakeResponse.COPYING;
    RetryCall call = f.newCall(FakeRequest.get());
    try {
      if (driver == Driver.SYNC) {
        return new CallResult(
            SyncRetryLoop.execute(call, f.engine.sleeper(), s::runSync, copying), null);
      }
      java.util.concurrent.CompletableFuture<FakeResponse> future =
          AsyncRetryLoop.execute(f.engine, call, s::runAsync, copying);
      f.scheduler.runUntilIdle();
      assertThat(future).isDone();
      return new CallResult(future.join(), null);
    } catch (java.util.concurrent.CompletionException e) {
      return new CallResult(null, e.getCause());
    } catch (Exception e) {
      return new CallResult(null, e);
    }
  }

  @ParameterizedTest
  @MethodSource("drivers")
  void a429WithRetryAfterPausesEveryCallerOfThatHost(Driver driver) {
    TestPolicy p = TestPolicy.create();
    p.retry.maxAttempts(1);
    p.rateLimit.enabled(true);
    EngineFixture f = EngineFixture.of(p);
    CallResult first = driver.run(f, FakeRequest.get(), new Script(f.clock, respond(429, "5")));
    assertThat(first.status()).isEqualTo(429);

    Script otherHost = new Script(f.clock, respond(200));
    driver.run(f, FakeRequest.of("GET", "elsewhere.example.com"), otherHost);
    assertThat(otherHost.attempts().get(0).startNanos).isEqualTo(FakeClock.START_NANOS);

    Script sameHost = new Script(f.clock, respond(200));
    driver.run(f, FakeRequest.of("PUT"), sameHost);
    assertThat(sameHost.attempts().get(0).startNanos - FakeClock.START_NANOS).isEqualTo(5 * S);
    assertThat(waited(f)).isEqualTo(5 * S);
  }

  /**
   * The hosts' 429 pauses are bounded as the hosts are, and a 429 does not pay for the others: each
   * forgets at most two, those that end soonest, if over or past maxHosts (10,000 here). Before, a
   * 429 that found the map doubled walked all of it (at maxHosts 100,000, 55-80 ms once per
   * ~100,000 429s, docs/BENCHMARKS.md), and the 5,003 429s below forgot the 10,000 over in one.
   */
  @org.junit.jupiter.api.Test
  void theHostsPausesAreForgottenWhenOverTwoAt429WithoutAWalk() {
    TestPolicy p = TestPolicy.create();
    p.retry.maxAttempts(1);
    p.rateLimit.enabled(true);
    EngineFixture f = EngineFixture.of(p);
    // The clock stands: no call waits (one attempt each, a host of its own).
    for (int i = 0; i < 25_000; i++) {
      Script s = new Script(f.clock, respond(429, "30"));
      Driver.SYNC.run(f, FakeRequest.of("GET", "h" + i + ".example.com"), s);
      assertThat(f.engine.hostPausesNoted()).isEqualTo(Math.min(i + 1, 10_000));
    }
    // Past the bound, each 429 forgot one pause under way: 15,000.
    assertThat(f.engine.hostPausesForgotten()).isEqualTo(15_000);

    f.clock.advance(Duration.ofHours(2));
    for (int i = 0; i < 5_003; i++) {
      Script s = new Script(f.clock, respond(429, "30"));
      Driver.SYNC.run(f, FakeRequest.of("GET", "later" + i + ".example.com"), s);
      // All 10,000 are over now: each 429 adds one and forgets two of them, never all at once.
      assertThat(f.engine.hostPausesNoted()).isEqualTo(Math.max(10_000 - 2 * (i + 1), 0) + i + 1);
    }
    // What is left are the pauses under way; an over one forgotten is not counted.
    assertThat(f.engine.hostPausesNoted()).isEqualTo(5_003);
    assertThat(f.engine.hostPausesForgotten()).isEqualTo(15_000);
  }

  /**
   * More hosts under a 429 pause at once than maxHosts: the pauses that end soonest are forgotten,
   * never more than maxHosts are kept, and one line says so. A forgotten host's bucket made afresh
   * (its old one dropped by maxHosts) does not wait; a kept one's does. Before, every pause under
   * way was kept, however many (13 here).
   */
  @org.junit.jupiter.api.Test
  void pausesUnderWayPastMaxHostsAreForgottenSoonestEndingFirstAndSaidOnce() throws Exception {
    TestPolicy p = TestPolicy.create();
    p.retry.maxAttempts(1);
    p.breaker.maxHosts(4);
    p.rateLimit.enabled(true).perSecond(100).burst(5).maxWait(Duration.ofSeconds(20));
    FakeClock clock = new FakeClock();
    List<String> lines = new java.util.concurrent.CopyOnWriteArrayList<>();
    RetryEngine engine =
        RetryEngine.builder().clock(clock).errors(lines::add).policy(p.build()).build();
    // Four long pauses among nine short ones, the clock standing.
    String[] hosts = {
      "long0", "short0", "short1", "long1", "short2", "short3", "long2", "short4", "short5",
      "long3", "short6", "short7", "short8"
    };
    for (String host : hosts) {
      RetryCall call = engine.newCall(FakeRequest.of("GET", host + ".example"));
      assertThat(call.reservePermit()).isZero();
      call.beginAttempt();
      int n = host.charAt(host.length() - 1) - '0';
      call.onResponse(
          429, host.startsWith("long") ? String.valueOf(10 + n) : String.valueOf(1 + n));
      assertThat(engine.hostPausesNoted()).isLessThanOrEqualTo(4);
    }

    assertThat(engine.hostPausesForgotten()).isEqualTo(9);
    assertThat(lines)
        .singleElement()
        .asString()
        .contains("more hosts under a 429 pause at once than maxHosts (4)", "said once");
    // long0's bucket was dropped (maxHosts 4): its new one starts paused; short0's does not.
    assertThat(engine.newCall(FakeRequest.of("GET", "long0.example")).reservePermit())
        .isEqualTo(10 * S);
    assertThat(engine.newCall(FakeRequest.of("GET", "short0.example")).reservePermit()).isZero();
  }

  /**
   * The line that says pauses under way were forgotten goes to the engine's sink, a library user's
   * consumer: one that throws must not reach the 429 whose pause forgot another. Before, it failed
   * that 429's decision (an internal error): the call ended with the 429, not retried as it is with
   * a sink that does not throw.
   */
  @org.junit.jupiter.api.Test
  void aSinkThatThrowsOnTheForgottenPausesLineLeavesThe429RetriedAsWithoutIt() throws Exception {
    TestPolicy p = TestPolicy.create();
    p.retry.maxAttempts(2);
    p.breaker.maxHosts(1);
    p.rateLimit.enabled(true).perSecond(100).burst(5).maxWait(Duration.ofSeconds(20));
    List<String> said = new java.util.concurrent.CopyOnWriteArrayList<>();
    RetryEngine engine =
        RetryEngine.builder()
            .clock(new FakeClock())
            .errors(
                line -> {
                  said.add(line);
                  throw new IllegalStateException("sink down");
                })
            .policy(p.build())
            .build();
    for (String host : new String[] {"a.example", "b.example"}) {
      RetryCall call = engine.newCall(FakeRequest.of("GET", host));
      assertThat(call.reservePermit()).isZero();
      call.beginAttempt();
      // b's 429 forgets a's pause under way (maxHosts 1): the line is said, the sink throws.
      assertThat(call.onResponse(429, "1").retry()).as(host).isTrue();
    }
    assertThat(engine.hostPausesNoted()).isEqualTo(1);
    assertThat(engine.hostPausesForgotten()).isEqualTo(1);
    assertThat(said).singleElement().asString().contains("maxHosts (1)");
  }

  /**
   * A library user's resolver whose {@code policies()} throws: the bound of the hosts' pauses is
   * maxHosts' default, as for one that cannot list them, and every 429 is retried as without the
   * pauses. Before, each 429 asked it again and the failure failed its decision: no 429 retried, no
   * pause ever forgotten.
   */
  @org.junit.jupiter.api.Test
  void aResolverThatFailsToListItsPoliciesLeavesThe429sRetriedAndThePausesBounded()
      throws Exception {
    TestPolicy p = TestPolicy.create();
    p.retry.maxAttempts(2);
    p.rateLimit.enabled(true).perSecond(100).burst(5).maxWait(Duration.ofSeconds(20));
    Policy policy = p.build();
    List<String> said = new java.util.concurrent.CopyOnWriteArrayList<>();
    RetryEngine engine =
        RetryEngine.builder()
            .clock(new FakeClock())
            .errors(said::add)
            .policies(
                new PolicyResolver() {
                  @Override
                  public Policy resolve(String method, String host, int port, String path) {
                    return policy;
                  }

                  @Override
                  public java.util.Collection<Policy> policies() {
                    throw new IllegalStateException("cannot list");
                  }
                })
            .build();
    for (int i = 0; i < 3; i++) {
      RetryCall call = engine.newCall(FakeRequest.of("GET", "h" + i + ".example"));
      assertThat(call.reservePermit()).isZero();
      call.beginAttempt();
      assertThat(call.onResponse(429, "1").retry()).as("h%d", i).isTrue();
    }
    assertThat(engine.hostPausesNoted()).isEqualTo(3);
    assertThat(said)
        .singleElement()
        .asString()
        .contains("429 pauses' bound", "IllegalStateException", "maxHosts' default, 10000");
  }

  /**
   * An engine whose rate limit notes each 429's host pause, its map bounded by {@code bound}
   * ({@code maxHosts}): one attempt per call, so each 429 only pauses its host.
   */
  static RetryEngine hostPausesEngine(int bound, FakeClock clock) {
    TestPolicy p = TestPolicy.create();
    p.retry.maxAttempts(1);
    p.breaker.maxHosts(bound);
    p.rateLimit.enabled(true).perSecond(100).burst(5).maxWait(Duration.ofSeconds(20));
    return RetryEngine.builder().clock(clock).errors(line -> {}).policy(p.build()).build();
  }

  @org.junit.jupiter.api.Test
  void manyPausesPastMaxHostsKeepTheBoundAndTheLatestEndingOnes() throws Exception {
    // 357 hosts answer 429 at maxHosts 50: from the 51st on, each forgets the one that ends
    // soonest, so the 50 left at the end are the 50 latest-ending of all.
    int bound = 50;
    int hosts = 357;
    FakeClock clock = new FakeClock();
    RetryEngine engine = hostPausesEngine(bound, clock);
    java.util.Random random = new java.util.Random(42);
    long[] until = new long[hosts];
    for (int i = 0; i < hosts; i++) {
      RetryCall call = engine.newCall(FakeRequest.of("GET", "h" + i + ".example"));
      assertThat(call.reservePermit()).isZero();
      call.beginAttempt();
      int seconds = 1 + random.nextInt(15);
      until[i] = clock.nanoTime() + seconds * S;
      call.onResponse(429, String.valueOf(seconds));
      assertThat(engine.hostPausesNoted()).isEqualTo(Math.min(i + 1, bound));
      clock.advance(1_000); // 1 µs: no two pauses end at once
    }
    assertThat(engine.hostPausesNoted()).isEqualTo(bound);
    assertThat(engine.hostPausesForgotten()).isEqualTo(hosts - bound);
    long[] sorted = until.clone();
    java.util.Arrays.sort(sorted);
    long latestForgotten = sorted[hosts - bound - 1];
    // The first hosts' buckets were dropped (maxHosts): a new one starts paused iff kept.
    for (int i = 0; i < 200; i++) {
      long wait = engine.newCall(FakeRequest.of("GET", "h" + i + ".example")).reservePermit();
      if (until[i] > latestForgotten) {
        assertThat(wait).as("h%d kept", i).isEqualTo(until[i] - clock.nanoTime());
      } else {
        assertThat(wait).as("h%d forgotten", i).isZero();
      }
    }
  }

  @ParameterizedTest
  @MethodSource("drivers")
  void aReloadThatChangesTheRateLimitKeepsThe429PauseOfTheHost(Driver driver) {
    // The operator lowers perSecond because the provider answers 429: the provider's Retry-After
    // is its word about the host, not about the old limit, and still holds after the reload.
    TestPolicy p = TestPolicy.create();
    p.retry.maxAttempts(1);
    p.rateLimit.enabled(true).perSecond(50);
    EngineFixture f = EngineFixture.of(p);
    driver.run(f, FakeRequest.get(), new Script(f.clock, respond(429, "5")));
    f.clock.advance(S);

    TestPolicy slower = TestPolicy.create();
    slower.retry.maxAttempts(1);
    slower.rateLimit.enabled(true).perSecond(10);
    f.engine.reconfigure(Mode.ENFORCE, PolicyResolver.always(slower.build()));

    Script sameHost = new Script(f.clock, respond(200));
    driver.run(f, FakeRequest.get(), sameHost);
    assertThat(sameHost.attempts().get(0).startNanos - FakeClock.START_NANOS).isEqualTo(5 * S);

    // Another host was never paused, and a pause that is over is not carried by a later reload.
    Script otherHost = new Script(f.clock, respond(200));
    driver.run(f, FakeRequest.of("GET", "elsewhere.example.com"), otherHost);
    assertThat(otherHost.attempts().get(0).startNanos - FakeClock.START_NANOS).isEqualTo(5 * S);
    f.engine.reconfigure(Mode.ENFORCE, PolicyResolver.always(p.build()));
    Script after = new Script(f.clock, respond(200));
    driver.run(f, FakeRequest.get(), after);
    assertThat(after.attempts().get(0).startNanos - FakeClock.START_NANOS).isEqualTo(5 * S);
  }

  @ParameterizedTest
  @MethodSource("drivers")
  void a429PausesTheCallersOfThatHostOnEveryRouteWithARateLimitOfItsOwn(Driver driver) {
    // POSTs and DELETEs to the host go by routes with rate limits of their own, the rest by the
    // defaults': three buckets for one host, and the provider's 429 is about the host.
    EngineFixture f = EngineFixture.of(TestPolicy.create());
    f.engine.reconfigure(Mode.ENFORCE, new ByMethod());
    driver.run(f, FakeRequest.get(), new Script(f.clock, respond(200))); // the defaults' bucket

    driver.run(f, FakeRequest.of("POST"), new Script(f.clock, respond(429, "5")));

    // The defaults' bucket, made before the 429, waits for it.
    Script get = new Script(f.clock, respond(200));
    driver.run(f, FakeRequest.get(), get);
    assertThat(get.attempts().get(0).startNanos - FakeClock.START_NANOS).isEqualTo(5 * S);

    // A bucket made after the 429 (no DELETE came before) starts paused.
    driver.run(f, FakeRequest.of("POST"), new Script(f.clock, respond(429, "5")));
    Script delete = new Script(f.clock, respond(200));
    driver.run(f, FakeRequest.of("DELETE"), delete);
    assertThat(delete.attempts().get(0).startNanos - FakeClock.START_NANOS).isEqualTo(10 * S);
  }

  @ParameterizedTest
  @MethodSource("drivers")
  void a429PausesTheHostsBucketsWhateverTheCaseTheHostIsSpeltIn(Driver driver) {
    // Host names are case-insensitive: the route that writes spells the host in capitals, the
    // others in lower case, and the provider's 429 is about the one host all the same.
    EngineFixture f = EngineFixture.of(TestPolicy.create());
    f.engine.reconfigure(Mode.ENFORCE, new ByMethod());
    driver.run(f, FakeRequest.get(), new Script(f.clock, respond(200))); // the defaults' bucket

    driver.run(
        f, FakeRequest.of("POST", "API.example.com"), new Script(f.clock, respond(429, "5")));

    // The defaults' bucket, made before the 429, waits for it.
    Script get = new Script(f.clock, respond(200));
    driver.run(f, FakeRequest.get(), get);
    assertThat(get.attempts().get(0).startNanos - FakeClock.START_NANOS).isEqualTo(5 * S);
  }

  @ParameterizedTest
  @MethodSource("drivers")
  void aBucketMadeDuringThe429PauseStartsPausedWhateverTheCaseTheHostIsSpeltIn(Driver driver) {
    // The route that writes spells the host in capitals; the deletes' bucket, made after its 429,
    // is of the same host.
    EngineFixture f = EngineFixture.of(TestPolicy.create());
    f.engine.reconfigure(Mode.ENFORCE, new ByMethod());
    driver.run(
        f, FakeRequest.of("POST", "API.example.com"), new Script(f.clock, respond(429, "5")));

    Script delete = new Script(f.clock, respond(200));
    driver.run(f, FakeRequest.of("DELETE"), delete);
    assertThat(delete.attempts().get(0).startNanos - FakeClock.START_NANOS).isEqualTo(5 * S);
  }

  @org.junit.jupiter.api.Test
  void aBucketMadeAsItsHostsFirst429IsNotedIsPaused() throws Exception {
    // The GETs' bucket of api.example.com is made while the host's first 429 (a POST's, a bucket
    // of its own) is noted: the GET's bucket has read no pause yet and the registry does not hold
    // it yet. The 429 must reach it all the same.
    FakeClock clock = new FakeClock();
    RetryEngine engine =
        RetryEngine.builder()
            .clock(clock)
            .errors(line -> {})
            .policy(TestPolicy.create().build())
            .build();
    engine.reconfigure(Mode.ENFORCE, new ByMethod());
    RetryCall first = engine.newCall(FakeRequest.of("POST", "api.example.com"));
    assertThat(first.reservePermit()).isZero(); // the writes' bucket, made before
    first.beginAttempt();
    first.onResponse(200, null);

    Thread[] the429 = new Thread[1];
    engine.pauseReadSeam =
        () -> {
          engine.pauseReadSeam = null;
          the429[0] =
              new Thread(
                  () -> {
                    RetryCall post = engine.newCall(FakeRequest.of("POST", "api.example.com"));
                    try {
                      post.reservePermit();
                      post.beginAttempt();
                    } catch (IOException e) {
                      throw new AssertionError(e);
                    }
                    post.onResponse(429, "5");
                  });
          the429[0].start();
          // Until the 429 has noted its pause and waits for the bucket's registry, or is done.
          org.awaitility.Awaitility.await()
              .atMost(Duration.ofSeconds(10))
              .until(
                  () ->
                      the429[0].getState() == Thread.State.TERMINATED
                          || (engine.hostPausesNoted() == 1
                              && the429[0].getState() == Thread.State.BLOCKED));
        };
    RetryCall get = engine.newCall(FakeRequest.of("GET", "api.example.com"));
    the429[0].join(10_000);
    assertThat(the429[0].isAlive()).isFalse();

    assertThat(get.reservePermit()).isEqualTo(5 * S);
  }

  @ParameterizedTest
  @MethodSource("drivers")
  void anotherRoutesBucketIsPausedNoLongerThanItsRetryAfterMaxAndNotWithoutPauseOn429(
      Driver driver) {
    // Writes honour a Retry-After up to 30 s, the defaults up to 10 s; deletes do not pause.
    EngineFixture f = EngineFixture.of(TestPolicy.create());
    f.engine.reconfigure(Mode.ENFORCE, new ByMethod(Duration.ofSeconds(10)));
    driver.run(f, FakeRequest.get(), new Script(f.clock, respond(200)));
    driver.run(f, FakeRequest.of("DELETE"), new Script(f.clock, respond(200)));

    driver.run(f, FakeRequest.of("POST"), new Script(f.clock, respond(429, "20")));

    Script get = new Script(f.clock, respond(200));
    driver.run(f, FakeRequest.get(), get);
    assertThat(get.attempts().get(0).startNanos - FakeClock.START_NANOS).isEqualTo(10 * S);
    Script delete = new Script(f.clock, respond(200));
    driver.run(f, FakeRequest.of("DELETE"), delete);
    assertThat(delete.attempts().get(0).startNanos - FakeClock.START_NANOS).isEqualTo(10 * S);
    Script post = new Script(f.clock, respond(200));
    driver.run(f, FakeRequest.of("POST"), post);
    assertThat(post.attempts().get(0).startNanos - FakeClock.START_NANOS).isEqualTo(20 * S);
  }

  /**
   * r18's finding: the 429's route bounded every other route's pause by its own retryAfter.max:
   * writes wait for a Retry-After up to 10 s, the defaults and deletes up to 30 s, and a POST's 429
   * asking for 20 s held the host's other buckets 10 s only. Each is bounded by its own route's
   * retryAfter.max (docs/configuration.md, rateLimit): the writes 10 s, the others 20 s.
   */
  @ParameterizedTest
  @MethodSource("drivers")
  void a429HoldsEachOtherRoutesBucketAsLongAsItsOwnRetryAfterMaxAllows(Driver driver) {
    EngineFixture f = EngineFixture.of(TestPolicy.create());
    f.engine.reconfigure(Mode.ENFORCE, new ShortWrites());
    driver.run(f, FakeRequest.get(), new Script(f.clock, respond(200))); // the defaults' bucket

    driver.run(f, FakeRequest.of("POST"), new Script(f.clock, respond(429, "20")));

    Script post = new Script(f.clock, respond(200));
    driver.run(f, FakeRequest.of("POST"), post);
    assertThat(post.attempts().get(0).startNanos - FakeClock.START_NANOS).isEqualTo(10 * S);
    // Made before the 429, and after it (no DELETE came before): 20 s, as the host asked.
    Script get = new Script(f.clock, respond(200));
    driver.run(f, FakeRequest.get(), get);
    assertThat(get.attempts().get(0).startNanos - FakeClock.START_NANOS).isEqualTo(20 * S);
  }

  /** The same for a bucket made after the 429: the host's whole pause, within its own bound. */
  @ParameterizedTest
  @MethodSource("drivers")
  void aBucketMadeAfterA429OnARouteOfAShorterBoundWaitsAsLongAsItsOwnAllows(Driver driver) {
    EngineFixture f = EngineFixture.of(TestPolicy.create());
    f.engine.reconfigure(Mode.ENFORCE, new ShortWrites());
    driver.run(f, FakeRequest.of("POST"), new Script(f.clock, respond(429, "20")));

    Script delete = new Script(f.clock, respond(200));
    driver.run(f, FakeRequest.of("DELETE"), delete);
    assertThat(delete.attempts().get(0).startNanos - FakeClock.START_NANOS).isEqualTo(20 * S);
  }

  /**
   * A route's bound counts from the 429, for a bucket made later as for one paused at the 429: the
   * patches (up to 5 s) made 3 s after a 429 that asked for 20 s wait 2 s, not 5 s from their
   * bucket's making.
   */
  @ParameterizedTest
  @MethodSource("drivers")
  void aBucketMadeDuringTheHostsPauseIsBoundedFromThe429NotFromItsMaking(Driver driver) {
    EngineFixture f = EngineFixture.of(TestPolicy.create());
    f.engine.reconfigure(Mode.ENFORCE, new ShortWrites());
    driver.run(f, FakeRequest.of("POST"), new Script(f.clock, respond(429, "20")));
    f.clock.advance(3 * S);

    Script patch = new Script(f.clock, respond(200));
    driver.run(f, FakeRequest.of("PATCH"), patch);
    assertThat(patch.attempts().get(0).startNanos - FakeClock.START_NANOS).isEqualTo(5 * S);
  }

  /**
   * r23: routes with equal rateLimit sections share one bucket, bounded by the longest of their
   * retryAfter.max (docs/configuration.md, rateLimit), whatever the bound of the route the 429 came
   * on: the POSTs (up to 10 s) got a 429 asking for 20 s, and the GETs (up to 30 s) of the same
   * bucket went after 10 s.
   */
  @ParameterizedTest
  @MethodSource("drivers")
  void a429OnARouteOfAShorterBoundHoldsTheBucketItSharesAsLongAsTheLongestBoundAllows(
      Driver driver) {
    EngineFixture f = EngineFixture.of(TestPolicy.create());
    f.engine.reconfigure(Mode.ENFORCE, new SharedSection());
    driver.run(f, FakeRequest.get(), new Script(f.clock, respond(200))); // the GETs use it

    driver.run(f, FakeRequest.of("POST"), new Script(f.clock, respond(429, "20")));

    Script get = new Script(f.clock, respond(200));
    driver.run(f, FakeRequest.get(), get);
    assertThat(get.attempts().get(0).startNanos - FakeClock.START_NANOS).isEqualTo(20 * S);
  }

  /**
   * The same when the route of the longer bound comes to the shared bucket after the 429: the
   * bucket was paused for the routes that had used it then (10 s), and the GETs' first call went
   * after 10 s of the 20 s the host asked for.
   */
  @ParameterizedTest
  @MethodSource("drivers")
  void aRouteOfALongerBoundThatComesToASharedBucketAfterA429WaitsAsLongAsItsOwnAllows(
      Driver driver) {
    EngineFixture f = EngineFixture.of(TestPolicy.create());
    f.engine.reconfigure(Mode.ENFORCE, new SharedSection());
    driver.run(f, FakeRequest.of("POST"), new Script(f.clock, respond(429, "20")));
    f.clock.advance(3 * S);

    Script get = new Script(f.clock, respond(200));
    driver.run(f, FakeRequest.get(), get);
    assertThat(get.attempts().get(0).startNanos - FakeClock.START_NANOS).isEqualTo(20 * S);
  }

  /**
   * r25 #5: the route of the longer bound comes to the shared bucket while a 429 of the shorter
   * route's is under way: after the 429 read the bucket's bound (10 s, the POSTs' only) and before
   * it noted the host's pause. The GETs' registration found no pause to apply, and the 429 paused
   * the bucket within the bound it had read: the GETs went after 10 s of the 20 s the host asked
   * for, though they wait up to 30 s. The seam puts the registration in that window.
   */
  @ParameterizedTest
  @MethodSource("drivers")
  void aRouteOfALongerBoundThatComesToASharedBucketAsA429IsNotedWaitsAsLongAsItsOwnAllows(
      Driver driver) {
    EngineFixture f = EngineFixture.of(TestPolicy.create());
    f.engine.reconfigure(Mode.ENFORCE, new SharedSection());
    f.engine.pauseNoteSeam =
        () -> {
          f.engine.pauseNoteSeam = null;
          f.engine.newCall(FakeRequest.get()); // the GETs' first use of the bucket
        };
    driver.run(f, FakeRequest.of("POST"), new Script(f.clock, respond(429, "20")));
    assertThat(f.engine.pauseNoteSeam).isNull(); // the registration came as the 429 was noted

    Script get = new Script(f.clock, respond(200));
    driver.run(f, FakeRequest.get(), get);
    assertThat(get.attempts().get(0).startNanos - FakeClock.START_NANOS).isEqualTo(20 * S);
  }

  /**
   * POST by the route writes (a Retry-After up to 10 s), the rest by reads (up to 30 s): equal
   * rateLimit sections, one bucket.
   */
  private static final class SharedSection implements PolicyResolver {
    private final Policy writes = ByMethod.limited("writes", 50, Duration.ofSeconds(10), true);
    private final Policy reads = ByMethod.limited("reads", 50, Duration.ofSeconds(30), true);

    @Override
    public Policy resolve(String method, String host, int port, String path) {
      return method.equals("POST") ? writes : reads;
    }
  }

  /**
   * Writes (POST) wait for a Retry-After up to 10 s, patches up to 5 s, the rest up to 30 s (the
   * default); each route has a rate limit of its own.
   */
  private static final class ShortWrites implements PolicyResolver {
    private final Policy writes = ByMethod.limited("writes", 10, Duration.ofSeconds(10), true);
    private final Policy patches = ByMethod.limited("patches", 20, Duration.ofSeconds(5), true);
    private final Policy deletes = ByMethod.limited("deletes", 5, null, true);
    private final Policy defaults = ByMethod.limited("default", 50, null, true);

    @Override
    public Policy resolve(String method, String host, int port, String path) {
      switch (method) {
        case "POST":
          return writes;
        case "PATCH":
          return patches;
        case "DELETE":
          return deletes;
        default:
          return defaults;
      }
    }
  }

  @ParameterizedTest
  @MethodSource("drivers")
  void a429PausesTheBucketOfACallStillUnderWayWithTheConfigurationBeforeAReload(Driver driver) {
    // A call that started before the reload keeps its configuration, and the bucket of its old
    // rate-limit section: its retry must not go to the host during the host's Retry-After either.
    TestPolicy p = TestPolicy.create();
    p.rateLimit.enabled(true).perSecond(50);
    EngineFixture f = EngineFixture.of(p);
    TestPolicy slower = TestPolicy.create();
    slower.retry.maxAttempts(1);
    slower.rateLimit.enabled(true).perSecond(10);
    Script underWay =
        new Script(
            f.clock,
            respond(503)
                .during(
                    () -> {
                      f.engine.reconfigure(Mode.ENFORCE, PolicyResolver.always(slower.build()));
                      driver.run(f, FakeRequest.get(), new Script(f.clock, respond(429, "5")));
                    }),
            respond(200));

    CallResult r = driver.run(f, FakeRequest.get(), underWay);

    assertThat(r.status()).isEqualTo(200);
    assertThat(underWay.attempts().get(1).startNanos - FakeClock.START_NANOS).isEqualTo(5 * S);
  }

  @ParameterizedTest
  @MethodSource("drivers")
  void aSwitchFromObserveToEnforceStartsFromABucketObserveModeDidNotDrain(Driver driver) {
    // Observe mode takes its permits and goes at once: the bucket runs into debt, up to maxWait.
    // Those permits were never spent waiting; the first enforcing calls must not pay for them.
    TestPolicy p = TestPolicy.create();
    p.rateLimit.enabled(true).perSecond(1).burst(1).maxWait(Duration.ofSeconds(5));
    EngineFixture f = EngineFixture.of(p.build(), Mode.OBSERVE);
    for (int i = 0; i < 6; i++) {
      driver.run(f, FakeRequest.get(), new Script(f.clock, respond(200)));
    }
    f.engine.reconfigure(Mode.ENFORCE, PolicyResolver.always(p.build()));

    Script first = new Script(f.clock, respond(200));
    CallResult r = driver.run(f, FakeRequest.get(), first);

    assertThat(r.status()).isEqualTo(200);
    assertThat(first.attempts().get(0).startNanos).isEqualTo(FakeClock.START_NANOS);
  }

  @ParameterizedTest
  @MethodSource("drivers")
  void aSwitchFromObserveToEnforceKeepsThe429PauseOfTheHost(Driver driver) {
    TestPolicy p = TestPolicy.create();
    p.retry.maxAttempts(1);
    p.rateLimit.enabled(true);
    EngineFixture f = EngineFixture.of(p.build(), Mode.OBSERVE);
    driver.run(f, FakeRequest.get(), new Script(f.clock, respond(429, "5")));
    f.engine.reconfigure(Mode.ENFORCE, PolicyResolver.always(p.build()));

    Script next = new Script(f.clock, respond(200));
    driver.run(f, FakeRequest.get(), next);

    assertThat(next.attempts().get(0).startNanos - FakeClock.START_NANOS).isEqualTo(5 * S);
  }

  /** POST by the route writes, DELETE by deletes, the rest by the defaults: three rate limits. */
  private static final class ByMethod implements PolicyResolver {
    private final Policy defaults;
    private final Policy writes = limited("writes", 10, null, true);
    private final Policy deletes;

    ByMethod() {
      defaults = limited("default", 50, null, true);
      deletes = limited("deletes", 5, null, true);
    }

    /**
     * The defaults honour a Retry-After up to {@code defaultsRetryAfterMax}; the deletes' bucket
     * does not pause on 429.
     */
    ByMethod(Duration defaultsRetryAfterMax) {
      defaults = limited("default", 50, defaultsRetryAfterMax, true);
      deletes = limited("deletes", 5, null, false);
    }

    private static Policy limited(
        String route, double perSecond, Duration retryAfterMax, boolean pauseOn429) {
      TestPolicy p = TestPolicy.create();
      p.retry.maxAttempts(1);
      if (retryAfterMax != null) {
        p.retry.retryAfterMax(retryAfterMax);
      }
      p.rateLimit.enabled(true).perSecond(perSecond).pauseOn429(pauseOn429);
      Policy built = p.build();
      return new Policy(
          route, built.retry(), built.budget(), built.circuitBreaker(), built.rateLimit());
    }

    @Override
    public Policy resolve(String method, String host, int port, String path) {
      return method.equals("POST") ? writes : method.equals("DELETE") ? deletes : defaults;
    }
  }

  @ParameterizedTest
  @MethodSource("drivers")
  void thePauseIsBoundedByRetryAfterMax(Driver driver) {
    TestPolicy p = TestPolicy.create();
    p.retry.maxAttempts(1);
    p.rateLimit.enabled(true);
    EngineFixture f = EngineFixture.of(p);
    driver.run(f, FakeRequest.get(), new Script(f.clock, respond(429, "120")));
    Script next = new Script(f.clock, respond(200));
    driver.run(f, FakeRequest.get(), next);
    assertThat(next.attempts().get(0).startNanos - FakeClock.START_NANOS).isEqualTo(30 * S);
  }

  @ParameterizedTest
  @MethodSource("drivers")
  void noPauseWhenPauseOn429IsOff(Driver driver) {
    TestPolicy p = TestPolicy.create();
    p.retry.maxAttempts(1);
    p.rateLimit.enabled(true).pauseOn429(false);
    EngineFixture f = EngineFixture.of(p);
    driver.run(f, FakeRequest.get(), new Script(f.clock, respond(429, "5")));
    Script next = new Script(f.clock, respond(200));
    driver.run(f, FakeRequest.get(), next);
    assertThat(next.attempts().get(0).startNanos).isEqualTo(FakeClock.START_NANOS);
  }

  @ParameterizedTest
  @MethodSource("drivers")
  void a429WithoutRetryAfterPausesNobody(Driver driver) {
    TestPolicy p = TestPolicy.create();
    p.retry.maxAttempts(1);
    p.rateLimit.enabled(true);
    EngineFixture f = EngineFixture.of(p);
    driver.run(f, FakeRequest.get(), new Script(f.clock, respond(429)));
    Script next = new Script(f.clock, respond(200));
    driver.run(f, FakeRequest.get(), next);
    assertThat(next.attempts().get(0).startNanos).isEqualTo(FakeClock.START_NANOS);
  }

  @ParameterizedTest
  @MethodSource("drivers")
  void aPauseLongerThanWhatIsLeftOfTheDeadlineFailsTheCallAtOnce(Driver driver) {
    TestPolicy p = TestPolicy.create();
    p.retry.maxAttempts(1);
    p.rateLimit.enabled(true);
    EngineFixture f = EngineFixture.of(p);
    driver.run(f, FakeRequest.get(), new Script(f.clock, respond(429, "20")));

    Script hurried = new Script(f.clock, respond(200));
    CallResult r =
        driver.run(
            f, FakeRequest.get(), hurried, call -> call.limitDeadline(f.clock.nanoTime() + 10 * S));
    assertThat(hurried.attemptCount()).isZero();
    assertThat(r.error).isInstanceOf(RateLimitedException.class);
    assertThat(r.error.getMessage()).contains("paused after 429").contains("20000ms");

    Script patient = new Script(f.clock, respond(200));
    assertThat(driver.run(f, FakeRequest.get(), patient).status()).isEqualTo(200);
    assertThat(patient.attempts().get(0).startNanos - FakeClock.START_NANOS).isEqualTo(20 * S);
  }

  @ParameterizedTest
  @MethodSource("drivers")
  void aRetryThatTheHostsPauseWouldHoldPastTheDeadlineIsNotMadeAndTheResponseGoesBack(
      Driver driver) {
    // The route does not wait for Retry-After itself, but its rate limit pauses the host for it:
    // the retry could not start before the deadline, which is known when it is decided. Without
    // the agent the application gets the 429; it must not get a RateLimitedException instead,
    // after a backoff, with the 429 thrown away.
    TestPolicy p = TestPolicy.create().deadline(Duration.ofSeconds(10)); // retryAfter.max 10s
    p.retry.retryAfterEnabled(false);
    p.rateLimit.enabled(true);
    EngineFixture f = EngineFixture.of(p);
    // A second in, the host is paused for 10 s: until 11 s, past the deadline at 10 s.
    Script s = new Script(f.clock, respond(429, "20").takes(S), respond(200));
    CallResult r = driver.run(f, FakeRequest.get(), s);

    assertThat(r.status()).isEqualTo(429);
    assertThat(s.attemptCount()).isEqualTo(1);
    assertThat(waited(f)).isZero();
    assertThat(f.listener.events(RetryEvent.Type.GIVE_UP))
        .extracting(RetryEvent::reason)
        .containsExactly(GiveUpReason.DEADLINE);
    assertThat(f.listener.events(RetryEvent.Type.RETRY)).isEmpty();
  }

  @ParameterizedTest
  @MethodSource("drivers")
  void aTokenWaitThatWouldOutlastTheDeadlineFailsTheCallAtOnce(Driver driver) {
    // One token per 50 s and a caller who accepts to wait 60 s for it: its 30 s deadline would be
    // long gone when the attempt started.
    TestPolicy p = TestPolicy.create();
    p.rateLimit.enabled(true).perSecond(0.02).burst(1).maxWait(Duration.ofSeconds(60));
    EngineFixture f = EngineFixture.of(p);
    driver.run(f, FakeRequest.get(), new Script(f.clock, respond(200)));
    Script second = new Script(f.clock, respond(200));
    CallResult r = driver.run(f, FakeRequest.get(), second);
    assertThat(second.attemptCount()).isZero();
    assertThat(r.error).isInstanceOf(RateLimitedException.class);
    assertThat(r.error.getMessage()).contains("before the call's deadline");
    assertThat(waited(f)).isZero();
  }

  @ParameterizedTest
  @MethodSource("drivers")
  void aRetryWhoseTokenComesAtTheDeadlineIsNotMade(Driver driver) {
    // One token per 2 s, a 2 s deadline, a retry 500 ms after a 503 at once: its token comes at
    // the deadline. It was granted (a wait could last all the time left), so the retry started at
    // the deadline, with a timeout of 1 ns (none left) and no chance: the server got a request
    // nobody waited for. A retry that could not start before the deadline is not made: the call
    // ends with the 503, as without the agent (before, the rate limit's exception).
    TestPolicy p =
        TestPolicy.create()
            .deadline(Duration.ofSeconds(2))
            .backoff(Duration.ofMillis(500), 2, Duration.ofSeconds(10));
    p.rateLimit.enabled(true).perSecond(0.5).burst(1).maxWait(Duration.ofSeconds(60));
    EngineFixture f = EngineFixture.of(p);
    Script s = new Script(f.clock, respond(503), respond(200));
    CallResult r = runCopying(driver, f, s);
    assertThat(s.attemptCount()).isEqualTo(1);
    assertThat(r.status()).isEqualTo(503);
    assertThat(waited(f)).isEqualTo(500 * MS); // the backoff, not the token's wait
    // A response that could not be copied: the sync loop kept it through the retry's short wait
    // (RetryCall.keepThroughWait), and the caller has it; the async loop's clients release it at
    // the decision, and then the rate limit's exception, which says why.
    EngineFixture g = EngineFixture.of(p);
    CallResult released =
        driver.run(g, FakeRequest.get(), new Script(g.clock, respond(503), respond(200)));
    if (driver == Driver.SYNC) {
      assertThat(released.status()).isEqualTo(503);
      assertThat(released.response.discards.get()).isZero();
      return;
    }
    assertThat(released.error)
        .isInstanceOf(RateLimitedException.class)
        .hasMessageContaining("no permit for the retry of GET after a 503")
        .hasMessageContaining("released for the retry");
  }

  @ParameterizedTest
  @MethodSource("drivers")
  void a429PausesTheHostEvenWhenTheRouteIgnoresRetryAfter(Driver driver) {
    TestPolicy p = TestPolicy.create();
    p.retry.maxAttempts(1).retryAfterEnabled(false);
    p.rateLimit.enabled(true);
    EngineFixture f = EngineFixture.of(p);
    driver.run(f, FakeRequest.get(), new Script(f.clock, respond(429, "5")));

    Script next = new Script(f.clock, respond(200));
    driver.run(f, FakeRequest.get(), next);

    assertThat(next.attempts().get(0).startNanos - FakeClock.START_NANOS).isEqualTo(5 * S);
  }

  @ParameterizedTest
  @MethodSource("drivers")
  void aCallTheOpenBreakerRefusesGivesItsPermitBack(Driver driver) {
    // Issue 14's soak: callers refused by an open breaker emptied the bucket, and were then
    // counted as rate-limited.
    TestPolicy p = TestPolicy.create();
    p.retry.maxAttempts(1);
    p.rateLimit.enabled(true).perSecond(1).burst(1);
    p.breaker.countWindow(1).minimumCalls(1);
    EngineFixture f = EngineFixture.of(p);
    driver.run(f, FakeRequest.get(), new Script(f.clock, respond(503))); // opens the breaker
    f.clock.advance(S); // the bucket is full again

    CallResult second = driver.run(f, FakeRequest.get(), new Script(f.clock));
    CallResult third = driver.run(f, FakeRequest.get(), new Script(f.clock));

    assertThat(second.error).isInstanceOf(CircuitBreakerOpenException.class);
    assertThat(third.error).isInstanceOf(CircuitBreakerOpenException.class);
    assertThat(f.listener.events(RetryEvent.Type.RATE_LIMITED)).isEmpty();
  }

  /** A 503 opens the breaker for 30 s (one call in the window is enough). */
  private static TestPolicy breakerOpenedByOne503() {
    TestPolicy p = TestPolicy.create();
    p.retry.maxAttempts(1);
    p.breaker.countWindow(1).minimumCalls(1).halfOpenCalls(1).openFor(Duration.ofSeconds(30));
    return p;
  }

  /**
   * r18's finding: with the rate limit on, a call to a host whose breaker is open first waited for
   * its token (1 s here), and only then heard the breaker's refusal. "An open breaker fails a call
   * at once, without touching the network": now it does, before any permit is asked for.
   */
  @ParameterizedTest
  @MethodSource("drivers")
  void anOpenBreakerFailsACallAtOnceWithoutWaitingForARateLimitToken(Driver driver) {
    TestPolicy p = breakerOpenedByOne503();
    p.rateLimit.enabled(true).perSecond(1).burst(1).maxWait(Duration.ofSeconds(10));
    EngineFixture f = EngineFixture.of(p);
    driver.run(f, FakeRequest.get(), new Script(f.clock, respond(503))); // opens the breaker
    long before = f.clock.nanoTime();

    Script second = new Script(f.clock, respond(200));
    CallResult r = driver.run(f, FakeRequest.get(), second);

    assertThat(r.error).isInstanceOf(CircuitBreakerOpenException.class);
    assertThat(second.attemptCount()).isZero();
    assertThat(waited(f)).isZero();
    assertThat(f.clock.nanoTime()).isEqualTo(before);
    assertThat(f.listener.events(RetryEvent.Type.RATE_LIMITED)).isEmpty();
    assertThat(f.listener.events(RetryEvent.Type.BREAKER_REJECTED)).hasSize(1);
    List<RetryEvent> givenUp = f.listener.events(RetryEvent.Type.GIVE_UP);
    assertThat(givenUp.get(givenUp.size() - 1).reason()).isEqualTo(GiveUpReason.CIRCUIT_OPEN);
  }

  /** The same without maxWait: the caller got RateLimitedException in the breaker's place. */
  @ParameterizedTest
  @MethodSource("drivers")
  void anOpenBreakersRefusalIsTheCallersExceptionNotTheEmptyBucketsOne(Driver driver) {
    TestPolicy p = breakerOpenedByOne503();
    p.rateLimit.enabled(true).perSecond(1).burst(1); // maxWait 0
    EngineFixture f = EngineFixture.of(p);
    driver.run(f, FakeRequest.get(), new Script(f.clock, respond(503))); // its token spent

    Script second = new Script(f.clock, respond(200));
    CallResult r = driver.run(f, FakeRequest.get(), second);

    assertThat(r.error).isInstanceOf(CircuitBreakerOpenException.class);
    assertThat(second.attemptCount()).isZero();
    assertThat(f.listener.events(RetryEvent.Type.RATE_LIMITED)).isEmpty();
  }

  /**
   * r18's second scenario: a 429 with Retry-After 25 s paused the host while its breaker was open,
   * and a new call waited out the 25 s pause before the breaker refused it.
   */
  @ParameterizedTest
  @MethodSource("drivers")
  void anOpenBreakerFailsACallAtOnceWithoutWaitingOutTheHosts429Pause(Driver driver)
      throws Exception {
    TestPolicy p = breakerOpenedByOne503();
    p.breaker.countWindow(2).openFor(Duration.ofSeconds(60));
    p.rateLimit.enabled(true).perSecond(100).burst(100);
    EngineFixture f = EngineFixture.of(p);
    RetryCall a = f.newCall(FakeRequest.get());
    RetryCall b = f.newCall(FakeRequest.get());
    a.reservePermit();
    a.beginAttempt();
    b.reservePermit();
    b.beginAttempt();
    b.onResponse(503, null); // opens the breaker
    a.onResponse(429, "25"); // in flight before it opened: pauses the host for 25 s
    assertThat(f.engine.breakers().get(0).state()).isEqualTo(CircuitState.OPEN);
    long before = f.clock.nanoTime();

    Script next = new Script(f.clock, respond(200));
    CallResult r = driver.run(f, FakeRequest.get(), next);

    assertThat(r.error).isInstanceOf(CircuitBreakerOpenException.class);
    assertThat(next.attemptCount()).isZero();
    assertThat(waited(f)).isZero();
    assertThat(f.clock.nanoTime()).isEqualTo(before);
  }

  /**
   * A caller already waiting for its token when the breaker opens and a 429 pauses the host: after
   * the token's wait, the breaker refuses it at once, not after the pause as well.
   */
  @org.junit.jupiter.api.Test
  void aCallerWaitingForATokenWhenTheBreakerOpensIsNotHeldThroughAPauseBeforeItsRefusal()
      throws Exception {
    TestPolicy p = breakerOpenedByOne503();
    p.breaker.countWindow(2);
    p.rateLimit.enabled(true).perSecond(4).burst(2).maxWait(Duration.ofSeconds(1));
    EngineFixture f = EngineFixture.of(p);
    RetryCall a = f.newCall(FakeRequest.get());
    RetryCall c = f.newCall(FakeRequest.get());
    assertThat(a.reservePermit()).isZero();
    a.beginAttempt();
    assertThat(c.reservePermit()).isZero();
    c.beginAttempt();
    f.sleeper.duringNextSleep(
        () -> {
          c.onResponse(503, null); // opens the breaker
          a.onResponse(429, "5"); // pauses the host
        });
    Script b = new Script(f.clock, respond(200));

    CallResult r = Driver.SYNC.run(f, FakeRequest.get(), b);

    assertThat(r.error).isInstanceOf(CircuitBreakerOpenException.class);
    assertThat(b.attemptCount()).isZero();
    assertThat(f.sleeper.sleeps()).containsExactly(250 * MS); // the token's wait only
  }

  /**
   * Only looked at: the breaker refuses the attempt it was open for even when its time comes up
   * before the attempt asks it (no half-open trial goes without its permit), and it takes no trial
   * for that refusal, so the next call gets the trial, its permit waited for as before.
   */
  @org.junit.jupiter.api.Test
  void aBreakerOpenWhenThePermitWasAskedForRefusesThatAttemptAndKeepsItsTrialForTheNext()
      throws Exception {
    TestPolicy p = breakerOpenedByOne503();
    p.rateLimit.enabled(true).perSecond(1).burst(1).maxWait(Duration.ofSeconds(10));
    EngineFixture f = EngineFixture.of(p);
    Driver.SYNC.run(f, FakeRequest.get(), new Script(f.clock, respond(503))); // opens it
    RetryCall refused = f.newCall(FakeRequest.get());
    assertThat(refused.reservePermit()).isZero(); // no wait for the token: refused at once
    f.clock.advance(30 * S); // its half-open time comes before the attempt asks the breaker
    org.assertj.core.api.Assertions.assertThatThrownBy(refused::beginAttempt)
        .isInstanceOf(CircuitBreakerOpenException.class);
    assertThat(f.engine.breakers().get(0).state()).isEqualTo(CircuitState.OPEN);

    // The bucket's token is taken: the trial waits for the next one, then goes.
    RetryCall other = f.newCall(FakeRequest.get());
    assertThat(other.reservePermit()).isZero();
    Script trial = new Script(f.clock, respond(200));
    CallResult r = Driver.SYNC.run(f, FakeRequest.get(), trial);
    assertThat(r.status()).isEqualTo(200);
    assertThat(f.sleeper.sleeps()).containsExactly(S);
    assertThat(f.engine.breakers().get(0).state()).isEqualTo(CircuitState.CLOSED);
  }

  /**
   * r23: a half-open breaker with its every trial out refuses the calls after them "as an open
   * breaker refuses them" (docs/configuration.md), and so at once with the rate limit on too: only
   * an open breaker was looked at before the wait for a permit, and with the trial's token taken a
   * call got RateLimitedException (maxWait 0), or waited its whole maxWait (10 s) and was then
   * refused. The look takes no trial: the next call after the trial's success goes.
   */
  @ParameterizedTest
  @MethodSource("driversAndMaxWaits")
  void aHalfOpenBreakerWithItsTrialsOutFailsACallAtOnceWithoutWaitingForARateLimitToken(
      Driver driver, long maxWaitSeconds) throws Exception {
    TestPolicy p = breakerOpenedByOne503();
    p.rateLimit.enabled(true).perSecond(0.1).burst(1).maxWait(Duration.ofSeconds(maxWaitSeconds));
    EngineFixture f = EngineFixture.of(p);
    driver.run(f, FakeRequest.get(), new Script(f.clock, respond(503))); // opens it
    f.clock.advance(30 * S); // due for its trial; the bucket has its token again
    RetryCall trial = f.newCall(FakeRequest.get());
    assertThat(trial.reservePermit()).isZero();
    trial.beginAttempt(); // the one trial in flight, with the bucket's token
    assertThat(f.engine.breakers().get(0).state()).isEqualTo(CircuitState.HALF_OPEN);
    long before = f.clock.nanoTime();

    Script next = new Script(f.clock, respond(200));
    CallResult r = driver.run(f, FakeRequest.get(), next);

    assertThat(r.error).isInstanceOf(CircuitBreakerOpenException.class);
    assertThat(next.attemptCount()).isZero();
    assertThat(waited(f)).isZero();
    assertThat(f.clock.nanoTime()).isEqualTo(before);
    assertThat(f.listener.events(RetryEvent.Type.RATE_LIMITED)).isEmpty();
    trial.onResponse(200, null); // the trial was not taken by the look: its success closes it
    assertThat(f.engine.breakers().get(0).state()).isEqualTo(CircuitState.CLOSED);
  }

  static java.util.stream.Stream<org.junit.jupiter.params.provider.Arguments> driversAndMaxWaits() {
    return java.util.stream.Stream.of(Driver.SYNC, Driver.ASYNC)
        .flatMap(
            d ->
                java.util.stream.Stream.of(
                    org.junit.jupiter.params.provider.Arguments.of(d, 0L),
                    org.junit.jupiter.params.provider.Arguments.of(d, 10L)));
  }

  /** Call a's attempt is in flight: it took the bucket's only token (burst 1, 4/s, maxWait 1s). */
  private static RetryCall inFlight(EngineFixture f) throws Exception {
    RetryCall a = f.newCall(FakeRequest.get());
    assertThat(a.reservePermit()).isZero();
    a.beginAttempt();
    return a;
  }

  private static EngineFixture waitingForATokenOf250ms() {
    TestPolicy p = TestPolicy.create();
    p.retry.maxAttempts(1);
    p.rateLimit.enabled(true).perSecond(4).burst(1).maxWait(Duration.ofSeconds(1));
    return EngineFixture.of(p);
  }

  /**
   * The concurrency pass's finding: a caller already waiting for its token when a 429 with {@code
   * Retry-After} paused the host sent its attempt when the token fell due, inside the pause (the
   * pause was looked at only when the permit was reserved). Now the pause is looked at again after
   * the wait, and the caller waits it out as one arriving during it would.
   */
  @org.junit.jupiter.api.Test
  void aCallerWaitingForATokenWhenA429PausesTheHostSendsNothingBeforeThePauseEnds()
      throws Exception {
    EngineFixture f = waitingForATokenOf250ms();
    RetryCall a = inFlight(f);
    // b waits 250 ms for the next token; meanwhile a's 429 asks for 5 s.
    f.sleeper.duringNextSleep(() -> a.onResponse(429, "5"));
    Script b = new Script(f.clock, respond(200));
    CallResult r = Driver.SYNC.run(f, FakeRequest.get(), b);

    assertThat(r.status()).isEqualTo(200);
    assertThat(b.attemptCount()).isEqualTo(1);
    assertThat(b.attempts().get(0).startNanos - FakeClock.START_NANOS).isEqualTo(5 * S);
    // The token's wait, then the rest of the pause (the bucket is full again when it ends).
    assertThat(f.sleeper.sleeps()).containsExactly(250 * MS, 4750 * MS);
  }

  @org.junit.jupiter.api.Test
  void anAsynchronousCallerWaitingForATokenWhenA429PausesTheHostSendsNothingBeforeThePauseEnds()
      throws Exception {
    EngineFixture f = waitingForATokenOf250ms();
    RetryCall a = inFlight(f);
    Script b = new Script(f.clock, respond(200));
    java.util.concurrent.CompletableFuture<FakeResponse> future =
        AsyncRetryLoop.execute(
            f.engine, f.newCall(FakeRequest.get()), b::runAsync, FakeResponse.ACCESS);
    assertThat(f.scheduler.delays()).containsExactly(250 * MS); // b waits for its token
    a.onResponse(429, "5");

    f.scheduler.advance(250 * MS); // b's token is due: inside the pause
    assertThat(b.attemptCount()).isZero();
    f.scheduler.advance(4750 * MS - 1);
    assertThat(b.attemptCount()).isZero();
    f.scheduler.advance(1); // the pause is over
    assertThat(b.attemptCount()).isEqualTo(1);
    f.scheduler.runUntilIdle();
    assertThat(future.get().status).isEqualTo(200);
    assertThat(b.attempts().get(0).startNanos - FakeClock.START_NANOS).isEqualTo(5 * S);
  }

  /**
   * One wait for the attempt's permit, one RATE_LIMITED event, however long a 429 pause that began
   * during it makes it: before, the look after the wait reserved again through reservePermit, which
   * told a second wait event (RateLimitWaits counted the one attempt twice).
   */
  @org.junit.jupiter.api.Test
  void aCallerWhoseWaitForATokenA429PauseLengthensIsToldAsOneWait() throws Exception {
    EngineFixture f = waitingForATokenOf250ms();
    RetryCall a = inFlight(f);
    f.sleeper.duringNextSleep(() -> a.onResponse(429, "5"));
    Script b = new Script(f.clock, respond(200));
    CallResult r = Driver.SYNC.run(f, FakeRequest.get(), b);

    assertThat(r.status()).isEqualTo(200);
    assertThat(f.sleeper.sleeps()).containsExactly(250 * MS, 4750 * MS);
    List<RetryEvent> waits = f.listener.events(RetryEvent.Type.RATE_LIMITED);
    assertThat(waits).hasSize(1);
    assertThat(waits.get(0).delayNanos()).isEqualTo(250 * MS);
    assertThat(waits.get(0).reason()).isNull();
  }

  /** The same for an asynchronous caller, whose look after the wait runs on the scheduler. */
  @org.junit.jupiter.api.Test
  void anAsynchronousCallerWhoseWaitForATokenA429PauseLengthensIsToldAsOneWait() throws Exception {
    EngineFixture f = waitingForATokenOf250ms();
    RetryCall a = inFlight(f);
    Script b = new Script(f.clock, respond(200));
    java.util.concurrent.CompletableFuture<FakeResponse> future =
        AsyncRetryLoop.execute(
            f.engine, f.newCall(FakeRequest.get()), b::runAsync, FakeResponse.ACCESS);
    a.onResponse(429, "5");
    f.scheduler.runUntilIdle();

    assertThat(future.get().status).isEqualTo(200);
    assertThat(f.listener.events(RetryEvent.Type.RATE_LIMITED)).hasSize(1);
  }

  /**
   * maxHosts dropped a host's bucket still in use (no idle one was left to drop); a 429 of a call
   * on the host's new bucket paused the buckets the registry holds, not the dropped one, so the
   * retry of a call that began on it took a permit of it inside the host's pause. Now the host's
   * noted pause reaches the dropped bucket before a retry's permit.
   */
  @org.junit.jupiter.api.Test
  void aRetryOnAHostBucketTheRegistryDroppedWaitsForTheHostsPause() throws Exception {
    TestPolicy p = TestPolicy.create();
    p.retry.maxAttempts(2);
    p.breaker.maxHosts(1);
    p.rateLimit.enabled(true).perSecond(1).burst(5).maxWait(Duration.ofSeconds(10));
    EngineFixture f = EngineFixture.of(p);
    RetryCall x = f.newCall(FakeRequest.of("GET", "a.example"));
    assertThat(x.reservePermit()).isZero(); // a's bucket, no longer full: in use
    x.beginAttempt();
    RetryCall other = f.newCall(FakeRequest.of("GET", "b.example")); // drops a's bucket
    assertThat(other.reservePermit()).isZero();
    RetryCall y = f.newCall(FakeRequest.of("GET", "a.example")); // a's new bucket
    assertThat(y.reservePermit()).isZero();
    y.beginAttempt();
    y.onResponse(429, "5");

    assertThat(x.onResponse(503, null).retry()).isTrue();
    assertThat(x.reservePermit()).isEqualTo(5 * S);
  }

  /**
   * A waiting caller the pause would hold past its deadline ends as a caller arriving during the
   * pause does: with the rate limit's exception, no attempt made.
   */
  @org.junit.jupiter.api.Test
  void aCallerWaitingForATokenWhomThePauseWouldHoldPastItsDeadlineFailsWithoutAnAttempt()
      throws Exception {
    EngineFixture f = waitingForATokenOf250ms();
    RetryCall a = inFlight(f);
    f.sleeper.duringNextSleep(() -> a.onResponse(429, "5"));
    Script b = new Script(f.clock, respond(200));
    CallResult r =
        Driver.SYNC.run(
            f, FakeRequest.get(), b, call -> call.limitDeadline(f.clock.nanoTime() + 2 * S));

    assertThat(b.attemptCount()).isZero();
    assertThat(r.error).isInstanceOf(RateLimitedException.class);
    assertThat(r.error.getMessage()).contains("paused after 429");
    assertThat(f.sleeper.sleeps()).containsExactly(250 * MS);
  }

  /**
   * The adapter's predicates on a retried response ({@code whole}, {@code copyRatherThanKeep} on a
   * short wait, {@code copyLeavesWhole} on a long one) failing with our bug end the call with that
   * response, the retry not made, as a failure reading its status does; what the engine never
   * catches (an InternalError) reaches the caller with the response released. Before, either was
   * thrown on with the response neither returned nor released (a connection, a pool's lease,
   * leaked).
   */
  @ParameterizedTest
  @org.junit.jupiter.params.provider.CsvSource({
    "whole, false",
    "copyRatherThanKeep, false",
    "copyLeavesWhole, false",
    "whole, true",
    "copyRatherThanKeep, true",
    "copyLeavesWhole, true"
  })
  void anAdaptersPredicateThatThrowsOnARetriedResponseNeitherLosesNorLeaksIt(
      String predicate, boolean error) {
    boolean longWait = predicate.equals("copyLeavesWhole");
    TestPolicy p =
        longWait
            ? TestPolicy.create().backoff(Duration.ofSeconds(2), 2, Duration.ofSeconds(10))
            : TestPolicy.create();
    p.rateLimit.enabled(true).perSecond(10).burst(5);
    EngineFixture f = EngineFixture.of(p);
    Script s = new Script(f.clock, respond(503), respond(200));
    ResponseAccess<FakeResponse> throwing =
        new FakeResponse.Delegating() {
          private boolean fail(String name) {
            if (!name.equals(predicate)) {
              return false;
            }
            if (error) {
              throw new InternalError(name);
            }
            throw new IllegalStateException(name);
          }

          @Override
          public boolean whole(FakeResponse response) {
            return !fail("whole");
          }

          @Override
          public boolean copyRatherThanKeep(FakeResponse response) {
            return fail("copyRatherThanKeep");
          }

          @Override
          public boolean copyLeavesWhole(FakeResponse response) {
            return !fail("copyLeavesWhole");
          }
        };
    FakeResponse unavailable;
    if (error) {
      org.assertj.core.api.Assertions.assertThatThrownBy(
              () ->
                  SyncRetryLoop.execute(
                      f.newCall(FakeRequest.get()), f.sleeper, s::runSync, throwing))
          .isInstanceOf(InternalError.class);
      unavailable = s.responsesServed().get(0);
      assertThat(unavailable.discards.get()).as("released").isEqualTo(1);
    } else {
      FakeResponse r;
      try {
        r = SyncRetryLoop.execute(f.newCall(FakeRequest.get()), f.sleeper, s::runSync, throwing);
      } catch (IOException | InterruptedException e) {
        throw new AssertionError(e);
      }
      unavailable = s.responsesServed().get(0);
      assertThat(r).as("the call ends with the response").isSameAs(unavailable);
      assertThat(unavailable.discards.get()).as("given to the caller, not released").isZero();
    }
    assertThat(s.attemptCount()).isEqualTo(1);
    assertThat(f.sleeper.sleeps()).isEmpty();
  }

  /**
   * Reserved at the decision (a response neither kept nor copied, 2 s backoff), a retry's permit is
   * granted whenever asking after the backoff granted it: the bucket is empty at the decision and
   * its next token comes within the backoff (1 s), which the retry then takes without a wait beyond
   * the backoff, whatever maxWait (0 included). The allowance is maxWait plus the backoff.
   */
  @ParameterizedTest
  @org.junit.jupiter.params.provider.ValueSource(longs = {0, 3000})
  void aPermitReservedAtTheDecisionIsGrantedForATokenThatComesWithinTheBackoff(long maxWaitMs) {
    TestPolicy p = TestPolicy.create().backoff(Duration.ofSeconds(2), 2, Duration.ofSeconds(10));
    p.rateLimit.enabled(true).perSecond(1).burst(1).maxWait(Duration.ofMillis(maxWaitMs));
    EngineFixture f = EngineFixture.of(p);
    Script s = new Script(f.clock, respond(503), respond(200));
    CallResult r = Driver.SYNC.run(f, FakeRequest.get(), s);

    assertThat(r.status()).isEqualTo(200);
    assertThat(s.attemptCount()).isEqualTo(2);
    assertThat(f.sleeper.sleeps()).containsExactly(2 * S);
    assertThat(f.listener.events(RetryEvent.Type.RATE_LIMITED)).isEmpty();
  }

  /**
   * The edge of the allowance at the decision is the edge asking after the backoff had: a token due
   * 4 s on (2 s backoff, 2 s maxWait) is granted, as it was 2 s on with a 2 s wait; with a maxWait
   * of 1999 ms it is refused, as it was, and the call ends with the 503.
   */
  @ParameterizedTest
  @org.junit.jupiter.params.provider.CsvSource({"2000, true", "1999, false"})
  void aPermitReservedAtTheDecisionHasTheEdgeOfOneAskedAfterTheBackoff(
      long maxWaitMs, boolean granted) {
    TestPolicy p = TestPolicy.create().backoff(Duration.ofSeconds(2), 2, Duration.ofSeconds(10));
    p.rateLimit.enabled(true).perSecond(0.25).burst(1).maxWait(Duration.ofMillis(maxWaitMs));
    EngineFixture f = EngineFixture.of(p);
    Script s = new Script(f.clock, respond(503), respond(200));
    CallResult r = Driver.SYNC.run(f, FakeRequest.get(), s);

    if (granted) {
      assertThat(r.status()).isEqualTo(200);
      assertThat(s.attempts().get(1).startNanos - FakeClock.START_NANOS).isEqualTo(4 * S);
    } else {
      assertThat(r.response).isSameAs(s.responsesServed().get(0));
      assertThat(s.attemptCount()).isEqualTo(1);
    }
  }

  /**
   * A 429 pause under way at the decision: the allowance is maxWait (0) plus the backoff the pause
   * does not cover, as asking after the backoff found. A pause of 0.5 s, then a token 1.5 s later,
   * within the 3 s backoff: granted, the retry at 3 s. A pause of 3 s past a 2 s backoff, its token
   * due before its end: granted, the retry as the pause ends. A token 1 s past such a pause:
   * refused (the old order's wait after the pause was 1 s too, over maxWait 0), the call ends with
   * the 503.
   */
  @ParameterizedTest
  @org.junit.jupiter.params.provider.CsvSource({
    "500, 3000, 0.5, 3000",
    "3000, 2000, 0.5, 3000",
    "3000, 2000, 0.25, -1"
  })
  void aPermitReservedAtTheDecisionDuringAPauseIsGrantedAsAfterTheBackoff(
      long pauseMs, long backoffMs, double perSecond, long retryAtMs) {
    TestPolicy p =
        TestPolicy.create().backoff(Duration.ofMillis(backoffMs), 2, Duration.ofSeconds(10));
    p.rateLimit.enabled(true).perSecond(perSecond).burst(1);
    EngineFixture f = EngineFixture.of(p);
    RateLimiter bucket = (RateLimiter) f.newCall(FakeRequest.get()).state.limiter;
    Script s =
        new Script(
            f.clock,
            respond(503).during(() -> bucket.pauseUntil(f.clock.nanoTime() + pauseMs * MS)),
            respond(200));
    CallResult r = Driver.SYNC.run(f, FakeRequest.get(), s);

    if (retryAtMs >= 0) {
      assertThat(r.status()).isEqualTo(200);
      assertThat(s.attempts().get(1).startNanos - FakeClock.START_NANOS).isEqualTo(retryAtMs * MS);
    } else {
      assertThat(r.response).isSameAs(s.responsesServed().get(0));
      assertThat(s.attemptCount()).isEqualTo(1);
    }
  }

  /**
   * Two calls on one route (1/s, burst 1, maxWait 0). Call a's first attempt takes the only token;
   * its 503's retry (2 s backoff, its response neither kept nor copied) reserves its permit at the
   * decision, for the instant it starts: the token due 2 s on. Call b, asking 1 s on, is given the
   * token due then, as it was when a asked after its backoff; before, a's reservation had taken it
   * and b was refused. a's retry then starts on time with its own token, and a third call asking
   * then is refused: the rate holds.
   */
  @org.junit.jupiter.api.Test
  void aPermitReservedAtTheDecisionLeavesTheTokensBeforeTheRetrysStartToOtherCalls()
      throws Exception {
    EngineFixture f = EngineFixture.of(oneAPerSecondTwoSecondBackoff());
    RetryCall a = aRetryReservedAtItsDecisionOnAnEmptyBucket(f);

    f.clock.advance(S);
    Script b = new Script(f.clock, respond(200));
    CallResult rb = Driver.SYNC.run(f, FakeRequest.get(), b);
    assertThat(rb.error).isNull();
    assertThat(rb.status()).isEqualTo(200);

    f.clock.advance(S);
    assertThat(a.reservePermit()).as("a's retry starts with its own token").isZero();
    a.beginAttempt();
    CallResult rc = Driver.SYNC.run(f, FakeRequest.get(), new Script(f.clock, respond(200)));
    assertThat(rc.error).isInstanceOf(RateLimitedException.class);
  }

  /**
   * A permit reserved ahead at the decision and never used (the call ends during the backoff) goes
   * back exactly once: the bucket is as if it had not been asked (empty at the decision, half a
   * token 500 ms on), not a token richer.
   */
  @org.junit.jupiter.api.Test
  void aPermitReservedAheadAndNotUsedGoesBackAsIfNeverAsked() throws Exception {
    EngineFixture f = EngineFixture.of(oneAPerSecondTwoSecondBackoff());
    RetryCall a = aRetryReservedAtItsDecisionOnAnEmptyBucket(f);
    RateLimiter bucket = (RateLimiter) a.state.limiter;

    f.clock.advance(500 * MS);
    a.retryNotScheduled(null);
    assertThat(bucket.availableTokens(f.clock.nanoTime())).isCloseTo(0.5, within(1e-9));
    f.clock.advance(2 * S);
    assertThat(bucket.availableTokens(f.clock.nanoTime())).isEqualTo(1.0);
    assertThat(bucket.isIdle(f.clock.nanoTime())).isTrue();
  }

  /**
   * A retry's permit reserved ahead after a slow copy that made none (500 ms; 0.9/s, burst 1,
   * maxWait 1 s, 2 s backoff): the retry starts 2 s after its decision, so its token is the one due
   * by then. Reserved for 2 s after the ask instead (2.5 s after the decision), another call asking
   * during the backoff took the token due at 1.11 s, and the retry started at 2 s on the token due
   * at 2.22 s: two attempts 0.89 s apart on a bucket that allows one each 1.11 s.
   */
  @org.junit.jupiter.api.Test
  void aPermitReservedAheadAfterASlowCopyHoldsTheTokenDueByTheRetrysStart() throws Exception {
    TestPolicy p = TestPolicy.create().backoff(Duration.ofSeconds(2), 2, Duration.ofSeconds(10));
    p.rateLimit.enabled(true).perSecond(0.9).burst(1).maxWait(Duration.ofSeconds(1));
    EngineFixture f = EngineFixture.of(p);
    ResponseAccess<FakeResponse> slowCopy = copyMakingNoneIn500Ms(f);
    List<Long> grants = new java.util.ArrayList<>();
    grants.add(0L); // a's first attempt, on the bucket's one token
    RetryCall b = f.newCall(FakeRequest.get());
    f.sleeper.duringNextSleep(
        () -> {
          try {
            grants.add(f.clock.nanoTime() + b.reservePermit() - FakeClock.START_NANOS);
          } catch (RateLimitedException refused) {
            // no token for b before the one a's retry holds
          }
        });
    Script s = new Script(f.clock, respond(503), respond(200));
    FakeResponse r =
        SyncRetryLoop.execute(f.newCall(FakeRequest.get()), f.sleeper, s::runSync, slowCopy);

    assertThat(r.status).isEqualTo(200);
    assertThat(s.attempts().get(1).startNanos - FakeClock.START_NANOS)
        .as("sleeps %s grants %s", f.sleeper.sleeps(), grants)
        .isEqualTo(2 * S);
    grants.add(2 * S);
    grants.sort(null);
    // At most burst + rate x window attempts in any window between two of them.
    for (int i = 0; i < grants.size(); i++) {
      for (int j = i + 1; j < grants.size(); j++) {
        double allowed = 1 + 0.9 * (grants.get(j) - grants.get(i)) / 1e9;
        assertThat((double) (j - i + 1))
            .as("attempts at %s (ns)", grants)
            .isLessThanOrEqualTo(allowed);
      }
    }
  }

  /** An access whose copy reads the body for 500 ms and makes none (over the limit). */
  private static ResponseAccess<FakeResponse> copyMakingNoneIn500Ms(EngineFixture f) {
    return new FakeResponse.Delegating() {
      @Override
      public FakeResponse copyToGiveBack(FakeResponse response) {
        f.clock.advance(500 * MS);
        return null;
      }
    };
  }

  private static TestPolicy oneAPerSecondTwoSecondBackoff() {
    TestPolicy p = TestPolicy.create().backoff(Duration.ofSeconds(2), 2, Duration.ofSeconds(10));
    p.rateLimit.enabled(true).perSecond(1).burst(1);
    return p;
  }

  /** A call whose first attempt took the bucket's only token, its 503's retry's permit reserved. */
  private static RetryCall aRetryReservedAtItsDecisionOnAnEmptyBucket(EngineFixture f)
      throws Exception {
    RetryCall a = f.newCall(FakeRequest.get());
    assertThat(a.reservePermit()).isZero();
    a.beginAttempt();
    assertThat(a.onResponse(503, null).delayNanos()).isEqualTo(2 * S);
    assertThat(a.reserveRetryPermit()).as("the backoff").isEqualTo(2 * S);
    return a;
  }
}
