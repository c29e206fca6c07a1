package dev.retryagent.internal.observe;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retryagent.config.LogLevel;
import dev.retryagent.policy.CircuitBreakerPolicy;
import dev.retryagent.testing.FakeRequest;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.stream.Collectors;
import javax.management.MBeanServer;
import javax.management.ObjectName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A route's name may be any text without control characters (RouteKeys): every line and record it
 * goes into keeps it one name, and a name of the earlier rule is written exactly as before.
 */
class RouteNameOutputsTest {
  /** A space, ':', '"', '\', ',', '=', '*', '?', ']' and a non-ASCII letter. */
  static final String HOSTILE = "Pay \"v2\" a\\b, x=1: *? caf\u00e9] calls=0";

  private static final String HOSTILE_SHOWN =
      "\"Pay \\\"v2\\\" a\\\\b, x=1: *? caf\u00e9] calls=0\"";

  @TempDir Path dir;

  @Test
  void aNameOfTheEarlierRuleIsWrittenAsItIsAnyOtherQuoted() {
    for (String plain : new String[] {"llm", "route-3", "pay-v1.2_x", "A", "x".repeat(64)}) {
      assertThat(Sanitizer.routeName(plain)).isEqualTo(plain);
    }
    assertThat(Sanitizer.routeName("Payments API")).isEqualTo("\"Payments API\"");
    assertThat(Sanitizer.routeName("openai:chat")).isEqualTo("\"openai:chat\"");
    assertThat(Sanitizer.routeName("_x")).isEqualTo("\"_x\"");
    assertThat(Sanitizer.routeName("x".repeat(65))).isEqualTo("\"" + "x".repeat(65) + "\"");
    assertThat(Sanitizer.routeName(HOSTILE)).isEqualTo(HOSTILE_SHOWN);
    // Not from a file (RouteKeys refuses them), but a Policy built in code may hold them.
    assertThat(Sanitizer.routeName("a\nb\u2028\u0085")).isEqualTo("\"a\\u000ab\\u2028\\u0085\"");
  }

  @Test
  void aLogLineAndTheExitSummaryQuoteTheName() {
    List<String> lines = new CopyOnWriteArrayList<>();
    RetryMetrics m = new RetryMetrics();
    Rig rig =
        new Rig(Rig.policy("x, observe"), new LogListener(LogLevel.INFO, lines::add, null), m);

    rig.call(FakeRequest.get("api.example.com", "/v1/x"), 503, 200);

    assertThat(lines)
        .containsExactly(
            "retry-agent: GET api.example.com/v1/x attempt 1 failed (503), retrying in 117ms"
                + " [route=\"x, observe\"]",
            "retry-agent: GET api.example.com/v1/x succeeded (200) on attempt 2 after 117ms"
                + " [route=\"x, observe\"]");
    assertThat(ExitSummary.line(HOSTILE, m.route("x, observe")))
        .startsWith("retry-agent: summary [route=" + HOSTILE_SHOWN + "] calls=1 ");
    assertThat(ExitSummary.line("llm", m.route("x, observe")))
        .startsWith("retry-agent: summary [route=llm] calls=1 ");
  }

  @Test
  void aRetryEventsTextQuotesTheNameAsTheLogLinesDo() {
    // RetryEvent.toString, what a listener of the library prints (docs/library.md), wrote
    // [route=x, observe] for a route named "x, observe" in enforce mode.
    List<String> events = new CopyOnWriteArrayList<>();
    Rig rig = new Rig(Rig.policy("x, observe"), retries(events));
    rig.call(FakeRequest.get("api.example.com", "/v1/x"), 503, 200);
    assertThat(events).isNotEmpty().allMatch(e -> e.endsWith(" [route=\"x, observe\"]"));

    List<String> plain = new CopyOnWriteArrayList<>();
    new Rig(Rig.policy("llm"), retries(plain))
        .call(FakeRequest.get("api.example.com", "/v1/x"), 503, 200);
    assertThat(plain).isNotEmpty().allMatch(e -> e.endsWith(" [route=llm]"));
  }

