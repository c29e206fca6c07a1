package dev.retryagent.agent.otel.glue;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retryagent.config.PathMask;
import dev.retryagent.engine.CallContext;
import dev.retryagent.engine.RequestInfo;
import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.api.trace.StatusCode;
import io.opentelemetry.context.Context;
import io.opentelemetry.sdk.testing.exporter.InMemorySpanExporter;
import io.opentelemetry.sdk.trace.data.SpanData;
import java.net.SocketTimeoutException;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The CLIENT span retry-agent makes for an Apache HttpClient resend: the HTTP semantic conventions'
 * name, attributes and status, under the call's parent, its trace context set on the request; never
 * the query. Against the real SDK with its in-memory exporter (what the OpenTelemetry agent's
 * relocated copy is at run time).
 */
class OtelAttemptTest {
  private final AtomicReference<PathMask> pathMask = new AtomicReference<>(PathMask.NONE);
  private InMemorySpanExporter exported;
  private OtelCallContexts contexts;
  private Span parent;

  @BeforeEach
  void setUp() {
    exported = InMemoryTracing.install();
    contexts = new OtelCallContexts(pathMask);
    parent = contexts.tracer.spanBuilder("the client's span").startSpan();
  }

  @AfterEach
  void tearDown() {
    InMemoryTracing.remove();
  }

  private static RequestInfo request(String method, String scheme, String host, int port) {
    return request(method, scheme, host, port, "/v1/charges");
  }

  static RequestInfo request(String method, String scheme, String host, int port, String path) {
    return request(method, scheme, host, port, path, false);
  }

