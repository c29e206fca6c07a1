package dev.retryagent.agent.otel.glue;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retryagent.agent.CapturedStderr;
import dev.retryagent.config.PathMask;
import dev.retryagent.engine.CallContext;
import dev.retryagent.engine.RetryCall;
import dev.retryagent.engine.RetryEngine;
import dev.retryagent.policy.BudgetPolicy;
import dev.retryagent.policy.CircuitBreakerPolicy;
import dev.retryagent.policy.Policy;
import dev.retryagent.policy.RateLimitPolicy;
import dev.retryagent.policy.RetryPolicy;
import io.opentelemetry.api.GlobalOpenTelemetry;
import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.context.Context;
import io.opentelemetry.context.ContextKey;
import io.opentelemetry.context.Scope;
import io.opentelemetry.sdk.OpenTelemetrySdk;
import io.opentelemetry.sdk.testing.exporter.InMemorySpanExporter;
import io.opentelemetry.sdk.trace.ReadWriteSpan;
import io.opentelemetry.sdk.trace.ReadableSpan;
import io.opentelemetry.sdk.trace.SdkTracerProvider;
import io.opentelemetry.sdk.trace.SpanProcessor;
import io.opentelemetry.sdk.trace.data.SpanData;
import java.util.Arrays;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The INTERNAL span retry-agent makes for a call made outside any span of the application's. */
class OtelCallContextsTest {
  private final AtomicReference<PathMask> pathMask = new AtomicReference<>(PathMask.NONE);
  private InMemorySpanExporter exported;

  @RegisterExtension final CapturedStderr stderr = new CapturedStderr();

  @BeforeEach
  void setUp() {
    exported = InMemoryTracing.install();
  }

  @AfterEach
  void tearDown() {
    InMemoryTracing.remove();
  }

  /** The {@code url.path} of the span of a call made outside any span, for {@code path}. */
  private String callSpanPath(RetryEngine engine, String path) {
    return callSpanPath(engine, path, false);
  }

  private String callSpanPath(RetryEngine engine, String path, boolean atPastPath) {
    exported.reset();
    RetryCall call =
        engine.newCall(OtelAttemptTest.request("GET", "http", "h", 8080, path, atPastPath));
    call.context().end();
    assertThat(exported.getFinishedSpanItems()).hasSize(1);
    SpanData span = exported.getFinishedSpanItems().get(0);
    assertThat(span.getKind()).isEqualTo(SpanKind.INTERNAL);
    return span.getAttributes().get(AttributeKey.stringKey("url.path"));
  }

  @Test
  void theCallSpansPathHasNoPathParametersAsNoLogLineHas() {
    RetryEngine engine = RetryEngine.builder().callContexts(new OtelCallContexts(pathMask)).build();

    assertThat(callSpanPath(engine, "/app;jsessionid=SECRET/items")).isEqualTo("/app/items");
  }

  @Test
  void theCallSpansPathIsRedactedWhenTheQueryOrFragmentHoldsAnAt() {
    // http://h:8080/ca?nary@x/y: a password with a '/' then a '?' leaves /ca as the path.
    RetryEngine engine = RetryEngine.builder().callContexts(new OtelCallContexts(pathMask)).build();

    assertThat(callSpanPath(engine, "/ca", true)).isEqualTo("/<redacted>");
    assertThat(callSpanPath(engine, "/ca", false)).isEqualTo("/ca");
  }

  @Test
  void theCallSpansPathMasksTheSegmentsTheOperatorAskedAsReloadedForTheNextCall() {
    RetryEngine engine = RetryEngine.builder().callContexts(new OtelCallContexts(pathMask)).build();
    assertThat(callSpanPath(engine, "/files/tok_abc123/raw")).isEqualTo("/files/tok_abc123/raw");

    pathMask.set(PathMask.of(Arrays.asList("tok_[a-z0-9]+"))); // as a reload does

    assertThat(callSpanPath(engine, "/files/tok_abc123/raw")).isEqualTo("/files/<redacted>/raw");
  }

  /**
   * A route's name may be any text without control characters (RouteKeys): the span's attribute
   * holds it as it is, a structured value needing no quoting (unlike a log line's [route=...]).
   */
  @Test
  void theCallSpansRouteIsTheNameAsWrittenWhateverItHolds() {
    String name = "Pay \"v2\" a\\b, x=1: *? caf\u00e9";
    RetryEngine engine =
        RetryEngine.builder()
            .callContexts(new OtelCallContexts(pathMask))
            .policy(
                new Policy(
                    name,
                    RetryPolicy.defaults(),
                    BudgetPolicy.defaults(),
                    CircuitBreakerPolicy.defaults(),
                    RateLimitPolicy.defaults()))
            .build();
    RetryCall call = engine.newCall(OtelAttemptTest.request("GET", "http", "h", 8080, "/x"));
    call.context().end();

    assertThat(exported.getFinishedSpanItems()).hasSize(1);
    assertThat(
            exported
                .getFinishedSpanItems()
                .get(0)
                .getAttributes()
                .get(AttributeKey.stringKey("retry_agent.route")))
        .isEqualTo(name);
  }

