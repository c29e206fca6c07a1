package dev.retryagent.engine;

import static dev.retryagent.engine.Script.fail;
import static dev.retryagent.engine.Script.respond;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.retryagent.policy.Policy;
import dev.retryagent.policy.RateLimitPolicy;
import dev.retryagent.testing.FakeRequest;
import java.net.SocketException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/**
 * The engine failing (issue 14, "The agent failing"): a bug of its own never reaches a call. The
 * call goes on as it would without the agent, and one line says so, once per cause.
 */
class EngineFailuresTest {
  private final FakeClock clock = new FakeClock();
  private final RecordingSleeper sleeper = new RecordingSleeper(clock);
  private final List<String> errors = new ArrayList<>();

  private RetryEngine.Builder engine() {
    return RetryEngine.builder()
        .clock(clock)
        .sleeper(sleeper)
        .scheduler(new ManualScheduler(clock))
        .random(new ScriptedRandom(0.5))
        .errors(errors::add)
        .policy(TestPolicy.create().build());
  }

  private static PolicyResolver throwing(RuntimeException e) {
    return (method, host, port, path) -> {
      throw e;
    };
  }

  @Test
  void aCallTheEngineFailsToStartPassesThroughAndIsSaidOncePerCause() {
    RetryEngine e = engine().policies(throwing(new IllegalStateException("boom"))).build();

    RetryCall first = e.newCall(FakeRequest.get());
    RetryCall second = e.newCall(FakeRequest.get());

    assertThat(first.passThrough()).isTrue();
    assertThat(second.passThrough()).isTrue();
    assertThat(errors).hasSize(1);
    assertThat(errors.get(0))
        .startsWith(
            "retry-agent: internal error while starting a call (java.lang.IllegalStateException at"
                + " ")
        .endsWith("; the call runs as it would without the agent (said once for this cause)")
        .doesNotContain("boom");

    RetryEngine other = engine().policies(throwing(new NullPointerException())).build();
    other.newCall(FakeRequest.get());
    assertThat(errors).as("another cause, another engine: said again").hasSize(2);
  }

  @Test
  void aPassThroughCallRunsTheAttemptOnceAndReturnsWhatTheClientGave() throws Exception {
    RetryEngine e = engine().policies(throwing(new IllegalStateException())).build();
    Script script = new Script(clock, respond(503), respond(200));
    RetryCall call = e.newCall(FakeRequest.get());

    // An adapter sends a pass-through call straight to the client, once.
    assertThat(call.passThrough()).isTrue();
    FakeResponse r = script.runSync(1, -1);

    assertThat(r.status).isEqualTo(503);
    assertThat(script.attemptCount()).isEqualTo(1);
  }

  @Test
  void aFailureWhileDecidingEndsTheCallWithThatAttemptsResponse() throws Exception {
    // The jitter's random source breaks: the engine cannot compute a backoff.
    RandomSource broken =
        () -> {
          throw new ArithmeticException("broken");
        };
    RetryEngine e = engine().random(broken).build();
    Script script = new Script(clock, respond(503), respond(200));
    RetryCall call = e.newCall(FakeRequest.get());

    FakeResponse r = SyncRetryLoop.execute(call, e.sleeper(), script::runSync, FakeResponse.ACCESS);

    assertThat(r.status).as("the first attempt's response, as without the agent").isEqualTo(503);
    assertThat(script.attemptCount()).isEqualTo(1);
    assertThat(r.discards.get()).isZero();
    assertThat(call.isFinished()).isTrue();
    assertThat(sleeper.sleeps()).isEmpty();
    assertThat(errors)
        .singleElement()
        .satisfies(
            line ->
                assertThat(line)
                    .startsWith(
                        "retry-agent: internal error while deciding after an attempt"
                            + " (java.lang.ArithmeticException at ")
                    .endsWith(
                        "; the call ends with that attempt's outcome, not retried (said once for"
                            + " this cause)"));

    // The same bug on a failed attempt: the client's own exception reaches the caller.
    SocketException reset = new SocketException("Connection reset");
    Script failing = new Script(clock, fail(reset), respond(200));
    RetryCall again = e.newCall(FakeRequest.get());
    assertThatThrownBy(
            () -> SyncRetryLoop.execute(again, e.sleeper(), failing::runSync, FakeResponse.ACCESS))
        .isSameAs(reset);
    assertThat(failing.attemptCount()).isEqualTo(1);
    assertThat(errors).as("the same cause: said once").hasSize(1);
  }

