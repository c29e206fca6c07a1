package dev.retryagent.engine;

import dev.retryagent.policy.Mode;
import dev.retryagent.policy.Policy;

/** An engine wired to fake time, scripted randomness and a recording listener. */
final class EngineFixture {
  final FakeClock clock = new FakeClock();
  final RecordingSleeper sleeper = new RecordingSleeper(clock);
  final ManualScheduler scheduler = new ManualScheduler(clock);
  final RecordingListener listener = new RecordingListener();
  final ScriptedRandom random;
  final RetryEngine engine;

  private EngineFixture(Policy policy, Mode mode, ScriptedRandom random, RetryListener first) {
    this.random = random;
    RetryEngine.Builder b =
        RetryEngine.builder()
            .clock(clock)
            .sleeper(sleeper)
            .scheduler(scheduler)
            .random(random)
            .mode(mode)
            .policy(policy);
    if (first != null) {
      b.listener(first);
    }
    this.engine = b.listener(listener).build();
  }

  static EngineFixture of(Policy policy) {
    return new EngineFixture(policy, Mode.ENFORCE, new ScriptedRandom(0.5), null);
  }

  /** An engine whose every random draw is {@code dice}. */
  static EngineFixture of(Policy policy, double dice) {
    return new EngineFixture(policy, Mode.ENFORCE, new ScriptedRandom(dice), null);
  }

  static EngineFixture of(TestPolicy policy) {
    return of(policy.build());
  }

  static EngineFixture of(Policy policy, Mode mode) {
    return new EngineFixture(policy, mode, new ScriptedRandom(0.5), null);
  }

  /** An engine whose first listener is {@code first}, before the recording one. */
  static EngineFixture withListener(Policy policy, RetryListener first) {
    return new EngineFixture(policy, Mode.ENFORCE, new ScriptedRandom(0.5), first);
  }

  RetryCall newCall(RequestInfo request) {
    return engine.newCall(request);
  }
}
