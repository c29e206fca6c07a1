package dev.retryagent.apache5;

import static dev.retryagent.testing.ScriptedHttpServer.Action.ok;
import static dev.retryagent.testing.ScriptedHttpServer.Action.reset;
import static dev.retryagent.testing.ScriptedHttpServer.Action.status;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.retryagent.apache4.RetryingCloseableHttpClient;
import dev.retryagent.engine.CallContext;
import dev.retryagent.engine.RetryEngine;
import dev.retryagent.testing.FakeTime;
import dev.retryagent.testing.ScriptedHttpServer;
import java.io.IOException;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.stream.Collectors;
import org.apache.hc.client5.http.classic.methods.HttpGet;
import org.apache.hc.client5.http.impl.classic.CloseableHttpClient;
import org.apache.hc.client5.http.impl.classic.HttpClients;
import org.apache.hc.core5.http.io.entity.EntityUtils;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Apache HttpClient's attempts tell the call's context ({@link CallContext#startAttempt}): once per
 * attempt, inside the call's context, before the request is sent, with a header setter that reaches
 * the wire; each attempt's span ends with its status or its failure. What makes per-attempt spans
 * for a client whose tracing wraps the whole {@code execute} (docs/opentelemetry.md). HttpClient
 * 5.x through {@link RetryExecHandler}, 4.5 through {@link RetryingCloseableHttpClient}; real
 * clients, a loopback server.
 */
class AttemptSpansTest {
  private final FakeTime time = new FakeTime();
  private final List<String> log = new CopyOnWriteArrayList<>();
  private final List<String> methods = new CopyOnWriteArrayList<>();
  private ScriptedHttpServer server;
  private boolean inCall;

  @BeforeEach
  void start() throws IOException {
    server = new ScriptedHttpServer();
  }

  @AfterEach
  void stop() throws IOException {
    server.close();
  }

  /** Numbers the attempts it is told of, sets {@code x-attempt-span: N} and logs each end. */
  private final class Recording implements CallContext {
    private int attempts;

    @Override
    public Scope enter() {
      inCall = true;
      return () -> inCall = false;
    }

    @Override
    public <R> AttemptSpan startAttempt(String method, R request, HeaderSetter<R> headers) {
      int n = ++attempts;
      methods.add(method);
      log.add("start " + n + (inCall ? " in the call's context" : " OUTSIDE the call's context"));
      headers.set(request, "x-attempt-span", Integer.toString(n));
      return (status, failure) ->
          log.add(
              "end "
                  + n
                  + ": "
                  + (failure != null
                      ? failure.getClass().getSimpleName()
                      : String.valueOf(status)));
    }
  }

  private RetryEngine engine() {
    return engine(call -> new Recording());
  }

  private RetryEngine engine(CallContext.Factory contexts) {
    return RetryEngine.builder().clock(time).sleeper(time::sleep).callContexts(contexts).build();
  }

  private List<String> spansSent() {
    return server.requests().stream()
        .map(r -> r.header("x-attempt-span"))
        .collect(Collectors.toList());
  }

  @Test
  void everyAttemptOfAnHttpClient5CallIsToldAndCarriesItsHeader() throws Exception {
    server.enqueue(status(503), reset(), ok("done"));
    try (CloseableHttpClient client =
        RetryExecHandler.addTo(HttpClients.custom(), engine()).build()) {
      String body =
          client.execute(
              new HttpGet(server.url("/five")), r -> EntityUtils.toString(r.getEntity()));

      assertThat(body).isEqualTo("done");
    }
    assertThat(log)
        .containsExactly(
            "start 1 in the call's context",
            "end 1: 503",
            "start 2 in the call's context",
            "end 2: SocketException",
            "start 3 in the call's context",
            "end 3: 200");
    assertThat(spansSent())
        .as("each request carries its own attempt's header")
        .containsExactly("1", "2", "3");
  }

  @Test
  void aRedirectsHopOfAnHttpClient5AttemptCarriesTheAttemptsHeaderToo() throws Exception {
    // RedirectExec sends the hop as a copy of the application's request, made below us: it went
    // out without the attempt's trace context, so the server saw it outside the attempt's trace
    // (the JDK's and OkHttp's hops, copies of the attempt's request, carry it; so do 4.5's).
    server.enqueue(status(302).header("Location", server.url("/target")), ok("done"));
    try (CloseableHttpClient client =
        RetryExecHandler.addTo(HttpClients.custom(), engine()).build()) {
      String body =
          client.execute(
              new HttpGet(server.url("/five")), r -> EntityUtils.toString(r.getEntity()));

      assertThat(body).isEqualTo("done");
    }
    assertThat(log).containsExactly("start 1 in the call's context", "end 1: 200");
    assertThat(spansSent()).containsExactly("1", "1");
  }

  @Test
  void anHttpClient5CallThatFailsEndsItsLastSpanWithTheFailure() throws Exception {
    server.enqueue(reset(), reset(), reset());
    try (CloseableHttpClient client =
        RetryExecHandler.addTo(HttpClients.custom(), engine()).build()) {
      assertThatThrownBy(() -> client.execute(new HttpGet(server.url("/five")), r -> r.getCode()))
          .isInstanceOf(IOException.class);
    }
    assertThat(log)
        .filteredOn(l -> l.startsWith("end"))
        .containsExactly(
            "end 1: SocketException", "end 2: SocketException", "end 3: SocketException");
  }

  @Test
  void everyAttemptOfAnHttpClient45CallIsToldAndCarriesItsHeader() throws Exception {
    server.enqueue(status(503), status(429), ok("done"));
    try (org.apache.http.impl.client.CloseableHttpClient client =
        RetryingCloseableHttpClient.wrap(
            org.apache.http.impl.client.HttpClients.custom(), engine())) {
      int code =
          client.execute(
              new org.apache.http.client.methods.HttpGet(server.url("/four")),
              r -> r.getStatusLine().getStatusCode());

      assertThat(code).isEqualTo(200);
    }
    assertThat(log)
        .containsExactly(
            "start 1 in the call's context",
            "end 1: 503",
            "start 2 in the call's context",
            "end 2: 429",
            "start 3 in the call's context",
            "end 3: 200");
    assertThat(spansSent()).containsExactly("1", "2", "3");
  }

  @Test
  void anHttpClient45RequestReusedAfterARetriedCallCarriesItsOwnHeaderAgain() throws Exception {
    // As OpenTelemetry's context does: a header for the resends only, set on the request object,
    // which in 4.5 is the application's own (and may be sent again by a later call).
    RetryEngine engine =
        RetryEngine.builder()
            .clock(time)
            .sleeper(time::sleep)
            .callContexts(
                call ->
                    new CallContext() {
                      private int attempts;

                      @Override
                      public Scope enter() {
                        return Scope.NONE;
                      }

                      @Override
                      public <R> AttemptSpan startAttempt(
                          String method, R request, HeaderSetter<R> headers) {
                        if (++attempts > 1) {
                          headers.set(request, "x-attempt-span", "resend " + attempts);
                        }
                        return AttemptSpan.NONE;
                      }
                    })
            .build();
    server.enqueue(status(503), ok("first"), ok("second"));
    org.apache.http.client.methods.HttpGet get =
        new org.apache.http.client.methods.HttpGet(server.url("/again"));
    get.setHeader("x-attempt-span", "the application's");
    try (org.apache.http.impl.client.CloseableHttpClient client =
        RetryingCloseableHttpClient.wrap(
            org.apache.http.impl.client.HttpClients.custom(), engine)) {
      int first = client.execute(get, r -> r.getStatusLine().getStatusCode());
      assertThat(first).isEqualTo(200);
      assertThat(get.getHeaders("x-attempt-span"))
          .as("the application's request as it gave it, once the call is over")
          .extracting(org.apache.http.Header::getValue)
          .containsExactly("the application's");

      int second = client.execute(get, r -> r.getStatusLine().getStatusCode());
      assertThat(second).isEqualTo(200);
    }
    assertThat(spansSent())
        .as("a later call with the same request sends none of the earlier call's resend header")
        .containsExactly("the application's", "resend 2", "the application's");
  }

  /** A tracer of another's whose attempt spans fail to start, or to end. */
  private static final class FailingSpans implements CallContext {
    private final boolean atStart;

    FailingSpans(boolean atStart) {
      this.atStart = atStart;
    }

    @Override
    public Scope enter() {
      return Scope.NONE;
    }

    @Override
    public <R> AttemptSpan startAttempt(String method, R request, HeaderSetter<R> headers) {
      if (atStart) {
        throw new IllegalStateException("tracer: start");
      }
      return (status, failure) -> {
        throw new NoClassDefFoundError("tracer/Span");
      };
    }
  }

  private RetryEngine engineFailingSpans(boolean atStart, List<String> errors) {
    return RetryEngine.builder()
        .clock(time)
        .sleeper(time::sleep)
        .errors(errors::add)
        .callContexts(call -> new FailingSpans(atStart))
        .build();
  }

  @Test
  void anAttemptSpanOfAnothersThatThrowsNeverBecomesAnApacheCallsOutcome() throws Exception {
    // Before: a span that failed to start failed the attempt with the tracer's exception (the
    // request never sent, reaching the caller), and one that failed to end lost the response.
    for (boolean atStart : new boolean[] {true, false}) {
      List<String> errors = new CopyOnWriteArrayList<>();
      server.enqueue(status(503), ok("done"));
      try (CloseableHttpClient client =
          RetryExecHandler.addTo(HttpClients.custom(), engineFailingSpans(atStart, errors))
              .build()) {
        String body =
            client.execute(
                new HttpGet(server.url("/five")), r -> EntityUtils.toString(r.getEntity()));
        assertThat(body).as("5.x, at start: " + atStart).isEqualTo("done");
      }
      server.enqueue(status(503), ok("done"));
      try (org.apache.http.impl.client.CloseableHttpClient client =
          RetryingCloseableHttpClient.wrap(
              org.apache.http.impl.client.HttpClients.custom(),
              engineFailingSpans(atStart, errors))) {
        int code =
            client.execute(
                new org.apache.http.client.methods.HttpGet(server.url("/four")),
                r -> r.getStatusLine().getStatusCode());
        assertThat(code).as("4.5, at start: " + atStart).isEqualTo(200);
      }
      assertThat(errors)
          .as("at start: " + atStart)
          .hasSize(2)
          .allMatch(
              e ->
                  e.contains(
                      atStart ? "starting an attempt's span (" : "ending an attempt's span ("))
          .noneMatch(e -> e.contains("tracer:"));
    }
  }

  /** A tracer whose attempt span throws an Error as it ends, after it ended. */
  private final class ThrowingAtEnd implements CallContext {
    @Override
    public Scope enter() {
      return Scope.NONE;
    }

    @Override
    public <R> AttemptSpan startAttempt(String method, R request, HeaderSetter<R> headers) {
      return (status, failure) -> {
        log.add("end: " + (failure != null ? failure.getClass().getSimpleName() : status));
        throw new AssertionError("after the end");
      };
    }
  }

  @Test
  void anAttemptSpanIsEndedOnceWhenWhatFollowsItsEndThrows() throws Exception {
    // Before: the attempt's catch ended the span a second time, as failed with what was thrown
    // after the first end (an Error out of the end itself here; our own bookkeeping after it too).
    RetryEngine engine = engine(call -> new ThrowingAtEnd());
    server.enqueue(ok("five"), ok("four"));
    try (CloseableHttpClient client =
        RetryExecHandler.addTo(HttpClients.custom(), engine).build()) {
      assertThatThrownBy(() -> client.execute(new HttpGet(server.url("/five")), r -> r.getCode()))
          .isInstanceOf(AssertionError.class);
    }
    assertThat(log).as("5.x").containsExactly("end: 200");
    log.clear();
    try (org.apache.http.impl.client.CloseableHttpClient client =
        RetryingCloseableHttpClient.wrap(
            org.apache.http.impl.client.HttpClients.custom(), engine)) {
      assertThatThrownBy(
              () ->
                  client.execute(
                      new org.apache.http.client.methods.HttpGet(server.url("/four")),
                      r -> r.getStatusLine().getStatusCode()))
          .isInstanceOf(AssertionError.class);
    }
    assertThat(log).as("4.5").containsExactly("end: 200");
  }

  @Test
  void theAttemptIsToldItsMethodAsTheRequestLineWritesIt() throws Exception {
    // The tracer's own Apache instrumentation reads the request's getMethod() and the conventions
    // compare it as it is: a "get" is _OTHER there, so a resend's span must not read GET.
    server.enqueue(ok("five"), ok("four"));
    try (CloseableHttpClient client =
        RetryExecHandler.addTo(HttpClients.custom(), engine()).build()) {
      int code =
          client.execute(
              new org.apache.hc.client5.http.classic.methods.HttpUriRequestBase(
                  "get", java.net.URI.create(server.url("/five"))),
              r -> r.getCode());
      assertThat(code).isEqualTo(200);
    }
    try (org.apache.http.impl.client.CloseableHttpClient client =
        RetryingCloseableHttpClient.wrap(
            org.apache.http.impl.client.HttpClients.custom(), engine())) {
      int code =
          client.execute(
              org.apache.http.client.methods.RequestBuilder.create("get")
                  .setUri(server.url("/four"))
                  .build(),
              r -> r.getStatusLine().getStatusCode());
      assertThat(code).isEqualTo(200);
    }
    assertThat(server.requests()).extracting(r -> r.method).containsExactly("get", "get");
    assertThat(methods).containsExactly("get", "get");
  }
}
