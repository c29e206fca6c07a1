package dev.retryagent.demo;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.List;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/** The demo without the agent (this JVM has none): the app has no retry code of its own. */
class NewsProcessorTest {
  private static final String OUTCOME = "Succeeded: \\d+ \\| Failed: \\d+";
  private static final String TRUTH =
      "Provider requests: \\d+ \\| Charges created: \\d+ \\| Duration: \\d+\\.\\ds";

  private static final class Run {
    final RunResult result;
    final List<String> lines;

    Run(RunResult result, List<String> lines) {
      this.result = result;
      this.lines = lines;
    }
  }

  private static Run run(String... args) throws Exception {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    PrintStream out = new PrintStream(bytes, true, StandardCharsets.UTF_8);
    RunResult r = NewsProcessor.run(Options.parse(args), out);
    return new Run(r, Arrays.asList(bytes.toString(StandardCharsets.UTF_8).split("\n")));
  }

  private static List<String> articleLines(Run run) {
    return run.lines.stream().filter(l -> l.startsWith("[article ")).collect(Collectors.toList());
  }

  @Test
  void withFaultsOnSomeArticlesAndTheChargeFail() throws Exception {
    Run run = run("--seed", "42");

    assertThat(run.result.failed()).isPositive();
    assertThat(run.result.succeeded() + run.result.failed()).isEqualTo(20);
    assertThat(run.result.chargesCreated()).isZero();
    assertThat(articleLines(run)).hasSize(20);
    assertThat(articleLines(run).stream().filter(l -> l.contains(" FAILED ")))
        .hasSize(run.result.failed());
    assertThat(run.lines)
        .anyMatch(l -> l.startsWith("[charge] ") && l.contains("FAILED  charge: HTTP 503"));
    // No retries: one request per call made, and a failed summary skips the sentiment call.
    assertThat(run.result.providerRequests()).isBetween(20, 39);
  }

  @Test
  void printsOneLinePerArticleAndEndsWithTheGroundTruth() throws Exception {
    Run run = run("--seed", "7", "--articles", "12", "--workers", "3");

    assertThat(run.lines.get(0)).startsWith("news-processor: 12 articles, 3 workers, seed 7");
    assertThat(articleLines(run)).hasSize(12);
    assertThat(articleLines(run))
        .allMatch(l -> l.matches("\\[article \\d\\d] (ok      \\S+ +.+|FAILED  .+)"));
    int n = run.lines.size();
    assertThat(run.lines.get(n - 2)).matches(OUTCOME).isEqualTo(run.result.outcomeLine());
    assertThat(run.lines.get(n - 1)).matches(TRUTH).isEqualTo(run.result.truthLine());
  }

  @Test
  void withFaultsOffEveryArticleSucceeds() throws Exception {
    Run run = run("--rate-limit", "0", "--server-errors", "0", "--resets", "0");

    assertThat(run.result.succeeded()).isEqualTo(20);
    assertThat(run.result.failed()).isZero();
    assertThat(run.result.providerRequests()).isEqualTo(40);
    assertThat(run.lines).contains("Succeeded: 20 | Failed: 0");
    // The gateway's deploy is not a provider fault: still no charge without retries.
    assertThat(run.result.chargesCreated()).isZero();
  }

  @Test
  void withTheGatewayHealthyTooEverythingSucceedsAndOneChargeExists() throws Exception {
    Run run = run("--rate-limit=0", "--server-errors=0", "--resets=0", "--gateway-failures=0");

    assertThat(run.result.allGood()).isTrue();
    assertThat(run.lines)
        .anyMatch(l -> l.matches("\\[charge] order-\\w+, 1\\.00 EUR: ok, ch_000001"));
  }

  @Test
  void theSameSeedGivesTheSameOutcomeWithoutTheAgent() throws Exception {
    Run a = run("--seed", "1234", "--workers", "4");
    Run b = run("--seed", "1234", "--workers", "2");

    assertThat(b.result.succeeded()).isEqualTo(a.result.succeeded());
    assertThat(b.result.providerRequests()).isEqualTo(a.result.providerRequests());
    assertThat(b.lines.stream().filter(l -> l.startsWith("[article ")).sorted())
        .containsExactlyElementsOf(articleLines(a).stream().sorted().collect(Collectors.toList()));
  }

  @Test
  void everySeedTriedFailsSomeArticlesWithDefaultFaults() throws Exception {
    for (String seed : new String[] {"1", "2", "3"}) {
      Run run = run("--seed", seed, "--articles", "10");

      assertThat(run.result.failed()).as("seed " + seed).isPositive();
    }
  }
}
