package dev.retryagent.cli;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retryagent.config.AgentConfig;
import dev.retryagent.engine.Clock;
import dev.retryagent.engine.Decision;
import dev.retryagent.engine.GiveUpReason;
import dev.retryagent.engine.RetryCall;
import dev.retryagent.engine.RetryEngine;
import dev.retryagent.engine.RetryEvent;
import dev.retryagent.engine.RetryListener;
import dev.retryagent.policy.Mode;
import dev.retryagent.policy.RetryPolicy;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.net.ConnectException;
import java.net.SocketException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * For every retry policy of a grid (retries on or off; maxAttempts 1 or 3; each {@code
 * unsafeMethods}; 503 retryable or not; which transport failures are), every request (idempotent or
 * not, with or without the Idempotency-Key) and every mode, the verdict {@code explain} prints for
 * a 503, a reset and a connect failure is the decision a real engine makes on a first attempt with
 * that outcome, driven through the adapter's steps with a fake clock.
 */
class ExplainAgreesWithTheEngineTest {
  private static final String[] UNSAFE = {"never", "if-not-sent", "if-idempotency-key", "always"};
  private static final String[] STATUSES = {"[503]", "[502]"};
  private static final String[] TRANSPORT = {"[connect, reset]", "[connect]", "[reset]"};
  private static final String[][] REQUESTS = {
    {"GET"},
    {"GET", "Idempotency-Key:k-1"},
    {"POST"},
    {"POST", "Idempotency-Key:k-1"},
    {"PATCH"},
    // Explained as GET and POST, with a note line for the method a client sends as written.
    {"get"},
    {"get", "Idempotency-Key:k-1"},
    {"post"}
  };

  @TempDir static Path dir;
  private static final Map<Mode, AgentConfig> CONFIGS = new EnumMap<>(Mode.class);
  private static int routes;

  @BeforeAll
  static void writeOneRoutePerPolicy() throws IOException {
    StringBuilder yaml = new StringBuilder("routes:\n");
    for (String enabled : new String[] {"true", "false"}) {
      for (int maxAttempts : new int[] {1, 3}) {
        for (String unsafe : UNSAFE) {
          for (String statuses : STATUSES) {
            for (String transport : TRANSPORT) {
              yaml.append("  - name: r")
                  .append(routes)
                  .append("\n    match: { hosts: [h")
                  .append(routes)
                  .append(".test] }\n    retry: { enabled: ")
                  .append(enabled)
                  .append(", maxAttempts: ")
                  .append(maxAttempts)
                  .append(", unsafeMethods: ")
                  .append(unsafe)
                  .append(", retryOn: { statuses: ")
                  .append(statuses)
                  .append(", transport: ")
                  .append(transport)
                  .append(" } }\n");
              routes++;
            }
          }
        }
      }
    }
    for (Mode mode : Mode.values()) {
      Path file =
          Files.writeString(
              dir.resolve(mode.configName() + ".yml"),
              "agent: { mode: " + mode.configName() + " }\n" + yaml);
      ByteArrayOutputStream err = new ByteArrayOutputStream();
      AgentConfig config =
          ValidateCommand.load(file, new PrintStream(err, true, StandardCharsets.UTF_8));
      assertThat(config).as(err.toString(StandardCharsets.UTF_8)).isNotNull();
      CONFIGS.put(mode, config);
    }
  }

  static Stream<Arguments> grid() {
    List<Arguments> grid = new ArrayList<>();
    for (int route = 0; route < 96; route++) {
      for (String[] request : REQUESTS) {
        grid.add(Arguments.of(route, request));
      }
    }
    return grid.stream();
  }

  @ParameterizedTest(name = "route r{0}, {1}")
  @MethodSource("grid")
  void explainPrintsTheEnginesDecisionOnAFirstAttempt(int route, String[] request) {
    assertThat(routes).isEqualTo(96);
    for (Mode mode : Mode.values()) {
      AgentConfig config = CONFIGS.get(mode);
      ExplainedRequest req =
          ExplainedRequest.parse(
              request[0],
              "https://h" + route + ".test/v1/x",
              request.length > 1 ? new String[] {request[1]} : new String[0]);
      List<String> explained = ExplainCommand.explain(config, req);
      String verdict = explained.get(0);

      assertThat(verdict).as(mode + ": " + verdict).contains("-> route r" + route + ";");
      boolean anyRetried = agrees(mode, config, req, verdict);
      ExplainedRequest sent = req.asSent();
      if (sent.method().equals(req.method())) {
        assertThat(explained.get(1)).as("no note for " + request[0]).isEmpty();
      } else {
        String note = explained.get(1);
        assertThat(note)
            .as(mode + ": " + note)
            .startsWith(
                "note: "
                    + request[0]
                    + " is explained as "
                    + req.method()
                    + "; a client that sends "
                    + request[0]
                    + " sends another method");
        agrees(mode, config, sent, note);
      }
      assertThat(String.join("\n", explained).contains("each retry also needs:"))
          .as(mode + ": " + verdict)
          .isEqualTo(anyRetried && mode == Mode.ENFORCE);
    }
  }