  @Test
  void aFailingListenerNeverStopsRetriesNorTheOtherListenersAndIsSaidOnce() throws Exception {
    RecordingListener after = new RecordingListener();
    RetryListener failing =
        new RetryListener() {
          @Override
          public void onAttempt(RetryEvent event) {
            throw new IllegalStateException("listener bug");
          }

          @Override
          public void onRetry(RetryEvent event) {
            throw new NoClassDefFoundError("missing/Dependency");
          }
        };
    RetryEngine e = engine().listener(failing).listener(after).build();

    for (int i = 0; i < 3; i++) {
      Script script = new Script(clock, respond(503), respond(200));
      FakeResponse r =
          SyncRetryLoop.execute(
              e.newCall(FakeRequest.get()), e.sleeper(), script::runSync, FakeResponse.ACCESS);
      assertThat(r.status).isEqualTo(200);
      assertThat(script.attemptCount()).isEqualTo(2);
    }

    assertThat(after.events(RetryEvent.Type.RETRY))
        .as("the next listener still hears every retry")
        .hasSize(3);
    assertThat(errors).hasSize(2);
    assertThat(errors.get(0))
        .contains("while telling " + failing.getClass().getName() + " about an event")
        .contains("(java.lang.IllegalStateException at ")
        .contains("the call goes on, without what that listener records");
    assertThat(errors.get(1)).contains("(java.lang.NoClassDefFoundError at ");
  }