  private static dev.retryagent.engine.RetryListener retries(List<String> out) {
    return new dev.retryagent.engine.RetryListener() {
      @Override
      public void onRetry(dev.retryagent.engine.RetryEvent event) {
        out.add(event.toString());
      }
    };
  }

  @Test
  void aRouteScopedBreakersLinesQuoteTheName() {
    List<String> lines = new CopyOnWriteArrayList<>();
    Rig rig =
        new Rig(
            Rig.breakerPolicy("openai:chat", CircuitBreakerPolicy.Scope.ROUTE),
            new LogListener(LogLevel.INFO, lines::add, null));
    FakeRequest r = FakeRequest.get("api.example.com", "/v1/x");
    for (int i = 0; i < 4; i++) {
      rig.call(r, 503);
    }
    rig.call(r);
    rig.time.advance(Duration.ofSeconds(30).toNanos());

    List<String> breaker =
        lines.stream().filter(l -> l.contains("circuit breaker")).collect(Collectors.toList());
    assertThat(breaker).isNotEmpty();
    assertThat(breaker.get(0))
        .startsWith("retry-agent: circuit breaker route:\"openai:chat\" opened");
    assertThat(breaker.get(breaker.size() - 1))
        .contains("failed fast: circuit breaker route:\"openai:chat\" is open")
        .endsWith("[route=\"openai:chat\"]");
  }

  @Test
  void aDeadLetterHoldsTheNameAsWritten() throws IOException {
    Path file = dir.resolve("dead.jsonl");
    DeadLetterWriter w = new DeadLetterWriter(file, e -> {});
    try {
      new Rig(Rig.policy(HOSTILE), w).call(FakeRequest.post("pay.example.com", "/v1/charges"), 503);
    } finally {
      w.close();
    }
    List<String> lines = Files.readAllLines(file, StandardCharsets.UTF_8);
    assertThat(lines).hasSize(1);
    assertThat(MiniJson.parseObject(lines.get(0)).get("route")).isEqualTo(HOSTILE);
  }

  @Test
  void prometheusLabelsAndJmxNamesKeepTheNameWhole() throws Exception {
    RetryMetrics m = new RetryMetrics();
    List<String> names = new ArrayList<>();
    names.add(HOSTILE);
    names.add("Payments API");
    names.add("openai:chat");
    names.add("llm");
    for (String name : names) {
      new Rig(Rig.policy(name), m).call(FakeRequest.get("api.example.com", "/v1/x"), 200);
    }

    String text = PrometheusText.render(m, null);
    assertThat(text)
        .contains(
            "retryagent_calls_total{route=\"Pay \\\"v2\\\" a\\\\b, x=1: *? caf\u00e9] calls=0\","
                + "host=\"https://api.example.com:443\"} 1")
        .contains("retryagent_calls_total{route=\"llm\",host=\"https://api.example.com:443\"} 1");
    for (String line : text.split("\n")) {
      if (!line.startsWith("#")) {
        assertThat(line).as(line).matches("[a-z_]+(\\{.*\\})? [0-9]+");
      }
    }

    String domain = "dev.retryagent.routenames";
    List<String> errors = new CopyOnWriteArrayList<>();
    JmxMetrics jmx = new JmxMetrics(m, null, errors::add, domain);
    try {
      assertThat(jmx.register()).isTrue();
      MBeanServer server = ManagementFactory.getPlatformMBeanServer();
      for (String name : names) {
        ObjectName on = JmxMetrics.routeName(domain, name);
        assertThat(on.isPattern()).as(name).isFalse();
        String value = on.getKeyProperty("name");
        assertThat(value.startsWith("\"") ? ObjectName.unquote(value) : value).isEqualTo(name);
        assertThat(server.getAttribute(on, "Calls")).as(name).isEqualTo(1L);
      }
      assertThat(JmxMetrics.routeName(domain, "llm")).hasToString(domain + ":type=Route,name=llm");
      assertThat(JmxMetrics.routeName(domain, "Payments API"))
          .hasToString(domain + ":type=Route,name=Payments API");
      assertThat(JmxMetrics.routeName(domain, "openai:chat"))
          .hasToString(domain + ":type=Route,name=\"openai:chat\"");
      assertThat(errors).isEmpty();
    } finally {
      jmx.unregister();
    }
  }
}