  /** The span of a call with {@code method} made outside any span. */
  private SpanData callSpan(String method) {
    RetryEngine engine = RetryEngine.builder().callContexts(new OtelCallContexts(pathMask)).build();
    exported.reset();
    engine.newCall(OtelAttemptTest.request(method, "http", "h", 80, "/x")).context().end();
    assertThat(exported.getFinishedSpanItems()).hasSize(1);
    return exported.getFinishedSpanItems().get(0);
  }

  private static String attribute(SpanData span, String key) {
    return span.getAttributes().get(AttributeKey.stringKey(key));
  }

  /**
   * The HTTP semantic conventions, as the resends' spans follow them (OtelAttemptTest): a method
   * they do not name (compared as it is: a lower-case get too) is HTTP in the span's name and
   * _OTHER, with http.request.method_original. Before, the call span took it as it came.
   */
  @Test
  void theCallSpanNamesAMethodTheConventionsDoNotNameHttpAndOtherAsTheResendsSpansDo() {
    SpanData known = callSpan("GET");
    assertThat(known.getName()).isEqualTo("GET (retry-agent)");
    assertThat(attribute(known, "http.request.method")).isEqualTo("GET");
    assertThat(attribute(known, "http.request.method_original")).isNull();

    for (String method : Arrays.asList("PROPFIND", "get")) {
      SpanData other = callSpan(method);
      assertThat(other.getName()).isEqualTo("HTTP (retry-agent)");
      assertThat(attribute(other, "http.request.method")).isEqualTo("_OTHER");
      assertThat(attribute(other, "http.request.method_original")).isEqualTo(method);
    }
  }

  @Test
  void theCallSpansHostHasNoPartOfAPassword() {
    // http://user:pa@ss@h.example/x, as Apache HttpClient reads it (OtelAttemptTest).
    RetryEngine engine = RetryEngine.builder().callContexts(new OtelCallContexts(pathMask)).build();
    RetryCall call =
        engine.newCall(OtelAttemptTest.request("GET", "http", "ss@h.example", 8080, "/x"));
    call.context().end();

    assertThat(exported.getFinishedSpanItems()).hasSize(1);
    assertThat(
            exported
                .getFinishedSpanItems()
                .get(0)
                .getAttributes()
                .get(AttributeKey.stringKey("server.address")))
        .isEqualTo("<redacted>@h.example");
  }

  @Test
  void aContextThatCannotBeMadeLeavesNoSpanOpenAndIsSaidOnce() {
    // An OpenTelemetry API that lacks what the glue calls (here the resend counter's context) or
    // an application's context storage that throws fails while the call's context is made: the
    // call went on untraced without a word, its INTERNAL span started and never ended.
    AtomicInteger started = new AtomicInteger();
    AtomicInteger ended = new AtomicInteger();
    GlobalOpenTelemetry.resetForTest();
    GlobalOpenTelemetry.set(
        OpenTelemetrySdk.builder()
            .setTracerProvider(
                SdkTracerProvider.builder().addSpanProcessor(counting(started, ended)).build())
            .build());
    OtelCallContexts.FAILURE_SAID.set(false);
    RetryEngine engine = RetryEngine.builder().callContexts(new OtelCallContexts(pathMask)).build();
    Context failing = new FailingCounter(Context.root());

    RetryCall call;
    try (Scope ignored = failing.makeCurrent()) {
      call = engine.newCall(OtelAttemptTest.request("GET", "http", "h", 8080, "/x"));
    }

    assertThat(call.context()).isSameAs(CallContext.NONE);
    assertThat(started.get()).as("spans started").isEqualTo(ended.get());
    assertThat(stderr.text())
        .startsWith("retry-agent: OpenTelemetry failed while making a call's context")
        .contains("(java.lang.NoSuchMethodError at ")
        .doesNotContain("javaagent.shaded");
  }

  private static SpanProcessor counting(AtomicInteger started, AtomicInteger ended) {
    return new SpanProcessor() {
      @Override
      public void onStart(Context parent, ReadWriteSpan span) {
        started.incrementAndGet();
      }

      @Override
      public boolean isStartRequired() {
        return true;
      }

      @Override
      public void onEnd(ReadableSpan span) {
        ended.incrementAndGet();
      }

      @Override
      public boolean isEndRequired() {
        return true;
      }
    };
  }

  /** A context that holds a span, but fails to take the resend counter (any key but a span's). */
  private static final class FailingCounter implements Context {
    private final Context delegate;

    FailingCounter(Context delegate) {
      this.delegate = delegate;
    }

    @Override
    public <V> V get(ContextKey<V> key) {
      return delegate.get(key);
    }

    @Override
    public <V> Context with(ContextKey<V> key, V value) {
      if (!String.valueOf(key).contains("span")) {
        throw new NoSuchMethodError("io.opentelemetry.javaagent.shaded...Context.with");
      }
      return new FailingCounter(delegate.with(key, value));
    }
  }
}