  /** A fleet whose limiter grants the first permit, then throws: a bug of the fleet's own. */
  private static FleetLimits fleetFailingAfterOnePermit(RuntimeException bug) {
    PermitLimiter limiter =
        new PermitLimiter() {
          private int reserved;

          @Override
          public synchronized long reserve(long now, long maxPermitWait, long maxTotalWait) {
            if (reserved++ > 0) {
              throw bug;
            }
            return 0;
          }

          @Override
          public void pause(long nowNanos, long pauseNanos) {}

          @Override
          public long pauseRemainingNanos(long nowNanos) {
            return 0;
          }
        };
    return new FleetLimits() {
      @Override
      public PermitLimiter limiter(String route, RateLimitPolicy limit, Duration retryAfterMax) {
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
    };
  }

  private RetryEngine engineWithAFleetThatFailsOnItsSecondPermit(ManualScheduler scheduler) {
    TestPolicy p = TestPolicy.create();
    p.rateLimit.enabled(true).perSecond(100).burst(100).scope(RateLimitPolicy.Scope.FLEET);
    RetryEngine e = engine().scheduler(scheduler).policy(p.build()).build();
    e.useFleet(fleetFailingAfterOnePermit(new IllegalStateException("fleet bug")));
    return e;
  }

  @Test
  void aRateLimiterThatThrowsIsSaidOnceAndTheRetryGoesOnWithoutAPermit() throws Exception {
    RetryEngine e = engineWithAFleetThatFailsOnItsSecondPermit(new ManualScheduler(clock));
    Script script = new Script(clock, respond(503), respond(200));
    RetryCall call = e.newCall(FakeRequest.get());

    // Before, the limiter's IllegalStateException reached the caller, the 503 discarded.
    FakeResponse r = SyncRetryLoop.execute(call, e.sleeper(), script::runSync, FakeResponse.ACCESS);

    assertThat(r.status).isEqualTo(200);
    assertThat(script.attemptCount()).isEqualTo(2);
    assertThat(call.isFinished()).isTrue();
    Script next = new Script(clock, respond(200));
    assertThat(
            SyncRetryLoop.execute(
                    e.newCall(FakeRequest.get()), e.sleeper(), next::runSync, FakeResponse.ACCESS)
                .status)
        .as("a later call")
        .isEqualTo(200);
    assertThat(errors)
        .singleElement()
        .satisfies(
            line ->
                assertThat(line)
                    .startsWith(
                        "retry-agent: internal error while taking a rate-limit permit"
                            + " (java.lang.IllegalStateException at ")
                    .endsWith(
                        "; the attempt goes without waiting for a permit (said once for this"
                            + " cause)")
                    .doesNotContain("fleet bug"));
  }

  @Test
  void aRateLimiterThatThrowsInAnAsynchronousRetrysTaskNeverLeavesTheFutureHanging() {
    ManualScheduler scheduler = new ManualScheduler(clock);
    RetryEngine e = engineWithAFleetThatFailsOnItsSecondPermit(scheduler);
    Script script = new Script(clock, respond(503), respond(200));

    CompletableFuture<FakeResponse> result =
        AsyncRetryLoop.execute(
            e, e.newCall(FakeRequest.get()), script::runAsync, FakeResponse.ACCESS);
    // The retry's wait ends on a scheduler thread, which takes the permit there. Before, the
    // limiter's exception left the task (a pool keeps it in the task's own future) and the
    // caller's future never completed.
    scheduler.runUntilIdle();

    assertThat(result).isCompleted();
    assertThat(result.join().status).isEqualTo(200);
    assertThat(script.attemptCount()).isEqualTo(2);
    assertThat(e.pendingAsyncRetries()).isZero();
    assertThat(errors).singleElement().asString().contains("while taking a rate-limit permit");
  }

  /** The adapter's reading of a response fails to link (a client's class it names is missing). */
  private static final ResponseAccess<FakeResponse> UNREADABLE =
      new ResponseAccess<FakeResponse>() {
        @Override
        public int status(FakeResponse response) {
          throw new NoClassDefFoundError("okhttp3/Response");
        }

        @Override
        public String header(FakeResponse response, String name) {
          return null;
        }

        @Override
        public void discard(FakeResponse response) {
          response.discards.incrementAndGet();
        }
      };

  @Test
  void aResponseTheAdapterFailsToReadGoesToTheCallerAsItCameAndIsSaidOnce() throws Exception {
    RetryEngine e = engine().build();
    Script script = new Script(clock, respond(503), respond(200));

    // Before, the NoClassDefFoundError reached the caller in place of the response.
    FakeResponse r =
        SyncRetryLoop.execute(
            e.newCall(FakeRequest.get()), e.sleeper(), script::runSync, UNREADABLE);

    assertThat(r.status).as("the client's own response, not retried").isEqualTo(503);
    assertThat(r.discards.get()).isZero();
    assertThat(script.attemptCount()).isEqualTo(1);
    assertThat(errors)
        .singleElement()
        .asString()
        .startsWith(
            "retry-agent: internal error while reading an attempt's response"
                + " (java.lang.NoClassDefFoundError at ")
        .endsWith("; the call ends with that response (said once for this cause)")
        .doesNotContain("okhttp3/Response");
  }

  @Test
  void anAsynchronousResponseTheAdapterFailsToReadCompletesTheFutureWithIt() {
    ManualScheduler scheduler = new ManualScheduler(clock);
    RetryEngine e = engine().scheduler(scheduler).build();
    Script script = new Script(clock, respond(503), respond(200));

    // Before, the error went into the stage whenComplete returned, which nobody reads: the
    // caller's future never completed.
    CompletableFuture<FakeResponse> result =
        AsyncRetryLoop.execute(e, e.newCall(FakeRequest.get()), script::runAsync, UNREADABLE);
    scheduler.runUntilIdle();

    assertThat(result).isCompleted();
    FakeResponse r = result.join();
    assertThat(r.status).isEqualTo(503);
    assertThat(r.discards.get()).isZero();
    assertThat(script.attemptCount()).isEqualTo(1);
    assertThat(errors)
        .singleElement()
        .asString()
        .contains("while judging an asynchronous attempt (java.lang.NoClassDefFoundError at ")
        .contains("the call ends with that attempt's outcome");
  }

  @Test
  void anAdapterThatThrowsAsARetrysWaitStartsEndsTheCallWithTheClientsFailure() {
    ManualScheduler scheduler = new ManualScheduler(clock);
    RetryEngine e = engine().scheduler(scheduler).build();
    SocketException reset = new SocketException("Connection reset");
    Script script = new Script(clock, fail(reset), respond(200));
    RetryCall call =
        e.begin(
            new OwnView() {
              @Override
              protected boolean waitStarts(RetryCall.Wait wait) {
                throw new IllegalStateException("adapter bug");
              }
            });

    CompletableFuture<FakeResponse> result =
        AsyncRetryLoop.execute(e, call, script::runAsync, FakeResponse.ACCESS);
    scheduler.runUntilIdle();

    assertThat(result).isCompletedExceptionally();
    assertThatThrownBy(result::join).hasCause(reset);
    assertThat(script.attemptCount()).isEqualTo(1);
    assertThat(call.isFinished()).isTrue();
    assertThat(errors).singleElement().asString().contains("(java.lang.IllegalStateException at ");
  }

  @Test
  void aRetrysTaskThatFailsCompletesTheFutureRatherThanLeavingItHanging() {
    ManualScheduler scheduler = new ManualScheduler(clock);
    RetryEngine e = engine().scheduler(scheduler).build();
    Script script = new Script(clock, respond(503), respond(200));
    RetryCall call =
        e.begin(
            new OwnView() {
              @Override
              protected boolean waitStarts(RetryCall.Wait wait) {
                return true;
              }

              @Override
              protected void waitEnds(RetryCall.Wait wait) {
                throw new IllegalStateException("adapter bug");
              }
            });

    CompletableFuture<FakeResponse> result =
        AsyncRetryLoop.execute(e, call, script::runAsync, FakeResponse.ACCESS);
    // Before, the task's exception left it (a pool keeps it in the task's own future) and the
    // caller's future never completed. The 503 was discarded for the retry: what is left to give
    // is the failure itself, as an I/O failure, the kind the client gives (it was the bug's own
    // IllegalStateException, in a CompletionException).
    scheduler.runUntilIdle();

    assertThat(result).isCompletedExceptionally();
    assertThatThrownBy(result::join)
        .isInstanceOf(java.util.concurrent.CompletionException.class)
        .cause()
        .isInstanceOf(java.io.IOException.class)
        .hasMessage("retry-agent: internal error")
        .cause()
        .isInstanceOf(IllegalStateException.class);
    assertThat(call.isFinished()).isTrue();
    assertThat(e.pendingAsyncRetries()).isZero();
    assertThat(errors)
        .singleElement()
        .asString()
        .contains("while going on after a wait (java.lang.IllegalStateException at ");
  }

  @Test
  void aListenerThatOverflowsItsStackIsIsolatedAsAnyOtherFailingListener() throws Exception {
    // A listener's own runaway recursion: by the time the engine catches it, the stack is unwound.
    RetryListener recursing =
        new RetryListener() {
          @Override
          public void onAttempt(RetryEvent event) {
            throw new StackOverflowError();
          }
        };
    RecordingListener after = new RecordingListener();
    RetryEngine e = engine().listener(recursing).listener(after).build();
    Script script = new Script(clock, respond(503), respond(200));

    // Before, the StackOverflowError reached the caller as the first attempt began.
    FakeResponse r =
        SyncRetryLoop.execute(
            e.newCall(FakeRequest.get()), e.sleeper(), script::runSync, FakeResponse.ACCESS);

    assertThat(r.status).isEqualTo(200);
    assertThat(script.attemptCount()).isEqualTo(2);
    assertThat(after.events(RetryEvent.Type.RETRY)).hasSize(1);
    assertThat(errors)
        .singleElement()
        .asString()
        .contains("while telling " + recursing.getClass().getName() + " about an event")
        .contains("(java.lang.StackOverflowError");
  }

  @Test
  void reportsAreBoundedInNumberOfCauses() {
    InternalErrors reporter = new InternalErrors(errors::add);
    for (int i = 0; i < 1000; i++) {
      reporter.report("step " + i, new IllegalStateException(), "nothing");
    }
    assertThat(errors).hasSize(InternalErrors.MAX_CAUSES);
  }

  @Test
  void aSinkThatThrowsIsNotAFailureOfTheCall() {
    RetryEngine e =
        engine()
            .errors(
                line -> {
                  throw new IllegalStateException("no stderr");
                })
            .policies(throwing(new IllegalStateException()))
            .build();
    assertThat(e.newCall(FakeRequest.get()).passThrough()).isTrue();
  }

  @Test
  void theDefaultPolicyStillWorksForCallsThatStartWell() {
    RetryEngine e = engine().policy(Policy.defaults()).build();
    assertThat(e.newCall(FakeRequest.get()).passThrough()).isFalse();
    assertThat(errors).isEmpty();
  }

  /** The test's clock, but for the failures a test arms: as a time service or a class missing. */
  private final class BreakingClock implements Clock {
    private final java.util.concurrent.atomic.AtomicInteger nanoReadsLeft =
        new java.util.concurrent.atomic.AtomicInteger(-1);
    private volatile boolean wallFails;

    /** The {@code n}th read of {@link #nanoTime} from now, and each after, throws. */
    void failNanoReadFromNow(int n) {
      nanoReadsLeft.set(n);
    }

    void failWall(boolean fails) {
      wallFails = fails;
    }

    void heal() {
      nanoReadsLeft.set(-1);
      wallFails = false;
    }

    @Override
    public long nanoTime() {
      if (nanoReadsLeft.get() > 0 && nanoReadsLeft.decrementAndGet() == 0) {
        nanoReadsLeft.set(1); // and each after
        throw new NoClassDefFoundError("missing/Dependency");
      }
      return clock.nanoTime();
    }

    @Override
    public long wallMillis() {
      if (wallFails) {
        throw new IllegalStateException("wall clock unavailable");
      }
      return clock.wallMillis();
    }
  }

  /** A breaker that opens on one failed call, for 1 s, and lets one trial through then. */
  private RetryEngine engineWithABreakerThatOpensOnOneFailure(Clock c, RetryListener listener) {
    TestPolicy p = TestPolicy.create();
    p.retry.maxAttempts(1);
    p.breaker
        .countWindow(1)
        .minimumCalls(1)
        .failureRateThreshold(1.0)
        .openFor(Duration.ofSeconds(1))
        .halfOpenCalls(1);
    RetryEngine.Builder b = engine().clock(c).policy(p.build());
    if (listener != null) {
      b.listener(listener);
    }
    return b.build();
  }

  private FakeResponse callOnce(RetryEngine e, int status) throws Exception {
    Script script = new Script(clock, respond(status));
    return SyncRetryLoop.execute(
        e.newCall(FakeRequest.get()), e.sleeper(), script::runSync, FakeResponse.ACCESS);
  }

  @Test
  void aFailureWhileTheOpenBreakerRefusesLetsTheAttemptGoAsWithoutTheAgentAndIsSaidOnce()
      throws Exception {
    BreakingClock c = new BreakingClock();
    RetryEngine e = engineWithABreakerThatOpensOnOneFailure(c, null);
    assertThat(callOnce(e, 503).status).isEqualTo(503);
    assertThat(e.breakers())
        .singleElement()
        .extracting(CircuitBreaker::state)
        .isEqualTo(CircuitState.OPEN);

    // The breaker's refusal reads the wall clock for when it lets trials through: failing, it
    // threw out of beginAttempt to the caller, outside the loop's guard.
    c.failWall(true);
    Script script = new Script(clock, respond(200));
    FakeResponse r =
        SyncRetryLoop.execute(
            e.newCall(FakeRequest.get()), e.sleeper(), script::runSync, FakeResponse.ACCESS);

    assertThat(r.status).as("the attempt goes, as without the agent").isEqualTo(200);
    assertThat(script.attemptCount()).isEqualTo(1);
    assertThat(errors)
        .singleElement()
        .satisfies(
            line ->
                assertThat(line)
                    .startsWith(
                        "retry-agent: internal error while asking the circuit breaker for a"
                            + " permit (java.lang.IllegalStateException at ")
                    .endsWith(
                        "; the attempt goes without the circuit breaker (said once for this"
                            + " cause)")
                    .doesNotContain("wall clock unavailable"));
    c.heal();
    assertThatThrownBy(() -> callOnce(e, 200))
        .as("the breaker, untouched, refuses once it can")
        .isInstanceOf(CircuitBreakerOpenException.class);
  }

  @Test
  void aFailureAsAHalfOpenTrialStartsGivesTheTrialBackAndTheAttemptGoes() throws Exception {
    BreakingClock c = new BreakingClock();
    RetryEngine e = engineWithABreakerThatOpensOnOneFailure(c, null);
    assertThat(callOnce(e, 503).status).isEqualTo(503);
    clock.advance(Duration.ofSeconds(2));

    // The first read is the breaker's (its trial is taken), the second the attempt's start.
    c.failNanoReadFromNow(2);
    Script script = new Script(clock, respond(200));
    FakeResponse r =
        SyncRetryLoop.execute(
            e.newCall(FakeRequest.get()), e.sleeper(), script::runSync, FakeResponse.ACCESS);
    assertThat(r.status).isEqualTo(200);
    assertThat(errors)
        .singleElement()
        .asString()
        .contains("while starting an attempt (java.lang.NoClassDefFoundError at ")
        .endsWith("; the attempt goes without the circuit breaker (said once for this cause)");

    // Before, the trial stayed taken: the host was refused until the trials' time ran out.
    c.heal();
    assertThat(callOnce(e, 200).status).as("the trial, given back, is this call's").isEqualTo(200);
    assertThat(e.breakers())
        .singleElement()
        .extracting(CircuitBreaker::state)
        .isEqualTo(CircuitState.CLOSED);
  }

  @Test
  void whatTheListenersLetThroughAtAHalfOpenMoveLeavesNoTrialTaken() throws Exception {
    // Out of memory, a broken JVM: the one listener failure let through, on purpose. It left the
    // half-open trial the breaker had just issued in no one's hands, never given back.
    AtomicBoolean fail = new AtomicBoolean(true);
    RetryListener breaks =
        new RetryListener() {
          @Override
          public void onBreakerTransition(CircuitBreaker b, CircuitTransition t, String route) {
            if (t.to() == CircuitState.HALF_OPEN && fail.getAndSet(false)) {
              throw new InternalError("broken");
            }
          }
        };
    RetryEngine e = engineWithABreakerThatOpensOnOneFailure(clock, breaks);
    assertThat(callOnce(e, 503).status).isEqualTo(503);
    clock.advance(Duration.ofSeconds(2));

    assertThatThrownBy(() -> callOnce(e, 200)).isInstanceOf(InternalError.class);

    assertThat(callOnce(e, 200).status).as("the trial, given back, is this call's").isEqualTo(200);
    assertThat(e.breakers())
        .singleElement()
        .extracting(CircuitBreaker::state)
        .isEqualTo(CircuitState.CLOSED);
  }

  @Test
  void aFailureCountingTheClientsOwnResendStaysOutOfTheAttempt() throws Exception {
    // Told from inside the attempt (OkHttp's interceptor, Apache's exchange log): the clock's
    // failure there became the attempt's own, and reached the caller in place of its response.
    BreakingClock c = new BreakingClock();
    RetryEngine e = engine().clock(c).build();
    RetryCall call = e.newCall(FakeRequest.get());
    FakeResponse r =
        SyncRetryLoop.execute(
            call,
            e.sleeper(),
            (n, timeout) -> {
              c.failNanoReadFromNow(1);
              call.clientRepeated(503); // the client sent the request again after a 503
              c.heal();
              return new FakeResponse(200);
            },
            FakeResponse.ACCESS);

    assertThat(r.status).isEqualTo(200);
    assertThat(call.attempt()).as("the resend, not counted").isEqualTo(1);
    assertThat(errors)
        .singleElement()
        .asString()
        .contains(
            "while counting a request the client sent again (java.lang.NoClassDefFoundError at ")
        .endsWith("; the resend is not counted (said once for this cause)");
  }

  /** A tracer of another's (RetryEngine.Builder.callContexts) that fails at {@code where}. */
  private static CallContext.Factory contextsFailingAt(String where) {
    return call ->
        new CallContext() {
          @Override
          public Scope enter() {
            if (where.equals("enter")) {
              throw new IllegalStateException("tracer: enter");
            }
            return () -> {
              if (where.equals("close")) {
                throw new NoClassDefFoundError("tracer/Scope");
              }
            };
          }

          @Override
          public Scope enterCaller() {
            return enter();
          }

          @Override
          public void end() {
            if (where.equals("end")) {
              throw new IllegalStateException("tracer: end");
            }
          }
        };
  }

  @Test
  void aCallContextOfAnothersThatThrowsNeverBecomesTheCallsOutcome() throws Exception {
    // Before: a scope that failed to enter failed the attempt with the tracer's exception (the
    // request never sent), one that failed to close lost the response, and an end that failed
    // replaced the call's outcome, each reaching the caller.
    for (String where : List.of("enter", "close", "end")) {
      errors.clear();
      RetryEngine e = engine().callContexts(contextsFailingAt(where)).build();
      Script script = new Script(clock, respond(503), respond(200));

      FakeResponse r =
          SyncRetryLoop.execute(
              e.newCall(FakeRequest.get()), e.sleeper(), script::runSync, FakeResponse.ACCESS);

      assertThat(r.status).as(where).isEqualTo(200);
      assertThat(script.attemptCount()).as(where).isEqualTo(2);
      assertThat(errors)
          .as(where)
          .singleElement()
          .asString()
          .contains(
              "while "
                  + (where.equals("enter")
                      ? "entering"
                      : where.equals("close") ? "leaving" : "ending")
                  + " a call's context (")
          .endsWith("; the call goes on, its outcome as it is (said once for this cause)")
          .doesNotContain("tracer:");
    }
  }

  @Test
  void anAsynchronousCallsContextOfAnothersThatThrowsNeverBecomesItsOutcome() {
    for (String where : List.of("enter", "close", "end")) {
      errors.clear();
      ManualScheduler scheduler = new ManualScheduler(clock);
      RetryEngine e = engine().scheduler(scheduler).callContexts(contextsFailingAt(where)).build();
      Script script = new Script(clock, respond(503), respond(200));

      CompletableFuture<FakeResponse> result =
          AsyncRetryLoop.execute(
              e, e.newCall(FakeRequest.get()), script::runAsync, FakeResponse.ACCESS);
      scheduler.runUntilIdle();

      assertThat(result).as(where).isCompleted();
      assertThat(result.join().status).as(where).isEqualTo(200);
      assertThat(script.attemptCount()).as(where).isEqualTo(2);
      assertThat(errors).as(where).singleElement().asString().contains(" a call's context (");
    }
  }

  /** An adapter's release of a response that throws, against its contract (our own bug). */
  private static final ResponseAccess<FakeResponse> UNRELEASABLE =
      releaseThrowing(
          () -> {
            throw new IllegalStateException("adapter: discard");
          });

  /** An adapter's release that throws an Error, as a body's close() may (a class missing). */
  private static final ResponseAccess<FakeResponse> CLOSE_THROWS_AN_ERROR =
      releaseThrowing(
          () -> {
            throw new NoClassDefFoundError("adapter/Body");
          });

  /**
   * Our own failure said once: a release of a response the caller does not get threw {@code thrown}
   * (a class name's start), and the call went on.
   */
  private void assertSaidOnceAsAReleaseTheCallerDoesNotGet(String thrown) {
    assertThat(errors)
        .singleElement()
        .asString()
        .contains("while releasing a response the caller does not get (" + thrown)
        .endsWith("; the call goes on (said once for this cause)");
  }

  /** An adapter's release of a response that runs {@code fails}, which throws. */
  private static ResponseAccess<FakeResponse> releaseThrowing(Runnable fails) {
    return new ResponseAccess<FakeResponse>() {
      @Override
      public int status(FakeResponse response) {
        return response.status;
      }

      @Override
      public String header(FakeResponse response, String name) {
        return null;
      }

      @Override
      public void discard(FakeResponse response) {
        response.discards.incrementAndGet();
        fails.run();
      }
    };
  }

  private void assertTheRetryWasMadeAndTheCallCounted(
      RetryEngine e, RecordingListener events, Script script) {
    assertThat(script.attemptCount()).isEqualTo(2);
    assertThat(events.events(RetryEvent.Type.RETRY)).hasSize(1);
    assertThat(events.complete().status()).isEqualTo(200);
    RetryCall probe = e.newCall(FakeRequest.get());
    assertThat(
            e.budgetFor(probe.request().target(), probe.policy()).retriesInWindow(clock.nanoTime()))
        .as("the retry made, and spent once")
        .isEqualTo(1);
    assertThat(errors)
        .singleElement()
        .asString()
        .contains("while releasing a response for its retry (java.lang.IllegalStateException at ")
        .endsWith("; the retry goes on (said once for this cause)")
        .doesNotContain("adapter:");
  }

  @Test
  void aReleaseThatThrowsAfterARetryIsDecidedLetsTheRetryGoAndTheCallIsCounted() throws Exception {
    RecordingListener events = new RecordingListener();
    RetryEngine e = engine().listener(events).build();
    Script script = new Script(clock, respond(503), respond(200));

    // Before: the release's exception reached the caller; the retry was told and kept its budget,
    // and the call never ended (no CALL_COMPLETE).
    FakeResponse r =
        SyncRetryLoop.execute(
            e.newCall(FakeRequest.get()), e.sleeper(), script::runSync, UNRELEASABLE);

    assertThat(r.status).isEqualTo(200);
    assertTheRetryWasMadeAndTheCallCounted(e, events, script);
  }

  @Test
  void anAsynchronousReleaseThatThrowsAfterARetryIsDecidedLetsTheRetryGoAndTheCallIsCounted() {
    ManualScheduler scheduler = new ManualScheduler(clock);
    RecordingListener events = new RecordingListener();
    RetryEngine e = engine().scheduler(scheduler).listener(events).build();
    Script script = new Script(clock, respond(503), respond(200));

    // Before: the future failed with the engine's internal error while the retry's wait, already
    // scheduled, found the call over: the retry told and never made, the call's end not counted.
    CompletableFuture<FakeResponse> result =
        AsyncRetryLoop.execute(e, e.newCall(FakeRequest.get()), script::runAsync, UNRELEASABLE);
    scheduler.runUntilIdle();

    assertThat(result).isCompleted();
    assertThat(result.join().status).isEqualTo(200);
    assertTheRetryWasMadeAndTheCallCounted(e, events, script);
  }

  @Test
  void anAsynchronousReleaseThatThrowsAfterTheBreakerRefusedTheRetryStillFailsWithTheBreakers() {
    // The 503 opens the breaker (a window of one), so the decision ends the call with the
    // breaker's exception and releases the 503, whose release throws. Before, the future failed
    // with IOException('retry-agent: internal error') in place of CircuitBreakerOpenException.
    TestPolicy p = TestPolicy.create();
    p.breaker.countWindow(1).minimumCalls(1);
    RetryEngine e = engine().policy(p.build()).build();
    Script script = new Script(clock, respond(503), respond(200));

    CompletableFuture<FakeResponse> result =
        AsyncRetryLoop.execute(e, e.newCall(FakeRequest.get()), script::runAsync, UNRELEASABLE);

    assertThat(result).isCompletedExceptionally();
    assertThatThrownBy(result::join).hasCauseInstanceOf(CircuitBreakerOpenException.class);
    assertThat(script.attemptCount()).isEqualTo(1);
    assertSaidOnceAsAReleaseTheCallerDoesNotGet("java.lang.");
  }

  @Test
  void aSynchronousReleaseThatThrowsAnErrorAfterTheBreakerRefusedTheRetryStillThrowsTheBreakers() {
    // java.net.http's send(): JdkRetrying.discard closes the body and catches Exception only, and
    // a close() may throw an Error (a class missing). The 503 opens the breaker (a window of one),
    // so the decision ends the call with the breaker's exception and releases the 503. Before, the
    // caller got the release's Error in place of CircuitBreakerOpenException.
    TestPolicy p = TestPolicy.create();
    p.breaker.countWindow(1).minimumCalls(1);
    RetryEngine e = engine().policy(p.build()).build();
    Script script = new Script(clock, respond(503), respond(200));

    assertThatThrownBy(
            () ->
                SyncRetryLoop.execute(
                    e.newCall(FakeRequest.get()),
                    e.sleeper(),
                    script::runSync,
                    CLOSE_THROWS_AN_ERROR))
        .isInstanceOf(CircuitBreakerOpenException.class);
    assertThat(script.attemptCount()).isEqualTo(1);
    assertSaidOnceAsAReleaseTheCallerDoesNotGet("java.lang.NoClassDefFound");
  }

  @Test
  void aReleaseThatThrowsAnErrorAfterAnInterruptedWaitLeavesTheCallerTheInterrupt() {
    // The retry is to start 500 ms before the deadline, so the whole 503 is kept through the wait
    // (one that ends late would be the caller's); the caller interrupts the wait, and the kept
    // response's release throws an Error (a body's close(), a class missing). Before, that Error
    // reached the caller in place of its InterruptedException.
    TestPolicy p = TestPolicy.create().backoff(Duration.ofMillis(500), 1.0, Duration.ofSeconds(1));
    p.deadline(Duration.ofSeconds(1));
    RetryEngine e = engine().policy(p.build()).build();
    Script script = new Script(clock, respond(503), respond(200));
    Sleeper interrupted =
        nanos -> {
          throw new InterruptedException("the caller's interrupt");
        };

    assertThatThrownBy(
            () ->
                SyncRetryLoop.execute(
                    e.newCall(FakeRequest.get()),
                    interrupted,
                    script::runSync,
                    CLOSE_THROWS_AN_ERROR))
        .isInstanceOf(InterruptedException.class)
        .hasMessage("the caller's interrupt");
    assertThat(script.attemptCount()).isEqualTo(1);
    assertThat(script.responsesServed().get(0).discards).hasValue(1);
    assertSaidOnceAsAReleaseTheCallerDoesNotGet("java.lang.NoClassDefFound");
  }

  @Test
  void aReleaseThatThrowsAnErrorForACallerWhoCancelledDuringTheAttemptIsSaidAsARelease() {
    // The caller cancelled during the attempt, whose client completed it with a response all the
    // same (its cancel came too late); the release throws an Error (a body's close()). It was said
    // as a failure judging the attempt, "the call ends with that attempt's outcome", which it did
    // not: the caller had cancelled. Now said as the release it is.
    RetryEngine e = engine().build();
    CompletableFuture<FakeResponse> attempt =
        new CompletableFuture<FakeResponse>() {
          @Override
          public boolean cancel(boolean mayInterruptIfRunning) {
            return false; // the client had its response already
          }
        };
    CompletableFuture<FakeResponse> result =
        AsyncRetryLoop.execute(
            e, e.newCall(FakeRequest.get()), (n, t) -> attempt, CLOSE_THROWS_AN_ERROR);
    result.cancel(true);
    FakeResponse r = FakeResponse.of(200);

    attempt.complete(r);

    assertThat(result).isCancelled();
    assertThat(r.discards).hasValue(1);
    assertSaidOnceAsAReleaseTheCallerDoesNotGet("java.lang.NoClassDefFound");
  }

  @Test
  void aReleaseThatThrowsAnErrorAfterOurOwnFailureForACallerWhoCancelledIsSaidOnce() {
    // Our own failure judging the response (the adapter's reading of its status) ends the call
    // with that response, but the caller cancelled meanwhile: the response is released, and the
    // release throws an Error (a body's close(), a class missing). Before, it was dropped there,
    // said nowhere.
    RetryEngine e = engine().build();
    AtomicReference<CompletableFuture<FakeResponse>> caller = new AtomicReference<>();
    ResponseAccess<FakeResponse> access =
        new ResponseAccess<FakeResponse>() {
          @Override
          public int status(FakeResponse response) {
            caller.get().cancel(true); // the caller gives up as the response is judged
            throw new IllegalStateException("adapter: status");
          }

          @Override
          public String header(FakeResponse response, String name) {
            return null;
          }

          @Override
          public void discard(FakeResponse response) {
            CLOSE_THROWS_AN_ERROR.discard(response);
          }
        };
    CompletableFuture<FakeResponse> attempt = new CompletableFuture<>();
    caller.set(AsyncRetryLoop.execute(e, e.newCall(FakeRequest.get()), (n, t) -> attempt, access));
    FakeResponse r = FakeResponse.of(200);

    attempt.complete(r);

    assertThat(caller.get()).isCancelled();
    assertThat(r.discards).hasValue(1);
    assertThat(errors)
        .hasSize(2)
        .anySatisfy(line -> assertThat(line).contains("while judging an asynchronous attempt ("))
        .anySatisfy(
            line ->
                assertThat(line)
                    .contains(
                        "while releasing a response the caller does not get"
                            + " (java.lang.NoClassDefFound"));
  }

  @Test
  void aReleaseThatThrowsForACallerWhoCancelledBeforeTheDeliveryNeverLeavesTheClientsExecutor() {
    // The retry's response was ready on the scheduler's thread and handed to the client's
    // executor (the style's deliverOn); the caller cancelled before it ran, so the response is
    // released there, and the release throws. Before, the exception left the executor's task (an
    // uncaught exception on the client's thread), said nowhere.
    ManualScheduler scheduler = new ManualScheduler(clock);
    RetryEngine e = engine().scheduler(scheduler).build();
    List<Runnable> clientThreads = new ArrayList<>();
    FakeResponse late = FakeResponse.of(200);
    CompletableFuture<FakeResponse> result =
        AsyncRetryLoop.execute(
            e,
            e.newCall(FakeRequest.get()),
            (n, t) -> CompletableFuture.completedFuture(n == 1 ? FakeResponse.of(503) : late),
            UNRELEASABLE,
            AsyncRetryLoop.Style.of(false, clientThreads::add));
    scheduler.runUntilIdle();
    assertThat(clientThreads).hasSize(1);
    errors.clear(); // the 503's release for the retry, said already

    result.cancel(true);
    clientThreads.get(0).run();

    assertThat(late.discards.get()).isEqualTo(1);
    assertThat(errors)
        .singleElement()
        .asString()
        .contains("while releasing a response the caller does not get (java.lang.");
  }
}
