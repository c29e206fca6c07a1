package dev.retryagent.agent.otel.glue;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retryagent.engine.RetryCall;
import dev.retryagent.engine.RetryEngine;
import io.opentelemetry.api.GlobalOpenTelemetry;
import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.sdk.OpenTelemetrySdk;
import io.opentelemetry.sdk.testing.exporter.InMemorySpanExporter;
import io.opentelemetry.sdk.trace.SdkTracerProvider;
import io.opentelemetry.sdk.trace.data.SpanData;
import io.opentelemetry.sdk.trace.export.SimpleSpanProcessor;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** The INTERNAL span retry-agent makes for a call made outside any span of the application's. */
class OtelCallContextsTest {
  private final InMemorySpanExporter exported = InMemorySpanExporter.create();

  @BeforeEach
  void setUp() {
    GlobalOpenTelemetry.resetForTest();
    GlobalOpenTelemetry.set(
        OpenTelemetrySdk.builder()
            .setTracerProvider(
                SdkTracerProvider.builder()
                    .addSpanProcessor(SimpleSpanProcessor.create(exported))
                    .build())
            .build());
  }

  @AfterEach
  void tearDown() {
    GlobalOpenTelemetry.resetForTest();
  }

  @Test
  void theCallSpansPathHasNoPathParametersAsNoLogLineHas() {
    RetryEngine engine = RetryEngine.builder().callContexts(new OtelCallContexts()).build();
    RetryCall call =
        engine.newCall(
            OtelAttemptTest.request("GET", "http", "h", 8080, "/app;jsessionid=SECRET/items"));
    call.context().end();

    assertThat(exported.getFinishedSpanItems()).hasSize(1);
    SpanData span = exported.getFinishedSpanItems().get(0);
    assertThat(span.getKind()).isEqualTo(SpanKind.INTERNAL);
    assertThat(span.getAttributes().get(AttributeKey.stringKey("url.path")))
        .isEqualTo("/app/items");
  }
}
