package dev.retryagent.it;

import static dev.retryagent.it.harness.Reply.ok;
import static dev.retryagent.it.harness.Reply.status;
import static org.assertj.core.api.Assertions.assertThat;

import dev.retryagent.it.apps.OtelApp;
import dev.retryagent.it.harness.ApacheVersions;
import dev.retryagent.it.harness.CountingServer;
import dev.retryagent.it.harness.ExportedSpans;
import dev.retryagent.it.harness.ExportedSpans.Span;
import dev.retryagent.it.harness.ForkedJvm;
import dev.retryagent.it.harness.Jdks;
import dev.retryagent.it.harness.OkHttpVersions;
import dev.retryagent.it.harness.RecordedRequest;
import java.net.URISyntaxException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.Named;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * HttpClient 5.x's async client ({@code HttpAsyncClients.createDefault()}, 5.6.5, a {@code
 * FutureCallback}) beside the OpenTelemetry Java agent (2.33.1, its {@code apache-httpclient-5.0}
 * instrumentation), each order on its JDK (retry-agent first on 17, OpenTelemetry first on 25), a
 * GET answered 503, 503, 200 with and without an application span, against three runs: both agents,
 * retry-agent alone, OpenTelemetry alone. With both, the application gets the 200 after three
 * requests, as with retry-agent alone; OpenTelemetry makes its one CLIENT span for the call, as it
 * does alone (under the application's span, or a root), every request carrying it (as HttpClient's
 * own resend does); retry-agent adds no CLIENT span; the application's callback sees the span it
 * sees without retry-agent; nothing in the log says anything failed. OpenTelemetry starts its span
 * before the execution chain and does not make it current there: retry-agent's handler does not see
 * it (docs/opentelemetry.md).
 */
class OpenTelemetryApacheAsyncIT {
  private static final List<String> SCENARIOS = List.of("ap5async-root", "ap5async-app");

  static Stream<Arguments> ordersAndJdks() {
    return Stream.of(
        Arguments.of(Named.of("retry-agent first", true), Named.of("JDK 17", Jdks.jdk17())),
        Arguments.of(Named.of("OpenTelemetry first", false), Named.of("JDK 25", Jdks.jdk25())));
  }

  private static Path resource(String name) {
    try {
      return Path.of(OpenTelemetryApacheAsyncIT.class.getResource("/" + name).toURI());
    } catch (URISyntaxException e) {
      throw new IllegalStateException(e);
    }
  }

  record Run(ForkedJvm.Result result, List<RecordedRequest> requests) {}

  private static Run run(Path jdk, boolean retry, boolean otel, boolean retryFirst)
      throws Exception {
    try (CountingServer server = CountingServer.start()) {
      for (int i = 0; i < SCENARIOS.size(); i++) {
        server.enqueue(status(503), status(503), ok("fine"));
      }
      server.setDefaultReply(status(503));
      List<String> agents = new ArrayList<>();
      String r = "-javaagent:" + ForkedJvm.agentJar() + "=" + resource("otel.yml");
      String o = "-javaagent:" + ApacheVersions.jarsIn("otel-agent")[0];
      if (retry && otel) {
        agents.add(retryFirst ? r : o);
        agents.add(retryFirst ? o : r);
      } else if (retry) {
        agents.add(r);
      } else if (otel) {
        agents.add(o);
      }
      List<String> args = new ArrayList<>();
      args.add(server.uri("").toString());
      args.addAll(SCENARIOS);
      ForkedJvm.Result run =
          ForkedJvm.builder(jdk)
              .withoutAgent()
              .jvmArgs(agents.toArray(String[]::new))
              .jvmArgs(
                  "-Dotel.traces.exporter=logging-otlp",
                  "-Dotel.metrics.exporter=none",
                  "-Dotel.logs.exporter=none",
                  "-Dotel.bsp.schedule.delay=50",
                  "-Dotel.instrumentation.common.default-enabled=false",
                  "-Dotel.instrumentation.apache-httpclient.enabled=true",
                  "-Dotel.instrumentation.executors.enabled=true",
                  "-Dotel.instrumentation.opentelemetry-api.enabled=true")
              .mainClass(OtelApp.class)
              .classpath(ApacheVersions.jarsIn("otel-api"))
              // the application's other clients, unused here but linked by its main class
              .classpath(OkHttpVersions.V4.jars())
              .classpath(ApacheVersions.V4_5.jars())
              .classpath(ApacheVersions.V5_6.jars())
              .args(args.toArray(String[]::new))
              .timeout(Duration.ofSeconds(180))
              .run();
      assertThat(run.exitCode()).as(run.describe()).isZero();
      return new Run(run, server.requests());
    }
  }