  /** With {@link RequestInfo#atPastPath}: an '@' in the query or fragment the client keeps. */
  static RequestInfo request(
      String method, String scheme, String host, int port, String path, boolean atPastPath) {
    return new RequestInfo() {
      @Override
      public boolean atPastPath() {
        return atPastPath;
      }

      @Override
      public String method() {
        return method;
      }

      @Override
      public String scheme() {
        return scheme;
      }

      @Override
      public String host() {
        return host;
      }

      @Override
      public int port() {
        return port;
      }

      @Override
      public String path() {
        return path;
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
  }

  private SpanData resend(RequestInfo request, int resends, Map<String, String> headers, int status)
      throws Exception {
    return resend(request, request.method(), resends, headers, status);
  }

  private SpanData resend(
      RequestInfo request,
      String requestLineMethod,
      int resends,
      Map<String, String> headers,
      int status)
      throws Exception {
    CallContext.AttemptSpan span =
        OtelAttempt.start(
            contexts,
            Context.root().with(parent),
            request,
            requestLineMethod,
            resends,
            headers,
            Map::put);
    span.end(status, status < 0 ? new SocketTimeoutException("Read timed out ?token=x") : null);
    assertThat(exported.getFinishedSpanItems()).hasSize(1);
    return exported.getFinishedSpanItems().get(0);
  }

  private static String attribute(SpanData span, String key) {
    Object value = span.getAttributes().asMap().get(AttributeKey.stringKey(key));
    if (value == null) {
      value = span.getAttributes().asMap().get(AttributeKey.longKey(key));
    }
    return value == null ? null : value.toString();
  }

  @Test
  void aResendAnswered503IsAnErrorClientSpanUnderTheCallsParentCarriedByItsRequest()
      throws Exception {
    Map<String, String> headers = new HashMap<>();
    SpanData span = resend(request("GET", "http", "127.0.0.1", 8080), 2, headers, 503);

    assertThat(span.getName()).isEqualTo("GET");
    assertThat(span.getKind()).isEqualTo(SpanKind.CLIENT);
    assertThat(span.getParentSpanId()).isEqualTo(parent.getSpanContext().getSpanId());
    assertThat(span.getTraceId()).isEqualTo(parent.getSpanContext().getTraceId());
    assertThat(attribute(span, "http.request.method")).isEqualTo("GET");
    assertThat(attribute(span, "server.address")).isEqualTo("127.0.0.1");
    assertThat(attribute(span, "server.port")).isEqualTo("8080");
    assertThat(attribute(span, "url.full")).isEqualTo("http://127.0.0.1:8080/v1/charges");
    assertThat(attribute(span, "http.request.resend_count")).isEqualTo("2");
    assertThat(attribute(span, "http.response.status_code")).isEqualTo("503");
    assertThat(attribute(span, "error.type")).isEqualTo("503");
    assertThat(span.getStatus().getStatusCode()).isEqualTo(StatusCode.ERROR);
    assertThat(headers.get("traceparent"))
        .startsWith("00-" + span.getTraceId() + "-" + span.getSpanId() + "-");
  }

  @Test
  void aSuccessIsNotAnError() throws Exception {
    SpanData span =
        resend(request("GET", "https", "api.example.com", 443), 1, new HashMap<>(), 200);

    assertThat(span.getStatus().getStatusCode()).isEqualTo(StatusCode.UNSET);
    assertThat(attribute(span, "error.type")).isNull();
    assertThat(attribute(span, "url.full"))
        .as("the scheme's default port left out")
        .isEqualTo("https://api.example.com/v1/charges");
  }

  @Test
  void aFailureIsNamedByItsClassNeverItsMessage() throws Exception {
    SpanData span = resend(request("PUT", "http", "::1", 9000), 1, new HashMap<>(), -1);

    assertThat(attribute(span, "error.type")).isEqualTo("java.net.SocketTimeoutException");
    assertThat(attribute(span, "http.response.status_code")).isNull();
    assertThat(span.getStatus().getStatusCode()).isEqualTo(StatusCode.ERROR);
    assertThat(span.getStatus().getDescription()).doesNotContain("token");
    assertThat(span.getEvents()).as("no exception event with its message").isEmpty();
    assertThat(attribute(span, "url.full")).isEqualTo("http://[::1]:9000/v1/charges");
  }

  @Test
  void aMethodTheConventionsDoNotNameIsOther() throws Exception {
    SpanData span = resend(request("PROPFIND", "http", "h", 80), 1, new HashMap<>(), 207);

    assertThat(span.getName()).isEqualTo("HTTP");
    assertThat(attribute(span, "http.request.method")).isEqualTo("_OTHER");
    assertThat(attribute(span, "http.request.method_original")).isEqualTo("PROPFIND");
    assertThat(attribute(span, "url.full")).isEqualTo("http://h/v1/charges");
  }

  @Test
  void aMethodInLowerCaseIsOtherAsTheOpenTelemetryAgentsApacheSpanHasIt() throws Exception {
    // The OpenTelemetry agent's Apache instrumentation reads the request's getMethod() and the
    // conventions compare it as it is: its span for the first attempt of a "get" is HTTP, _OTHER.
    // The resend's read GET, from the engine's upper-cased method.
    SpanData span = resend(request("GET", "http", "h", 80), "get", 1, new HashMap<>(), 200);

    assertThat(span.getName()).isEqualTo("HTTP");
    assertThat(attribute(span, "http.request.method")).isEqualTo("_OTHER");
    assertThat(attribute(span, "http.request.method_original")).isEqualTo("get");
  }

  @Test
  void theUrlHasNoPathParametersAsNoLogLineHas() throws Exception {
    SpanData span =
        resend(
            request("GET", "http", "h", 8080, "/app;jsessionid=SECRET/items;v=2"),
            1,
            new HashMap<>(),
            503);

    assertThat(attribute(span, "url.full")).isEqualTo("http://h:8080/app/items");
  }

  @Test
  void theUrlMasksTheSegmentsTheOperatorAsked() throws Exception {
    pathMask.set(PathMask.of(Arrays.asList("tok_[a-z0-9]+")));
    SpanData span =
        resend(
            request("GET", "http", "h", 8080, "/files/tok_abc123/raw?sig=x"),
            1,
            new HashMap<>(),
            503);

    assertThat(attribute(span, "url.full")).isEqualTo("http://h:8080/files/<redacted>/raw");
  }

  @Test
  void aPathThatIsTheWholeUrlIsTheUrlCleanedNotAppendedToItself() throws Exception {
    SpanData span =
        resend(
            request("GET", "http", "h", 8080, "http://u:pw@h:8080/files/a b?sig=x"),
            1,
            new HashMap<>(),
            503);

    assertThat(attribute(span, "url.full")).isEqualTo("http://h:8080/files/a b");
  }

  @Test
  void aPasswordWithAnUnencodedSlashIsNotRebuiltIntoTheUrl() throws Exception {
    // https://u:12/canary@h/x: the client connects to host u, port 12, with the path
    // /canary@h/x; appended to its host, url.full was the application's URL, password and all, as
    // a tracing backend reads it.
    SpanData span =
        resend(request("GET", "https", "u", 12, "/canary@h/x"), 1, new HashMap<>(), 503);

    assertThat(attribute(span, "url.full")).isEqualTo("https://u:12/<redacted>@h/x");
  }

  @Test
  void aPasswordWithASlashThenAQueryOrFragmentIsNotTheUrlsPath() throws Exception {
    // https://u:12/ca?nary@h/x: the client sends the path /ca, the '@' in the query; url.full was
    // https://u:12/ca, which a reader of the application's URL takes for part of its password.
    SpanData span = resend(request("GET", "https", "u", 12, "/ca", true), 1, new HashMap<>(), 503);

    assertThat(attribute(span, "url.full")).isEqualTo("https://u:12/<redacted>");
  }

  @Test
  void aHostWithPartOfAPasswordInItIsNotWritten() throws Exception {
    // http://user:pa@ss@h.example/x: Apache HttpClient cuts the user-info at its first '@' and
    // takes ss@h.example as the host (PasswordWithAnAtTest in core); a host never holds an '@'.
    SpanData span = resend(request("GET", "http", "ss@h.example", 8080), 1, new HashMap<>(), 503);

    assertThat(attribute(span, "server.address")).isEqualTo("<redacted>@h.example");
    assertThat(attribute(span, "url.full"))
        .isEqualTo("http://<redacted>@h.example:8080/v1/charges");
  }
}
