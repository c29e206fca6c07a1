package dev.retryagent.bench;

import dev.retryagent.config.AgentConfig;
import dev.retryagent.engine.CircuitBreaker;
import dev.retryagent.engine.CircuitState;
import dev.retryagent.engine.RequestInfo;
import dev.retryagent.engine.ResponseAccess;
import dev.retryagent.engine.RetryEngine;
import dev.retryagent.engine.RetryListener;
import dev.retryagent.engine.Sleeper;
import dev.retryagent.engine.SyncRetryLoop;
import dev.retryagent.internal.observe.LogListener;
import dev.retryagent.internal.observe.RetryMetrics;
import dev.retryagent.policy.Mode;
import java.util.function.Consumer;

/**
 * What the engine benchmarks share: a request view, a response type that is just a status code, and
 * an engine wired the way the agent wires its own ({@code AgentRuntime.build}).
 */
public final class Fixtures {
  /** The host every engine benchmark calls. */
  public static final String HOST = "api.example.com";

  /** Sleeps nothing: the engine benchmarks measure the engine's CPU, not the backoff's wait. */
  public static final Sleeper NO_SLEEP = nanos -> {};

  /** The response is its status code; it has no headers and nothing to release. */
  public static final ResponseAccess<Integer> STATUS =
      new ResponseAccess<Integer>() {
        @Override
        public int status(Integer response) {
          return response;
        }

        @Override
        public String header(Integer response, String name) {
          return null;
        }

        @Override
        public void discard(Integer response) {}
      };

  /** {@code GET https://api.example.com/v1/items}, without headers or body. */
  public static final RequestInfo GET =
      new RequestInfo() {
        @Override
        public String method() {
          return "GET";
        }

        @Override
        public String scheme() {
          return "https";
        }

        @Override
        public String host() {
          return HOST;
        }

        @Override
        public int port() {
          return 443;
        }

        @Override
        public String path() {
          return "/v1/items";
        }

        @Override
        public String header(String name) {
          return null;
        }

        @Override
        public boolean bodyReplayable() {
          return true;
        }
      };

  private Fixtures() {}

  /**
   * An engine built as the agent builds its own: mode and routes from {@code config}, then the
   * metrics, log and dead-letter listeners, in that order. The dead-letter listener is the agent's
   * when no {@code deadLetter.path} is set (the default): it looks at give-ups only and writes
   * nothing.
   *
   * @param logSink where log lines go; the agent's is stderr
   */
  public static RetryEngine agentEngine(AgentConfig config, Consumer<String> logSink) {
    RetryMetrics metrics =
        new RetryMetrics(Math.min(1000, config.defaultPolicy().circuitBreaker().maxHosts()));
    LogListener log =
        new LogListener(config.logLevel(), logSink, () -> config.mode() == Mode.OBSERVE);
    RetryListener deadLetters = new RetryListener() {};
    return RetryEngine.builder()
        .mode(config.mode())
        .policies(config::resolve)
        .listener(metrics)
        .listener(log)
        .listener(deadLetters)
        .build();
  }

  /**
   * Opens the breaker of {@link #GET}'s host with calls answered {@code 500} (a failure for the
   * breaker, not retryable by default), unless it is open already.
   */
  public static void tripBreaker(RetryEngine engine) throws Exception {
    for (int i = 0; i < 10_000 && !breakerOpen(engine); i++) {
      try {
        SyncRetryLoop.execute(engine.newCall(GET), NO_SLEEP, (n, t) -> 500, STATUS);
      } catch (java.io.IOException rejected) {
        // the breaker opened on an earlier call of this loop
      }
    }
    if (!breakerOpen(engine)) {
      throw new IllegalStateException("the breaker did not open");
    }
  }

  /** True when one of the engine's breakers is open. */
  public static boolean breakerOpen(RetryEngine engine) {
    for (CircuitBreaker b : engine.breakers()) {
      if (b.state() == CircuitState.OPEN) {
        return true;
      }
    }
    return false;
  }
}
