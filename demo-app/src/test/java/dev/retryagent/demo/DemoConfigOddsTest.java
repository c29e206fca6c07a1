package dev.retryagent.demo;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import dev.retryagent.demo.json.Json;
import dev.retryagent.demo.server.FaultPlan;
import dev.retryagent.demo.server.FlakyLlmProvider;
import dev.retryagent.demo.server.ServerReply;
import dev.retryagent.demo.server.ServerRequest;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * Checks the arithmetic in config/demo.yml against the real provider: a client that retries like
 * the configured agent (up to maxAttempts, waiting out every Retry-After) talks to the provider's
 * handler directly, with a fake clock, for thousands of seeds. No network, no agent: this is the
 * model the 99-of-100 claim rests on; AgentSeedSweepIT checks the real thing.
 */
class DemoConfigOddsTest {
  private static final byte[] BODY =
      "{\"text\":\"Some news. More.\"}".getBytes(StandardCharsets.UTF_8);

  /** maxAttempts of the llm-provider route in config/demo.yml. */
  static int configuredMaxAttempts() throws Exception {
    String yml = Files.readString(Path.of("..", "config", "demo.yml"));
    int route = yml.indexOf("- name: llm-provider");
    int next = yml.indexOf("- name:", route + 1);
    Matcher m =
        Pattern.compile("maxAttempts:\\s*(\\d+)")
            .matcher(yml.substring(route, next < 0 ? yml.length() : next));
    assertThat(route).as("llm-provider route in demo.yml").isNotNegative();
    assertThat(m.find()).as("maxAttempts in the llm-provider route").isTrue();
    return Integer.parseInt(m.group(1));
  }

  /** The formula from demo.yml: P(call fails) = 0.15^(n-1) * (0.15 + 0.30 n). */
  static double callFails(int n) {
    return Math.pow(0.15, n - 1) * (0.15 + 0.30 * n);
  }

  private static final class Tally {
    long calls;
    long failedCalls;
    long attempts;
    int runs;
    int failedRuns;
  }

  /** Runs {@code seeds} simulated demo runs of 20 articles x 2 calls each. */
  private static Tally simulate(int seeds, int maxAttempts) throws InterruptedException {
    Tally t = new Tally();
    for (long seed = 1; seed <= seeds; seed++) {
      AtomicLong clock = new AtomicLong();
      FlakyLlmProvider provider =
          new FlakyLlmProvider(
              new FaultPlan(seed, 0.3, 0.1, 0.05),
              Duration.ofSeconds(1),
              Duration.ZERO,
              clock::get);
      boolean runFailed = false;
      for (int article = 1; article <= 20; article++) {
        for (String op : new String[] {"summarise", "sentiment"}) {
          ServerRequest request =
              new ServerRequest(
                  "POST",
                  "/v1/" + op,
                  Map.of("Idempotency-Key", "article-" + article + "-" + op),
                  BODY);
          boolean ok = false;
          for (int attempt = 1; attempt <= maxAttempts && !ok; attempt++) {
            t.attempts++;
            ServerReply reply = provider.handle(request);
            ok = !reply.isReset() && reply.status() == 200;
            String retryAfter = reply.headers().get("Retry-After");
            clock.addAndGet(
                retryAfter == null
                    ? 50_000_000L
                    : Duration.ofSeconds(Long.parseLong(retryAfter)).toNanos());
          }
          t.calls++;
          if (!ok) {
            t.failedCalls++;
            runFailed = true;
          }
        }
      }
      t.runs++;
      t.failedRuns += runFailed ? 1 : 0;
    }
    return t;
  }

  @Test
  void theProviderFailsACallAsOftenAsTheFormulaInDemoYmlSays() throws Exception {
    // With 3 attempts the failure is common enough to measure: 2.4% of 80,000 calls is ~1,890,
    // give or take 43; 10% is over four standard deviations.
    Tally t = simulate(2_000, 3);

    double observed = (double) t.failedCalls / t.calls;
    assertThat(observed).isCloseTo(callFails(3), within(callFails(3) * 0.10));
  }

  @Test
  void withTheConfiguredMaxAttemptsFarFewerThanOneRunInAHundredFails() throws Exception {
    int n = configuredMaxAttempts();
    Tally t = simulate(2_000, n);

    // demo.yml's promise: P(run fails) = 40 * P(call fails) < 1 / 1000.
    assertThat(40 * callFails(n)).isLessThan(1e-3);
    // 2,000 runs at that rate: 0.35 failures expected; more than 3 has odds below 1 in 1,000.
    assertThat(t.failedRuns).isLessThanOrEqualTo(3);
    // ...and the cost demo.yml quotes: about 1.59 attempts per call.
    assertThat((double) t.attempts / t.calls).isCloseTo(1.59, within(0.03));
    System.out.printf(
        "maxAttempts %d: %d of %d simulated runs failed, %.3f attempts per call%n",
        n, t.failedRuns, t.runs, (double) t.attempts / t.calls);
  }

  @Test
  void theRequestBodyTheSimulationSendsIsWhatTheProviderExpects() {
    assertThat(Json.field(new String(BODY, StandardCharsets.UTF_8), "text")).isNotNull();
  }
}
