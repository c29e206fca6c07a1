package dev.retryagent.engine;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.retryagent.policy.RateLimitPolicy;
import dev.retryagent.testing.FakeRequest;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/**
 * A step of a call on a thread of many calls' work is marked so ({@link SharedThreads}), and a
 * shared limit's ask says so ({@code mayBlock} false): a fleet limit then never waits on Redis for
 * a connection there, which would hold every other due retry of the JVM.
 */
class SharedThreadsTest {
  /** A fleet limit that grants at once and records how each ask came. */
  static final class Recording implements FleetLimits, PermitLimiter {
    final List<Boolean> reserves = new CopyOnWriteArrayList<>();
    final List<Boolean> looks = new CopyOnWriteArrayList<>();
    volatile long pause;

    @Override
    public PermitLimiter limiter(String route, RateLimitPolicy limit, Duration retryAfterMax) {
      return this;
    }

    @Override
    public List<FleetRouteCounters> counters() {
      return List.of();
    }

    @Override
    public boolean shared() {
      return true;
    }

    @Override
    public long reserve(long nowNanos, long maxPermitWaitNanos, long maxTotalWaitNanos) {
      return reserve(nowNanos, maxPermitWaitNanos, maxTotalWaitNanos, true);
    }

    @Override
    public long reserve(
        long nowNanos, long maxPermitWaitNanos, long maxTotalWaitNanos, boolean mayBlock) {
      reserves.add(mayBlock);
      return 0;
    }

    @Override
    public long pauseAfterWaitNanos(long nowNanos, long maxLookNanos, boolean mayBlock) {
      looks.add(mayBlock);
      return 0;
    }

    @Override
    public void pause(long nowNanos, long pauseNanos) {}

    @Override
    public long pauseRemainingNanos(long nowNanos) {
      return 0;
    }
  }

  private static TestPolicy fleetPolicy() {
    TestPolicy p = TestPolicy.create();
    p.rateLimit.enabled(true).perSecond(1000).burst(100).scope(RateLimitPolicy.Scope.FLEET);
    return p;
  }

  @Test
  void aTaskOfTheSharedSchedulerRunsMarkedAndTheMarkEndsWithIt() {
    SharedScheduler scheduler = new SharedScheduler();
    AtomicReference<Boolean> inTask = new AtomicReference<>();
    scheduler.schedule(() -> inTask.set(SharedThreads.here()), 0);
    await().atMost(Duration.ofSeconds(10)).until(() -> inTask.get() != null);

    assertThat(inTask.get()).isTrue();
    assertThat(SharedThreads.here()).as("the thread that scheduled it").isFalse();
  }

  @Test
  void aMarkNestsAndEndsWithItsOwnExit() {
    boolean outer = SharedThreads.enter();
    boolean inner = SharedThreads.enter();
    SharedThreads.exit(inner);
    boolean afterInner = SharedThreads.here();
    SharedThreads.exit(outer);

    assertThat(outer).isFalse();
    assertThat(inner).isTrue();
    assertThat(afterInner).isTrue();
    assertThat(SharedThreads.here()).isFalse();
  }

  @Test
  void aFleetAskOnAMarkedThreadSaysItMustNotBlockAndElsewhereThatItMay() throws Exception {
    Recording fleet = new Recording();
    EngineFixture f = EngineFixture.of(fleetPolicy());
    f.engine.useFleet(fleet);

    RetryCall onCaller = f.engine.newCall(FakeRequest.get());
    onCaller.reservePermit();
    onCaller.reservePermitAfterWait();
    RetryCall onShared = f.engine.newCall(FakeRequest.get());
    boolean marked = SharedThreads.enter();
    try {
      onShared.reservePermit();
      onShared.reservePermitAfterWait();
    } finally {
      SharedThreads.exit(marked);
    }

    assertThat(fleet.reserves).containsExactly(true, false);
    assertThat(fleet.looks).containsExactly(true, false);
  }

  @Test
  void anAsynchronousRetryOnTheSharedSchedulerAsksWithoutBlockingTheFirstAttemptMayBlock() {
    Recording fleet = new Recording();
    TestPolicy p = fleetPolicy().backoff(Duration.ofMillis(1), 1.0, Duration.ofMillis(1));
    p.retry.maxAttempts(2);
    // The engine's own scheduler: the shared one, as in production.
    RetryEngine engine = RetryEngine.builder().policy(p.build()).build();
    engine.useFleet(fleet);
    List<Integer> statuses = new CopyOnWriteArrayList<>();
    AsyncRetryLoop.execute(
            engine,
            engine.newCall(FakeRequest.get()),
            (n, timeout) -> CompletableFuture.completedFuture(FakeResponse.of(n == 1 ? 503 : 200)),
            FakeResponse.ACCESS)
        .thenAccept(r -> statuses.add(r.status));
    await().atMost(Duration.ofSeconds(10)).until(() -> statuses.size() == 1);

    assertThat(statuses).containsExactly(200);
    // The first attempt's ask on the caller's thread, the retry's on the scheduler's.
    assertThat(fleet.reserves).containsExactly(true, false);
  }
}