  /**
   * Each verdict of {@code line} (the 503's, the reset's, the connect failure's) is the engine's
   * decision for {@code req} on a first attempt with that outcome; true when one is a retry.
   */
  private static boolean agrees(Mode mode, AgentConfig config, ExplainedRequest req, String line) {
    boolean anyRetried = false;
    boolean attemptsNamed = false;
    for (RetryVerdict.Case c : RetryVerdict.Case.values()) {
      EngineVerdict engine = firstAttempt(config, req, c);
      String said = segment(line, c);
      String as = mode + " " + c.label + ": " + line;
      if (engine.passThrough) {
        assertThat(said).as(as).isEqualTo("not retried (mode off: calls pass through)");
      } else if (engine.retried) {
        assertThat(said).as(as).startsWith(mode == Mode.OBSERVE ? "would be retried" : "retried");
        String upTo = "(up to " + engine.retry.maxAttempts() + " attempts)";
        assertThat(said.contains(upTo)).as(as).isEqualTo(!attemptsNamed);
        attemptsNamed = true;
        anyRetried = true;
      } else {
        assertThat(engine.reason).as(as).isNotNull();
        assertThat(said)
            .as(as)
            .isEqualTo(
                "not retried (" + RetryVerdict.why(engine.reason, engine.retry, req, c) + ")");
      }
    }
    return anyRetried;
  }

  /** What {@code explain} says about {@code c}: the text between its label and the next one. */
  private static String segment(String verdict, RetryVerdict.Case c) {
    int start = verdict.indexOf("; " + c.label + ": ");
    assertThat(start).as(verdict).isPositive();
    start += c.label.length() + 4;
    int end = verdict.length();
    for (RetryVerdict.Case other : RetryVerdict.Case.values()) {
      int at = verdict.indexOf("; " + other.label + ": ", start);
      if (at >= 0 && at < end) {
        end = at;
      }
    }
    return verdict.substring(start, end);
  }

  /** A fresh engine, as the agent builds it, takes one call through its first attempt. */
  private static EngineVerdict firstAttempt(
      AgentConfig config, ExplainedRequest request, RetryVerdict.Case c) {
    List<RetryEvent> retries = new ArrayList<>();
    RetryEngine engine =
        RetryEngine.builder()
            .clock(new FixedClock())
            .random(() -> 0.5)
            .mode(config.mode())
            .policies(config::resolve)
            .listener(
                new RetryListener() {
                  @Override
                  public void onRetry(RetryEvent e) {
                    retries.add(e);
                  }
                })
            .build();
    RetryCall call = engine.newCall(request);
    if (call.passThrough()) {
      return new EngineVerdict(true, false, null, call.policy().retry());
    }
    Decision d;
    try {
      assertThat(call.reservePermit()).isZero();
      call.acquireBreaker();
      assertThat(call.startAttempt()).isEqualTo(1);
      switch (c) {
        case STATUS_503:
          d = call.onResponse(503, null);
          break;
        case RESET:
          d = call.onFailure(new SocketException("Connection reset"));
          break;
        default:
          d = call.onFailure(new ConnectException("Connection refused"));
      }
    } catch (IOException e) {
      throw new AssertionError("a fresh engine refused the call", e);
    }
    // Observe mode reports a retry and hands the outcome back; enforce mode retries.
    boolean retried = d.retry() || (!retries.isEmpty() && retries.get(0).observeOnly());
    return new EngineVerdict(false, retried, d.reason(), call.policy().retry());
  }

  private static final class EngineVerdict {
    final boolean passThrough;
    final boolean retried;
    final GiveUpReason reason;
    final RetryPolicy retry;

    EngineVerdict(boolean passThrough, boolean retried, GiveUpReason reason, RetryPolicy retry) {
      this.passThrough = passThrough;
      this.retried = retried;
      this.reason = reason;
      this.retry = retry;
    }
  }

  /** Time stands still: the first attempt takes no time and nothing is waited for. */
  private static final class FixedClock implements Clock {
    @Override
    public long nanoTime() {
      return 1_000_000_000L;
    }

    @Override
    public long wallMillis() {
      return 1_700_000_000_000L;
    }
  }
}
