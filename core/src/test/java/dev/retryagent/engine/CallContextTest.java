package dev.retryagent.engine;

import static dev.retryagent.engine.Script.respond;
import static org.assertj.core.api.Assertions.assertThat;

import dev.retryagent.policy.Mode;
import dev.retryagent.testing.FakeRequest;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** The engine carries a {@link CallContext} through a call: made, entered, told, ended. */
class CallContextTest {
  /** What is "current" on this thread, as a tracer's context would be. */
  private static final ThreadLocal<String> CURRENT = new ThreadLocal<>();

  private final FakeClock clock = new FakeClock();
  private final ManualScheduler scheduler = new ManualScheduler(clock);
  private final RecordingListener listener = new RecordingListener();
  private final List<String> seenBySleeps = new ArrayList<>();
  private final List<String> log = new CopyOnWriteArrayList<>();
  private final List<RetryCall> made = new ArrayList<>();

  @AfterEach
  void clear() {
    CURRENT.remove();
  }

  /** Switches {@link #CURRENT} to {@code value} and back, and logs what it is told. */
  private class Recording implements CallContext {
    @Override
    public Scope enter() {
      return switchTo("call");
    }

    @Override
    public Scope enterCaller() {
      return switchTo("caller");
    }

    private Scope switchTo(String value) {
      String before = CURRENT.get();
      CURRENT.set(value);
      return () -> CURRENT.set(before);
    }

    @Override
    public void on(RetryEvent event) {
      log.add(event.type().toString());
    }

    @Override
    public void end() {
      log.add("end");
    }
  }

  private RetryEngine engine(Mode mode, CallContext.Factory factory) {
    return RetryEngine.builder()
        .clock(clock)
        .sleeper(
            nanos -> {
              seenBySleeps.add(CURRENT.get());
              clock.advance(nanos);
            })
        .scheduler(scheduler)
        .random(new ScriptedRandom(0.5))
        .mode(mode)
        .policy(TestPolicy.create().build())
        .listener(listener)
        .callContexts(factory)
        .build();
  }

  private RetryEngine engine() {
    return engine(
        Mode.ENFORCE,
        call -> {
          made.add(call);
          return new Recording();
        });
  }

  @Test
  void everySyncAttemptRunsInTheCallsContextAndTheWaitsDoNot() throws Exception {
    RetryEngine engine = engine();
    List<String> seenByAttempts = new ArrayList<>();
    Script script = new Script(clock, respond(503), respond(503), respond(200));
    RetryCall call = engine.newCall(FakeRequest.get());

    FakeResponse r =
        SyncRetryLoop.execute(
            call,
            engine.sleeper(),
            (n, t) -> {
              seenByAttempts.add(CURRENT.get());
              return script.runSync(n, t);
            },
            FakeResponse.ACCESS);

    assertThat(r.status).isEqualTo(200);
    assertThat(made).containsExactly(call);
    assertThat(seenByAttempts).containsExactly("call", "call", "call");
    assertThat(seenBySleeps).containsExactly(null, null);
    assertThat(CURRENT.get()).isNull();
    assertThat(log).containsExactly("RETRY", "RETRY", "CALL_COMPLETE", "end");
  }

  @Test
  void aSyncCallThatGivesUpIsEndedOnceAfterItsLastEvent() throws Exception {
    RetryEngine engine = engine();
    Script script = new Script(clock, respond(503), respond(503), respond(503));
    RetryCall call = engine.newCall(FakeRequest.get());

    SyncRetryLoop.execute(call, engine.sleeper(), script::runSync, FakeResponse.ACCESS);

    assertThat(log).endsWith("GIVE_UP", "CALL_COMPLETE", "end");
    assertThat(log.stream().filter("end"::equals)).hasSize(1);
  }

  @Test
  void asyncAttemptsStartInTheCallsContextAndTheCallerCompletesInItsOwn() {
    RetryEngine engine = engine();
    List<String> seenByAttempts = new CopyOnWriteArrayList<>();
    Script script = new Script(clock, respond(503), respond(503), respond(200));
    RetryCall call = engine.newCall(FakeRequest.get());
    List<String> seenByStage = new ArrayList<>();

    CompletableFuture<FakeResponse> f =
        AsyncRetryLoop.execute(
            engine,
            call,
            (n, t) -> {
              seenByAttempts.add(CURRENT.get());
              return script.runAsync(n, t);
            },
            FakeResponse.ACCESS);
    CompletableFuture<String> stage =
        f.thenApply(
            resp -> {
              seenByStage.add(CURRENT.get());
              return "done";
            });
    scheduler.runUntilIdle();

    assertThat(stage.join()).isEqualTo("done");
    assertThat(seenByAttempts).containsExactly("call", "call", "call");
    assertThat(seenByStage).containsExactly("caller");
    assertThat(log).endsWith("CALL_COMPLETE", "end");
    assertThat(log.indexOf("end")).isEqualTo(log.size() - 1);
  }

  @Test
  void aCancelledAsyncCallIsEndedOnce() {
    RetryEngine engine = engine();
    RetryCall call = engine.newCall(FakeRequest.get());
    CompletableFuture<FakeResponse> attempt = new CompletableFuture<>();

    CompletableFuture<FakeResponse> f =
        AsyncRetryLoop.execute(engine, call, (n, t) -> attempt, FakeResponse.ACCESS);
    f.cancel(true);
    attempt.complete(FakeResponse.of(200));

    assertThat(log.stream().filter("end"::equals)).hasSize(1);
  }

  @Test
  void aPassThroughCallGetsNoContext() throws Exception {
    RetryEngine engine = engine(Mode.OFF, call -> new Recording());
    RetryCall call = engine.newCall(FakeRequest.get());

    assertThat(call.passThrough()).isTrue();
    assertThat(call.context()).isSameAs(CallContext.NONE);
  }

  @Test
  void aFactoryThatFailsLeavesTheCallWithoutAContext() throws Exception {
    RetryEngine engine =
        engine(
            Mode.ENFORCE,
            call -> {
              throw new IllegalStateException("tracing broke");
            });
    Script script = new Script(clock, respond(503), respond(200));
    RetryCall call = engine.newCall(FakeRequest.get());

    FakeResponse r =
        SyncRetryLoop.execute(call, engine.sleeper(), script::runSync, FakeResponse.ACCESS);

    assertThat(r.status).isEqualTo(200);
    assertThat(call.context()).isSameAs(CallContext.NONE);
    assertThat(listener.complete().succeeded()).isTrue();
  }

  @Test
  void aContextThatFailsOnAnEventLeavesTheCallAndTheListenersAlone() throws Exception {
    RetryEngine engine =
        engine(
            Mode.ENFORCE,
            call ->
                new Recording() {
                  @Override
                  public void on(RetryEvent event) {
                    throw new IllegalStateException("tracing broke");
                  }
                });
    Script script = new Script(clock, respond(503), respond(200));
    RetryCall call = engine.newCall(FakeRequest.get());

    FakeResponse r =
        SyncRetryLoop.execute(call, engine.sleeper(), script::runSync, FakeResponse.ACCESS);

    assertThat(r.status).isEqualTo(200);
    assertThat(listener.complete().succeeded()).isTrue();
    assertThat(log).containsExactly("end");
  }
}
