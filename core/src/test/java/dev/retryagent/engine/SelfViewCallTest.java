package dev.retryagent.engine;

import static dev.retryagent.engine.Script.respond;
import static org.assertj.core.api.Assertions.assertThat;

import dev.retryagent.policy.Mode;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * A call that is its own request view ({@link SelfViewCall}), begun by {@link RetryEngine#begin}:
 * the same policy, host state and decisions as a call of a separate view, and the same pass-through
 * when the engine is off or cannot start it.
 */
class SelfViewCallTest {
  @Test
  void aBegunCallIsItsOwnViewAndRetriesAsACallOfASeparateView() throws Exception {
    EngineFixture f = EngineFixture.of(TestPolicy.create());
    OwnView call = f.engine.begin(new OwnView());
    Script script = new Script(f.clock, respond(503), respond(200));

    FakeResponse r = SyncRetryLoop.execute(call, f.sleeper, script::runSync, FakeResponse.ACCESS);

    assertThat(call.request()).isSameAs(call);
    assertThat(call.passThrough()).isFalse();
    assertThat(r.status).isEqualTo(200);
    assertThat(script.attemptCount()).isEqualTo(2);
    assertThat(call.attempt()).isEqualTo(2);
    // One host state for both kinds of call to the same target.
    f.newCall(dev.retryagent.testing.FakeRequest.of("GET", "https", "api.example.com", 443, "/"));
    assertThat(f.engine.trackedTargets()).isEqualTo(1);
  }

  @Test
  void theViewsCancelSignalStopsTheRetry() throws Exception {
    EngineFixture f = EngineFixture.of(TestPolicy.create());
    OwnView call = f.engine.begin(new OwnView());
    Script script =
        new Script(f.clock, respond(503).during(() -> call.cancelled = true), respond(200));

    FakeResponse r = SyncRetryLoop.execute(call, f.sleeper, script::runSync, FakeResponse.ACCESS);

    assertThat(r.status).isEqualTo(503);
    assertThat(script.attemptCount()).isEqualTo(1);
  }

  @Test
  void offPassesThrough() {
    EngineFixture f = EngineFixture.of(TestPolicy.create().build(), Mode.OFF);

    OwnView call = f.engine.begin(new OwnView());

    assertThat(call.passThrough()).isTrue();
    assertThat(f.engine.trackedTargets()).isZero();
  }

  @Test
  void aCallTheEngineFailsToStartPassesThroughAndIsSaid() {
    List<String> errors = new ArrayList<>();
    List<String> asked = new ArrayList<>();
    RetryEngine e =
        RetryEngine.builder()
            .errors(errors::add)
            .policies(
                (method, host, port, path) -> {
                  asked.add(method + " " + host + ":" + port);
                  throw new IllegalStateException("boom");
                })
            .build();

    OwnView call = e.begin(new OwnView());

    assertThat(asked)
        .as("the view was asked, after its fields were set")
        .containsExactly("GET api.example.com:443");
    assertThat(call.passThrough()).isTrue();
    assertThat(errors).singleElement().asString().contains("internal error while starting a call");
  }
}