  @ParameterizedTest(name = "{0}, {1}")
  @MethodSource("ordersAndJdks")
  void aRetried503IsAnsweredAsWithRetryAgentAloneAndTracedAsOpenTelemetryTracesIt(
      boolean retryFirst, Path jdk) throws Exception {
    Run both = run(jdk, true, true, retryFirst);
    Run retryAlone = run(jdk, true, false, retryFirst);
    Run otelAlone = run(jdk, false, true, retryFirst);
    ForkedJvm.Result b = both.result();
    List<Span> spans = ExportedSpans.parse(b.stderr());
    List<Span> otelSpans = ExportedSpans.parse(otelAlone.result().stderr());
    String why =
        "both:\n"
            + b.describe()
            + "\nretry-agent alone:\n"
            + retryAlone.result().describe()
            + "\nOpenTelemetry alone:\n"
            + otelAlone.result().describe();
    assertThat(b.stderr()).as(why).doesNotContain("internal error").doesNotContain("NOT hooked");

    for (String scenario : SCENARIOS) {
      String as = scenario + ": " + why;
      // Answered as with retry-agent alone: the 200 after its three attempts.
      assertThat(b.value(scenario + ".status"))
          .as(as)
          .isEqualTo(retryAlone.result().value(scenario + ".status"))
          .isEqualTo("200");
      List<RecordedRequest> sent = ofPath(both.requests(), scenario);
      assertThat(sent).as(as).hasSize(3);
      assertThat(ofPath(retryAlone.requests(), scenario)).as(as).hasSize(3);

      // Traced as OpenTelemetry alone traces the call: its one CLIENT span, under the
      // application's span or a root; no CLIENT span of retry-agent's (it makes none for this
      // client), and every request carries OpenTelemetry's span, as HttpClient's own resend does.
      Span call = single(as, ExportedSpans.clientSpansOf(spans, "/" + scenario));
      Span alone = single(as, ExportedSpans.clientSpansOf(otelSpans, "/" + scenario));
      assertThat(call.scope()).as(as).isEqualTo(alone.scope()).startsWith("io.opentelemetry.");
      assertThat(call.name()).as(as).isEqualTo(alone.name()).isEqualTo("GET");
      assertThat(call.attribute("http.response.status_code")).as(as).isEqualTo("200");
      assertThat(sent)
          .as(as)
          .extracting(q -> q.header("traceparent"))
          .allSatisfy(tp -> assertThat(tp).startsWith(traceparentOf(call)));
      assertThat(ofPath(otelAlone.requests(), scenario))
          .as(as)
          .extracting(q -> q.header("traceparent"))
          .allSatisfy(tp -> assertThat(tp).startsWith(traceparentOf(alone)));
      if (scenario.endsWith("-app")) {
        assertThat(call.parentSpanId()).as(as).isEqualTo(b.value(scenario + ".appSpan"));
        assertThat(alone.parentSpanId())
            .as(as)
            .isEqualTo(otelAlone.result().value(scenario + ".appSpan"));
        // the retries' waits as events of the application's span, as for the other clients
        Span app = spanById(spans, b.value(scenario + ".appSpan"));
        assertThat(app.events())
            .as(as)
            .filteredOn(e -> e.name().equals("retry_agent.retry"))
            .hasSize(2);
      } else {
        assertThat(call.parentSpanId()).as(as).isEmpty();
        assertThat(alone.parentSpanId()).as(as).isEmpty();
      }
      // The application's callback sees the span it sees with OpenTelemetry alone.
      assertThat(b.value(scenario + ".callbackSpan"))
          .as(as)
          .isEqualTo(
              scenario.endsWith("-app")
                  ? b.value(scenario + ".appSpan")
                  : otelAlone.result().value(scenario + ".callbackSpan"));
    }
    assertThat(spans)
        .as("no CLIENT span of retry-agent's: " + why)
        .noneMatch(s -> s.scope().equals("dev.retryagent") && s.kind() == ExportedSpans.CLIENT);
  }

  private static List<RecordedRequest> ofPath(List<RecordedRequest> requests, String scenario) {
    return requests.stream()
        .filter(q -> q.target().equals("/" + scenario))
        .collect(Collectors.toList());
  }

  private static Span single(String as, List<Span> spans) {
    assertThat(spans).as(as).hasSize(1);
    return spans.get(0);
  }

  private static Span spanById(List<Span> spans, String id) {
    return spans.stream()
        .filter(s -> s.spanId().equals(id))
        .findFirst()
        .orElseThrow(() -> new AssertionError("no span " + id + " in " + spans));
  }

  /** Version, trace id, span id of {@code span}'s traceparent (the flags differ by version). */
  private static String traceparentOf(Span span) {
    return "00-" + span.traceId() + "-" + span.spanId() + "-";
  }
}
