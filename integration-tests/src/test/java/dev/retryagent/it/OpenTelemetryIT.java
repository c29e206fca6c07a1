package dev.retryagent.it;

import static dev.retryagent.it.harness.Reply.ok;
import static dev.retryagent.it.harness.Reply.status;
import static org.assertj.core.api.Assertions.assertThat;

import dev.retryagent.it.apps.JdkHttpApp;
import dev.retryagent.it.apps.OtelApp;
import dev.retryagent.it.apps.UrlClientsApp;
import dev.retryagent.it.harness.ApacheVersions;
import dev.retryagent.it.harness.CountingServer;
import dev.retryagent.it.harness.ExportedSpans;
import dev.retryagent.it.harness.ExportedSpans.Span;
import dev.retryagent.it.harness.ForkedJvm;
import dev.retryagent.it.harness.Jdks;
import dev.retryagent.it.harness.OkHttpVersions;
import dev.retryagent.it.harness.RecordedRequest;
import dev.retryagent.it.harness.TlsCountingServer;
import java.net.URISyntaxException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import java.util.zip.ZipFile;
import org.junit.jupiter.api.Named;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * With the real OpenTelemetry Java agent in the same JVM, in either {@code -javaagent} order: every
 * attempt of a retried call is a CLIENT span of one trace, under the application's span or, without
 * one, under the agent's INTERNAL span for the call; {@code http.request.resend_count} 1 and 2 on
 * the resends; each request the server saw carries its own attempt's span; the waits and the
 * give-up reason as span events; the application's span and callbacks as without the agent. For
 * {@code java.net.http} ({@code send}, {@code sendAsync}), OkHttp ({@code execute}, {@code
 * enqueue}) and {@code HttpURLConnection} (a GET, over http and https; a PUT whose streamed body is
 * replayed), against a server answering 503, 503, 200; a POST answered 503 is one span, as without
 * the agent. Apache HttpClient 5.x and 4.5, whose whole {@code execute} is the OpenTelemetry
 * agent's one span: that span is the first attempt's, and each resend a CLIENT span of
 * retry-agent's under it. All scenarios of one order and JDK run in one forked JVM (the
 * OpenTelemetry agent takes seconds to start). HttpClient 5.x's async client in runs of its own,
 * beside each agent alone ({@link
 * #asyncApacheIsAnsweredAsWithRetryAgentAloneAndTracedAsByOpenTelemetry}).
 */
class OpenTelemetryIT {
  private static final List<String> THREE_ATTEMPTS =
      List.of(
          "send-root",
          "send-app",
          "async-root",
          "async-app",
          "okexec-root",
          "okexec-app",
          "okenq-root",
          "okenq-app",
          "url-root",
          "url-app",
          "urlput-app",
          "urls-root");
  private static final String GIVE_UP = "send-giveup";

  /** A POST the policy never repeats, answered 503: one attempt, as without the agent. */
  private static final String NOT_RETRIED = "urlpost-app";

  private static final String NO_SPAN = "0000000000000000";

  /**
   * Apache HttpClient 5.x and 4.5, answered 503, 503, 200: the OpenTelemetry agent's span wraps the
   * whole {@code execute} and is the first attempt's; each resend is a CLIENT span of retry-agent's
   * under it.
   */
  private static final List<String> APACHE = List.of("ap5-root", "ap5-app", "ap4-root", "ap4-app");

  /** An Apache HttpClient 5.x POST answered 503, never repeated: traced as without the agent. */
  private static final String APACHE_NOT_RETRIED = "ap5post-app";

  /**
   * HttpClient 5.x's async client, answered 503, 503, 200: the OpenTelemetry agent's one span for
   * the whole call ({@link #asyncApacheIsAnsweredAsWithRetryAgentAloneAndTracedAsByOpenTelemetry}).
   */
  private static final List<String> ASYNC_APACHE = List.of("ap5async-root", "ap5async-app");

  /** One JVM per order, each order on another JDK: both orders and both JDKs in two runs. */
  static Stream<Arguments> ordersAndJdks() {
    return Stream.of(
        Arguments.of(Named.of("retry-agent first", true), Named.of("JDK 17", Jdks.jdk17())),
        Arguments.of(Named.of("OpenTelemetry first", false), Named.of("JDK 25", Jdks.jdk25())));
  }

  /**
   * The OpenTelemetry agent's options: spans to stderr ({@code logging-otlp}, exported every 50
   * ms), no metrics or logs, and of its instrumentations only {@code instrumentations} and the
   * API's bridge (the others off, for a shorter start-up).
   */
  private static String[] otelOptions(String... instrumentations) {
    List<String> options =
        new ArrayList<>(
            List.of(
                "-Dotel.traces.exporter=logging-otlp",
                "-Dotel.metrics.exporter=none",
                "-Dotel.logs.exporter=none",
                "-Dotel.bsp.schedule.delay=50",
                "-Dotel.instrumentation.common.default-enabled=false",
                "-Dotel.instrumentation.opentelemetry-api.enabled=true"));
    for (String i : instrumentations) {
      options.add("-Dotel.instrumentation." + i + ".enabled=true");
    }
    return options.toArray(String[]::new);
  }

  private static Path resource(String name) {
    try {
      return Path.of(OpenTelemetryIT.class.getResource("/" + name).toURI());
    } catch (URISyntaxException e) {
      throw new IllegalStateException(e);
    }
  }

  @ParameterizedTest(name = "{0}, {1}")
  @MethodSource("ordersAndJdks")
  void everyAttemptIsAClientSpanOfTheCallsTrace(boolean retryFirst, Path jdk, @TempDir Path tmp)
      throws Exception {
    try (CountingServer server = CountingServer.start();
        TlsCountingServer tls = TlsCountingServer.start(tmp)) {
      tls.enqueue(status(503), status(503), ok("fine")); // the https scenario's
      long onHttp = THREE_ATTEMPTS.stream().filter(sc -> !sc.startsWith("urls-")).count();
      for (long i = 0; i < onHttp; i++) {
        server.enqueue(status(503), status(503), ok("fine"));
      }
      server.enqueue(status(503), status(503), status(503));
      server.enqueue(status(503));
      for (int i = 0; i < APACHE.size(); i++) {
        server.enqueue(status(503), status(503), ok("fine"));
      }
      server.enqueue(status(503));
      String retry = "-javaagent:" + ForkedJvm.agentJar() + "=" + resource("otel.yml");
      String otel = "-javaagent:" + ApacheVersions.jarsIn("otel-agent")[0];
      List<String> args = new ArrayList<>();
      args.add(server.uri("").toString());
      args.addAll(THREE_ATTEMPTS);
      args.add(GIVE_UP);
      args.add(NOT_RETRIED);
      args.addAll(APACHE);
      args.add(APACHE_NOT_RETRIED);

      ForkedJvm.Result run =
          ForkedJvm.builder(jdk)
              .withoutAgent()
              .jvmArgs(retryFirst ? retry : otel, retryFirst ? otel : retry)
              .jvmArgs(tls.trustStoreOptions().toArray(String[]::new))
              .jvmArgs("-Dotelit.https=" + tls.uri(""))
              // the instrumentations these calls need (the executors carry an enqueued call's
              // context to its dispatcher thread)
              .jvmArgs(
                  otelOptions(
                      "java-http-client",
                      "okhttp",
                      "http-url-connection",
                      "apache-httpclient",
                      "executors"))
              .mainClass(OtelApp.class)
              .classpath(ApacheVersions.jarsIn("otel-api"))
              .classpath(OkHttpVersions.V4.jars())
              .classpath(ApacheVersions.V4_5.jars())
              .classpath(ApacheVersions.V5_6.jars())
              .args(args.toArray(String[]::new))
              .timeout(Duration.ofSeconds(180))
              .run();

      assertThat(run.exitCode()).as(run.stderr()).isZero();
      List<Span> spans = ExportedSpans.parse(run.stderr());
      Map<String, List<RecordedRequest>> byPath =
          Stream.concat(server.requests().stream(), tls.requests().stream())
              .collect(Collectors.groupingBy(RecordedRequest::target));
      for (String scenario : THREE_ATTEMPTS) {
        assertThat(run.value(scenario + ".status")).as(scenario).isEqualTo("200");
        List<Span> attempts = checkAttempts(scenario, spans, byPath, "200");
        Span parent = spanById(spans, attempts.get(0).parentSpanId());
        if (scenario.endsWith("-app")) {
          // the application's own span: its id, its trace, a root, with the retries' events
          assertThat(parent.spanId()).isEqualTo(run.value(scenario + ".appSpan"));
          assertThat(parent.traceId()).isEqualTo(run.value(scenario + ".trace"));
          assertThat(parent.scope()).isEqualTo("otel-it-app");
          assertThat(parent.parentSpanId()).isEmpty();
          assertThat(spans)
              .as("no span of the agent's under an application span")
              .noneMatch(
                  s -> s.scope().equals("dev.retryagent") && s.traceId().equals(parent.traceId()));
        } else {
          checkCallSpan(parent, scenario);
          assertThat(parent.attribute("retry_agent.attempts")).isEqualTo("3");
          assertThat(parent.statusCode()).isNotEqualTo("2");
        }
        assertThat(retryEvents(parent))
            .as(scenario + ": the waits before the retries")
            .containsExactly("503 after attempt 1, wait 50 ms", "503 after attempt 2, wait 100 ms");
        if (scenario.startsWith("async") || scenario.startsWith("okenq")) {
          assertThat(run.value(scenario + ".callbackSpan"))
              .as(scenario + ": the application's stage sees its own span, as without the agent")
              .isEqualTo(scenario.endsWith("-app") ? run.value(scenario + ".appSpan") : NO_SPAN);
        }
      }

      assertThat(run.value(GIVE_UP + ".status")).isEqualTo("503");
      List<Span> attempts = checkAttempts(GIVE_UP, spans, byPath, "503");
      Span callSpan = spanById(spans, attempts.get(0).parentSpanId());
      checkCallSpan(callSpan, GIVE_UP);
      assertThat(callSpan.statusCode()).as("ERROR").isEqualTo("2");
      assertThat(callSpan.events())
          .filteredOn(e -> e.name().equals("retry_agent.give_up"))
          .singleElement()
          .satisfies(
              e -> {
                assertThat(e.attributes()).containsEntry("retry_agent.reason", "attempts");
                assertThat(e.attributes()).containsEntry("retry_agent.attempt", "3");
                assertThat(e.attributes()).containsEntry("retry_agent.route", "default");
              });

      assertThat(byPath.get("/urlput-app"))
          .as("the streamed body, on the first attempt and replayed on the others")
          .extracting(RecordedRequest::bodyText)
          .containsExactly("body of urlput-app", "body of urlput-app", "body of urlput-app");
      checkNotRetried(run, spans, byPath.get("/" + NOT_RETRIED));
      for (String scenario : APACHE) {
        checkApacheResends(run, scenario, spans, byPath.get("/" + scenario));
      }
      checkApacheNotRetried(run, spans, byPath.get("/" + APACHE_NOT_RETRIED));
    }
  }

  /**
   * Apache HttpClient, 503, 503, 200: the OpenTelemetry agent's one CLIENT span for the call (under
   * the application's span, or a root) is the first attempt's, its request carrying it, with the
   * retries' events; each resend is a CLIENT span of retry-agent's under it, resend counts 1 and 2,
   * its request carrying it.
   */
  private static void checkApacheResends(
      ForkedJvm.Result run, String scenario, List<Span> spans, List<RecordedRequest> requests) {
    assertThat(run.value(scenario + ".status")).as(scenario).isEqualTo("200");
    assertThat(requests).as(scenario).hasSize(3);
    List<Span> all = ExportedSpans.clientSpansOf(spans, "/" + scenario);
    Span call =
        all.stream()
            .filter(s -> !s.scope().equals("dev.retryagent"))
            .collect(Collectors.collectingAndThen(Collectors.toList(), l -> single(scenario, l)));
    assertThat(call.scope()).as(scenario).startsWith("io.opentelemetry.apache-httpclient");
    assertThat(call.attribute("http.response.status_code")).isEqualTo("200");
    if (scenario.endsWith("-app")) {
      assertThat(call.parentSpanId()).isEqualTo(run.value(scenario + ".appSpan"));
      assertThat(call.traceId()).isEqualTo(run.value(scenario + ".trace"));
    } else {
      assertThat(call.parentSpanId()).as(scenario + ": a root").isEmpty();
    }
    List<Span> resends =
        all.stream().filter(s -> s.scope().equals("dev.retryagent")).collect(Collectors.toList());
    assertThat(resends).as(scenario + ": one CLIENT span per resend").hasSize(2);
    Map<String, String> statusByResend = new HashMap<>();
    for (Span r : resends) {
      assertThat(r.kind()).isEqualTo(call.kind());
      assertThat(r.name()).isEqualTo("GET");
      assertThat(r.parentSpanId())
          .as(scenario + ": under the call's span")
          .isEqualTo(call.spanId());
      assertThat(r.traceId()).isEqualTo(call.traceId());
      assertThat(r.attribute("http.request.method")).isEqualTo("GET");
      assertThat(r.attribute("server.port")).isEqualTo(call.attribute("server.port"));
      assertThat(r.attribute("url.full")).isEqualTo(call.attribute("url.full"));
      statusByResend.put(
          r.attribute("http.request.resend_count"), r.attribute("http.response.status_code"));
      if ("503".equals(r.attribute("http.response.status_code"))) {
        assertThat(r.attribute("error.type")).isEqualTo("503");
        assertThat(r.statusCode()).as("ERROR").isEqualTo("2");
      }
    }
    assertThat(statusByResend).as(scenario).isEqualTo(Map.of("1", "503", "2", "200"));
    assertThat(retryEvents(call))
        .as(scenario + ": the waits before the retries")
        .containsExactly("503 after attempt 1, wait 50 ms", "503 after attempt 2, wait 100 ms");
    List<String> expected = new ArrayList<>();
    expected.add(traceparentOf(call));
    resends.forEach(r -> expected.add(traceparentOf(r)));
    assertThat(requests.stream().map(OpenTelemetryIT::traceparentSent))
        .as(scenario + ": each request carries its own attempt's span")
        .containsExactlyInAnyOrderElementsOf(expected);
  }

  /** A POST never repeated: the OpenTelemetry agent's one span, as without retry-agent. */
  private static void checkApacheNotRetried(
      ForkedJvm.Result run, List<Span> spans, List<RecordedRequest> requests) {
    String scenario = APACHE_NOT_RETRIED;
    assertThat(run.value(scenario + ".status")).isEqualTo("503");
    assertThat(requests).hasSize(1);
    assertThat(requests.get(0).bodyText()).isEqualTo("body of " + scenario);
    Span call = single(scenario, ExportedSpans.clientSpansOf(spans, "/" + scenario));
    assertThat(call.scope()).startsWith("io.opentelemetry.apache-httpclient");
    assertThat(call.parentSpanId()).isEqualTo(run.value(scenario + ".appSpan"));
    assertThat(traceparentSent(requests.get(0))).isEqualTo(traceparentOf(call));
    assertThat(call.events())
        .filteredOn(e -> e.name().equals("retry_agent.give_up"))
        .singleElement()
        .satisfies(
            e -> assertThat(e.attributes()).containsEntry("retry_agent.reason", "not-idempotent"));
  }

  private static Span single(String scenario, List<Span> spans) {
    assertThat(spans).as(scenario).hasSize(1);
    return spans.get(0);
  }

  /** Version, trace id, parent id; not the flags (sampled, and random on newer agents). */
  private static String traceparentSent(RecordedRequest request) {
    String tp = request.header("traceparent");
    return tp == null ? null : tp.substring(0, tp.lastIndexOf('-'));
  }

  private static String traceparentOf(Span span) {
    return "00-" + span.traceId() + "-" + span.spanId();
  }

  /**
   * A POST answered 503, never repeated: one request with its body, one CLIENT span under the
   * application's span, no resend count, the request carrying that span; the give-up on the
   * application's span.
   */
  private static void checkNotRetried(
      ForkedJvm.Result run, List<Span> spans, List<RecordedRequest> requests) {
    assertThat(run.value(NOT_RETRIED + ".status")).isEqualTo("503");
    assertThat(requests).hasSize(1);
    assertThat(requests.get(0).method()).isEqualTo("POST");
    assertThat(requests.get(0).bodyText()).isEqualTo("body of " + NOT_RETRIED);
    List<Span> attempts = ExportedSpans.clientSpansOf(spans, "/" + NOT_RETRIED);
    assertThat(attempts).as(NOT_RETRIED + ": one CLIENT span").hasSize(1);
    Span attempt = attempts.get(0);
    assertThat(attempt.attribute("http.request.method")).isEqualTo("POST");
    assertThat(attempt.attribute("http.response.status_code")).isEqualTo("503");
    assertThat(attempt.attribute("http.request.resend_count")).isNull();
    assertThat(attempt.parentSpanId()).isEqualTo(run.value(NOT_RETRIED + ".appSpan"));
    assertThat(attempt.traceId()).isEqualTo(run.value(NOT_RETRIED + ".trace"));
    String traceparent = requests.get(0).header("traceparent");
    assertThat(traceparent.substring(0, traceparent.lastIndexOf('-')))
        .isEqualTo("00-" + attempt.traceId() + "-" + attempt.spanId());
    Span app = spanById(spans, attempt.parentSpanId());
    assertThat(retryEvents(app)).isEmpty();
    assertThat(app.events())
        .filteredOn(e -> e.name().equals("retry_agent.give_up"))
        .singleElement()
        .satisfies(
            e -> assertThat(e.attributes()).containsEntry("retry_agent.reason", "not-idempotent"));
  }

  /**
   * The three CLIENT spans of {@code scenario}: one trace, one parent, resend counts absent, 1, 2
   * on the 503, 503 and {@code lastStatus}; each request the server saw carried one of them.
   */
  private static List<Span> checkAttempts(
      String scenario,
      List<Span> spans,
      Map<String, List<RecordedRequest>> byPath,
      String lastStatus) {
    List<Span> attempts = ExportedSpans.clientSpansOf(spans, "/" + scenario);
    assertThat(attempts).as(scenario + ": one CLIENT span per attempt").hasSize(3);
    assertThat(attempts.stream().map(Span::traceId).distinct()).as(scenario).hasSize(1);
    assertThat(attempts.stream().map(Span::parentSpanId).distinct())
        .as(scenario + ": the same parent")
        .hasSize(1)
        .doesNotContain("");
    Map<String, String> statusByResend = new HashMap<>();
    for (Span s : attempts) {
      statusByResend.put(
          String.valueOf(s.attribute("http.request.resend_count")),
          s.attribute("http.response.status_code"));
    }
    assertThat(statusByResend)
        .as(scenario + ": resend_count by status")
        .isEqualTo(Map.of("null", "503", "1", "503", "2", lastStatus));
    List<String> sent =
        byPath.get("/" + scenario).stream()
            .map(r -> r.header("traceparent"))
            // version, trace id, parent id; not the flags (sampled, and random on newer agents)
            .map(tp -> tp == null ? null : tp.substring(0, tp.lastIndexOf('-')))
            .collect(Collectors.toList());
    List<String> expected =
        attempts.stream()
            .map(s -> "00-" + s.traceId() + "-" + s.spanId())
            .collect(Collectors.toList());
    assertThat(sent)
        .as(scenario + ": each request carries its own attempt's span")
        .containsExactlyInAnyOrderElementsOf(expected);
    return attempts;
  }

  /** The agent's span for a call made outside any span: INTERNAL, a root, the request named. */
  private static void checkCallSpan(Span call, String scenario) {
    assertThat(call.scope()).as(scenario).isEqualTo("dev.retryagent");
    assertThat(call.kind()).isEqualTo(ExportedSpans.INTERNAL);
    assertThat(call.name()).isEqualTo("GET (retry-agent)");
    assertThat(call.parentSpanId()).isEmpty();
    // otel.yml masks this scenario's segment (agent.redact.pathSegments), as its log lines do
    assertThat(call.attribute("url.path"))
        .isEqualTo(scenario.equals(GIVE_UP) ? "/<redacted>" : "/" + scenario);
    assertThat(call.attribute("retry_agent.route")).isEqualTo("default");
  }

  private static List<String> retryEvents(Span span) {
    return span.events().stream()
        .filter(e -> e.name().equals("retry_agent.retry"))
        .map(
            e ->
                e.attributes().get("retry_agent.outcome")
                    + " after attempt "
                    + e.attributes().get("retry_agent.attempt")
                    + ", wait "
                    + e.attributes().get("retry_agent.delay_ms")
                    + " ms")
        .collect(Collectors.toList());
  }

  private static Span spanById(List<Span> spans, String id) {
    return spans.stream()
        .filter(s -> s.spanId().equals(id))
        .findFirst()
        .orElseThrow(() -> new AssertionError("no span " + id + " among " + spans));
  }

  /** What one run of {@link #asyncApache} printed and what its server saw. */
  record Run(ForkedJvm.Result result, List<RecordedRequest> requests) {}

  /**
   * {@link #ASYNC_APACHE}, each answered 503, 503, 200, with retry-agent, the OpenTelemetry agent,
   * or both in the order given.
   */
  private static Run asyncApache(Path jdk, boolean retry, boolean otel, boolean retryFirst)
      throws Exception {
    try (CountingServer server = CountingServer.start()) {
      for (int i = 0; i < ASYNC_APACHE.size(); i++) {
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
      args.addAll(ASYNC_APACHE);
      ForkedJvm.Result run =
          ForkedJvm.builder(jdk)
              .withoutAgent()
              .jvmArgs(agents.toArray(String[]::new))
              .jvmArgs(otelOptions("apache-httpclient", "executors"))
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

  /**
   * HttpClient 5.x's async client ({@code HttpAsyncClients.createDefault()}, 5.6.5, a {@code
   * FutureCallback}) beside the OpenTelemetry Java agent (2.33.1, its {@code apache-httpclient-5.0}
   * instrumentation), each order on its JDK (retry-agent first on 17, OpenTelemetry first on 25), a
   * GET answered 503, 503, 200 with and without an application span, against three runs: both
   * agents, retry-agent alone, OpenTelemetry alone. With both, the application gets the 200 after
   * three requests, as with retry-agent alone; OpenTelemetry makes its one CLIENT span for the
   * call, as it does alone (under the application's span, or a root), every request carrying it (as
   * HttpClient's own resend does); retry-agent adds no CLIENT span; the application's callback sees
   * the span it sees without retry-agent; nothing in the log says anything failed. OpenTelemetry
   * starts its span before the execution chain and does not make it current there: retry-agent's
   * handler does not see it (docs/opentelemetry.md).
   */
  @ParameterizedTest(name = "{0}, {1}")
  @MethodSource("ordersAndJdks")
  void asyncApacheIsAnsweredAsWithRetryAgentAloneAndTracedAsByOpenTelemetry(
      boolean retryFirst, Path jdk) throws Exception {
    Run both = asyncApache(jdk, true, true, retryFirst);
    Run retryAlone = asyncApache(jdk, true, false, retryFirst);
    Run otelAlone = asyncApache(jdk, false, true, retryFirst);
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

    for (String scenario : ASYNC_APACHE) {
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
          .extracting(OpenTelemetryIT::traceparentSent)
          .containsOnly(traceparentOf(call));
      assertThat(ofPath(otelAlone.requests(), scenario))
          .as(as)
          .extracting(OpenTelemetryIT::traceparentSent)
          .containsOnly(traceparentOf(alone));
      if (scenario.endsWith("-app")) {
        assertThat(call.parentSpanId()).as(as).isEqualTo(b.value(scenario + ".appSpan"));
        assertThat(alone.parentSpanId())
            .as(as)
            .isEqualTo(otelAlone.result().value(scenario + ".appSpan"));
        // the retries' waits as events of the application's span, as for the other clients
        Span app = spanById(spans, b.value(scenario + ".appSpan"));
        assertThat(retryEvents(app))
            .as(as)
            .containsExactly("503 after attempt 1, wait 50 ms", "503 after attempt 2, wait 100 ms");
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

  /**
   * retry-agent first, and a call made inside the OpenTelemetry agent's {@code premain}, before it
   * sets its global instance: its GCP resource detector asks the metadata server through {@code
   * HttpURLConnection} (here mapped to loopback, where nothing listens). The application's calls
   * afterwards are traced as in the other order, not left untraced for the JVM's life.
   */
  @Test
  void aCallMadeWhileTheOpenTelemetryAgentStartsLeavesLaterCallsTraced(@TempDir Path tmp)
      throws Exception {
    Path hosts = tmp.resolve("hosts");
    // JDK 18+: the JVM's own resolver; the metadata server on loopback (nothing listens there)
    java.nio.file.Files.writeString(
        hosts, "127.0.0.1 metadata.google.internal\n127.0.0.1 localhost\n");
    try (CountingServer server = CountingServer.start()) {
      server.enqueue(status(503), status(503), ok("fine"));
      server.enqueue(status(503), status(503), ok("fine"));
      ForkedJvm.Result run =
          ForkedJvm.builder(Jdks.jdk25())
              .withoutAgent()
              .jvmArgs(
                  "-javaagent:" + ForkedJvm.agentJar() + "=" + resource("otel.yml"),
                  "-javaagent:" + ApacheVersions.jarsIn("otel-agent")[0])
              .jvmArgs(
                  "-Djdk.net.hosts.file=" + hosts, "-Dotel.resource.providers.gcp.enabled=true")
              .jvmArgs(otelOptions("java-http-client"))
              .mainClass(OtelApp.class)
              .classpath(ApacheVersions.jarsIn("otel-api"))
              .classpath(OkHttpVersions.V4.jars())
              .classpath(ApacheVersions.V4_5.jars())
              .classpath(ApacheVersions.V5_6.jars())
              .args(server.uri("").toString(), "send-root", "send-app")
              .timeout(Duration.ofSeconds(180))
              .run();

      assertThat(run.exitCode()).as(run.stderr()).isZero();
      assertThat(run.stderr())
          .as("the detector's call went through retry-agent, while OpenTelemetry was starting")
          .contains("metadata.google.internal")
          .doesNotContain("retried calls are not traced");
      List<Span> spans = ExportedSpans.parse(run.stderr());
      Map<String, List<RecordedRequest>> byPath =
          server.requests().stream().collect(Collectors.groupingBy(RecordedRequest::target));
      for (String scenario : List.of("send-root", "send-app")) {
        assertThat(run.value(scenario + ".status")).as(scenario).isEqualTo("200");
        List<Span> attempts = checkAttempts(scenario, spans, byPath, "200");
        Span parent = spanById(spans, attempts.get(0).parentSpanId());
        assertThat(retryEvents(parent))
            .as(scenario)
            .containsExactly("503 after attempt 1, wait 50 ms", "503 after attempt 2, wait 100 ms");
      }
    }
  }

  @Test
  void withoutOpenTelemetryNothingOfItIsLoadedAndTheJarBundlesNone(@TempDir Path tmp)
      throws Exception {
    Path classLog = tmp.resolve("classes.log");
    try (ZipFile jar = new ZipFile(ForkedJvm.agentJar().toFile())) {
      assertThat(jar.stream().map(e -> e.getName()))
          .as("no OpenTelemetry class of any kind in the agent's jar")
          .noneMatch(n -> n.contains("io/opentelemetry/"));
    }
    try (CountingServer server = CountingServer.start()) {
      server.enqueue(status(503), status(503), ok("fine"));
      ForkedJvm.Result run =
          ForkedJvm.builder(Jdks.jdk17())
              .agentArgs(resource("otel.yml").toString())
              .jvmArgs("-Xlog:class+load=info:file=" + classLog)
              .mainClass(JdkHttpApp.class)
              .args("send", server.uri("").toString(), "GET:/plain")
              .run();

      assertThat(run.value("1.status")).as(run.stderr()).isEqualTo("200");
      assertThat(server.requestCount()).isEqualTo(3);
      assertNothingOfOpenTelemetryLoaded(classLog);
    }
  }

  @Test
  void withoutOpenTelemetryAUrlConnectionCallLoadsNothingOfIt(@TempDir Path tmp) throws Exception {
    Path classLog = tmp.resolve("classes.log");
    try (CountingServer server = CountingServer.start()) {
      server.enqueue(status(503), status(503), ok("fine"));
      ForkedJvm.Result run =
          ForkedJvm.builder(Jdks.jdk17())
              .agentArgs(resource("otel.yml").toString())
              .jvmArgs("-Xlog:class+load=info:file=" + classLog)
              .mainClass(UrlClientsApp.class)
              .args("plain|url|GET|" + server.uri("/plain") + "||")
              .run();

      assertThat(run.value("plain.status")).as(run.stderr()).isEqualTo("200");
      assertThat(server.requestCount()).isEqualTo(3);
      assertNothingOfOpenTelemetryLoaded(classLog);
    }
  }

  /** The engine's context SPI is loaded (the call ran through it), nothing of OpenTelemetry. */
  private static void assertNothingOfOpenTelemetryLoaded(Path classLog) throws Exception {
    List<String> loaded = Arrays.asList(java.nio.file.Files.readString(classLog).split("\\R"));
    assertThat(loaded).anyMatch(l -> l.contains("dev.retryagent.engine.CallContext "));
    assertThat(loaded)
        .as("no glue, no OpenTelemetry class")
        .noneMatch(l -> l.contains("dev.retryagent.agent.otel.glue."))
        .noneMatch(l -> l.contains("io.opentelemetry."));
  }
}
