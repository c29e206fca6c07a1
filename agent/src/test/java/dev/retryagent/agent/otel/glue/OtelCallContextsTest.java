package dev.retryagent.agent.otel.glue;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retryagent.config.PathMask;
import dev.retryagent.engine.RetryCall;
import dev.retryagent.engine.RetryEngine;
import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.sdk.testing.exporter.InMemorySpanExporter;
import io.opentelemetry.sdk.trace.data.SpanData;
import java.util.Arrays;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** The INTERNAL span retry-agent makes for a call made outside any span of the application's. */
class OtelCallContextsTest {
  private final AtomicReference<PathMask> pathMask = new AtomicReference<>(PathMask.NONE);
  private InMemorySpanExporter exported;

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
}
