package dev.retryagent.engine;

import static dev.retryagent.engine.Script.respond;
import static org.assertj.core.api.Assertions.assertThat;

import dev.retryagent.policy.RateLimitPolicy;
import dev.retryagent.testing.FakeRequest;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * A limit shared with other JVMs (the fleet's, in Redis) may wait on its store in {@code reserve}:
 * a connection from its pool, a connect, the reply. The call's lock is not held across it: held, a
 * slow store held up every thread that touched the call (its cancel among them), and on JDK 21 to
 * 23 a virtual thread blocked inside {@code synchronized} pinned its carrier (docs/guarantees.md:
 * no wait inside a {@code synchronized}).
 */
class FleetPermitOutsideLockTest {
  private static final long MS = 1_000_000L;

  /** A shared limit that notes whether the caller's call was locked when it was asked. */
  static final class WatchingLimiter implements PermitLimiter {
    final AtomicReference<RetryCall> call = new AtomicReference<>();
    final AtomicInteger reserves = new AtomicInteger();
    final AtomicInteger reservesUnderLock = new AtomicInteger();
    final AtomicInteger looksUnderLock = new AtomicInteger();
    final AtomicLong nextWait = new AtomicLong();
    final AtomicLong nextPauseAfterWait = new AtomicLong();
    volatile CountDownLatch entered;
    volatile CountDownLatch reply;

    @Override
    public long reserve(long nowNanos, long maxPermitWaitNanos, long maxTotalWaitNanos) {
      reserves.incrementAndGet();
      RetryCall c = call.get();
      if (c != null && Thread.holdsLock(c)) {
        reservesUnderLock.incrementAndGet();
      }
      CountDownLatch in = entered;
      CountDownLatch out = reply;
      if (in != null) {
        in.countDown(); // the round trip is under way
        try {
          // Bounded, and longer than the test's wait for the cancel: a cancel that waits for the
          // reply fails the test, never this.
          out.await(60, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      }
      return nextWait.get();
    }

    @Override
    public void pause(long nowNanos, long pauseNanos) {}

    @Override
    public long pauseRemainingNanos(long nowNanos) {
      return 0;
    }

    @Override
    public long pauseAfterWaitNanos(long nowNanos, long maxLookNanos) {
      RetryCall c = call.get();
      if (c != null && Thread.holdsLock(c)) {
        looksUnderLock.incrementAndGet();
      }
      return nextPauseAfterWait.getAndSet(0); // another JVM's pause, heard once
    }
  }

  private static EngineFixture fleetEngine(WatchingLimiter limiter) {
    TestPolicy p = TestPolicy.create();
    p.retry.maxAttempts(3);
    p.rateLimit
        .enabled(true)
        .perSecond(1)
        .burst(1)
        .maxWait(Duration.ofSeconds(5))
        .scope(RateLimitPolicy.Scope.FLEET);
    EngineFixture f = EngineFixture.of(p);
    f.engine.useFleet(
        new FleetLimits() {
          @Override
          public PermitLimiter limiter(
              String route, RateLimitPolicy limit, Duration retryAfterMax) {
            return limiter;
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
    return f;
  }

  /**
   * Every reserve of a shared limit runs outside the call's lock: the first attempt's, a retry's
   * reserved at its decision, and the one made again after a wait that a pause began during.
   */
  @Test
  void eachReserveOfASharedLimitRunsWithoutTheCallsLock() throws Exception {
    WatchingLimiter limiter = new WatchingLimiter();
    EngineFixture f = fleetEngine(limiter);
    RetryCall x = f.newCall(FakeRequest.get());
    limiter.call.set(x);

    assertThat(x.reservePermit()).isZero(); // the first attempt's permit
    x.beginAttempt();
    Decision d = x.onResponse(503, null);
    assertThat(d.retry()).isTrue();
    limiter.nextWait.set(300 * MS); // due past the 100 ms backoff: the retry's delay
    assertThat(x.reserveRetryPermit()).isEqualTo(300 * MS); // reserved at the decision
    assertThat(limiter.reserves).hasValue(2);
    // Another JVM paused the route during the wait: the look after it hears of the pause, and the
    // retry asks for its permit again, after the pause.
    limiter.nextPauseAfterWait.set(2_000 * MS);
    limiter.nextWait.set(2_000 * MS);
    assertThat(x.reservePermit()).isEqualTo(2_000 * MS);
    assertThat(x.reservePermitAfterWait()).isZero();
    x.beginAttempt();
    assertThat(x.onResponse(200, null).retry()).isFalse();

    assertThat(limiter.reserves).hasValue(3);
    assertThat(limiter.reservesUnderLock).hasValue(0);
    assertThat(limiter.looksUnderLock).hasValue(0);
  }

  /** The same through the loops: a retried call never asks a shared limit under its lock. */
  @ParameterizedTest
  @EnumSource(Drivers.class)
  void aRetriedCallThroughTheLoopsNeverAsksUnderItsLock(Drivers driver) {
    WatchingLimiter limiter = new WatchingLimiter();
    EngineFixture f = fleetEngine(limiter);
    Script script = new Script(f.clock, respond(503), respond(200));

    CallResult r = driver.driver.run(f, FakeRequest.get(), script, limiter.call::set);

    assertThat(r.status()).isEqualTo(200);
    assertThat(script.attemptCount()).isEqualTo(2);
    assertThat(limiter.reserves.get()).isGreaterThanOrEqualTo(2);
    assertThat(limiter.reservesUnderLock).hasValue(0);
  }

  enum Drivers {
    SYNC(Driver.SYNC),
    ASYNC(Driver.ASYNC);

    final Driver driver;

    Drivers(Driver driver) {
      this.driver = driver;
    }
  }

  /**
   * The caller cancels while the shared limit's store has not answered: the cancel goes through at
   * once (it waited for the store's reply before), and the permit the store then grants is spent,
   * held by nobody: the call's end is told once, as cancelled, and no wait event follows it.
   */
  @Test
  void aCancelWhileTheStoreIsAskedEndsTheCallAtOnceAndThePermitGrantedThenIsSpent()
      throws Exception {
    WatchingLimiter limiter = new WatchingLimiter();
    EngineFixture f = fleetEngine(limiter);
    RetryCall x = f.newCall(FakeRequest.get());
    limiter.call.set(x);
    limiter.entered = new CountDownLatch(1);
    limiter.reply = new CountDownLatch(1);
    limiter.nextWait.set(300 * MS); // would be told as a RATE_LIMITED wait
    ExecutorService caller = Executors.newSingleThreadExecutor();
    ExecutorService canceller = Executors.newSingleThreadExecutor();
    try {
      Future<Long> permit = caller.submit(x::reservePermit);
      assertThat(limiter.entered.await(10, TimeUnit.SECONDS)).isTrue();

      // Before the store answers (it waited for the reply while the call's lock was held).
      CompletableFuture.runAsync(x::onAbandoned, canceller).get(5, TimeUnit.SECONDS);
      assertThat(x.isFinished()).isTrue();

      limiter.reply.countDown();
      // The permit's wait, as granted: it is spent whatever the adapter does next.
      assertThat(permit.get(10, TimeUnit.SECONDS)).isEqualTo(300 * MS);
    } finally {
      limiter.reply.countDown();
      caller.shutdownNow();
      canceller.shutdownNow();
    }

    assertThat(limiter.reserves).hasValue(1);
    assertThat(limiter.reservesUnderLock).hasValue(0);
    assertThat(f.listener.events(RetryEvent.Type.RATE_LIMITED)).isEmpty();
    List<RetryEvent> giveUps = f.listener.events(RetryEvent.Type.GIVE_UP);
    assertThat(giveUps).hasSize(1);
    assertThat(giveUps.get(0).reason()).isEqualTo(GiveUpReason.CANCELLED);
    // Nothing held to give back or to take again: the attempt the adapter may still begin finds
    // the call ended, and no second permit is asked for.
    assertThat(x.reservePermitAfterWait()).isZero();
    assertThat(limiter.reserves).hasValue(1);
  }

  /**
   * As above, the store refusing the permit after the cancel went through: the refusal has no say
   * (a cancelled call goes to its attempt's end): no RATE_LIMITED event after the end told, no
   * RateLimitedException in place of the cancel, the end told once. Before, the refusal was told
   * after the GIVE_UP and the caller got the rate limit's exception.
   */
  @Test
  void aRefusalTheStoreAnswersAfterACancelHasNoSay() throws Exception {
    WatchingLimiter limiter = new WatchingLimiter();
    EngineFixture f = fleetEngine(limiter);
    RetryCall x = f.newCall(FakeRequest.get());
    limiter.call.set(x);
    limiter.entered = new CountDownLatch(1);
    limiter.reply = new CountDownLatch(1);
    limiter.nextWait.set(PermitLimiter.REJECTED);
    ExecutorService caller = Executors.newSingleThreadExecutor();
    ExecutorService canceller = Executors.newSingleThreadExecutor();
    try {
      Future<Long> permit = caller.submit(x::reservePermit);
      assertThat(limiter.entered.await(10, TimeUnit.SECONDS)).isTrue();
      CompletableFuture.runAsync(x::onAbandoned, canceller).get(5, TimeUnit.SECONDS);
      assertThat(x.isFinished()).isTrue();

      limiter.reply.countDown();
      assertThat(permit.get(10, TimeUnit.SECONDS)).isZero();
    } finally {
      limiter.reply.countDown();
      caller.shutdownNow();
      canceller.shutdownNow();
    }

    assertThat(f.listener.events(RetryEvent.Type.RATE_LIMITED)).isEmpty();
    List<RetryEvent> giveUps = f.listener.events(RetryEvent.Type.GIVE_UP);
    assertThat(giveUps).hasSize(1);
    assertThat(giveUps.get(0).reason()).isEqualTo(GiveUpReason.CANCELLED);
  }
}
