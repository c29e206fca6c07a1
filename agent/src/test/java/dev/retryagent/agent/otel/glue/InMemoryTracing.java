package dev.retryagent.agent.otel.glue;

import io.opentelemetry.api.GlobalOpenTelemetry;
import io.opentelemetry.api.trace.propagation.W3CTraceContextPropagator;
import io.opentelemetry.context.propagation.ContextPropagators;
import io.opentelemetry.sdk.OpenTelemetrySdk;
import io.opentelemetry.sdk.testing.exporter.InMemorySpanExporter;
import io.opentelemetry.sdk.trace.SdkTracerProvider;
import io.opentelemetry.sdk.trace.export.SimpleSpanProcessor;

/**
 * The real SDK as the global instance, every finished span kept in memory: what the OpenTelemetry
 * agent's relocated copy is at run time, for the glue's tests.
 */
final class InMemoryTracing {
  private InMemoryTracing() {}

  /** Sets the global instance (W3C trace context propagation); undo with {@link #remove()}. */
  static InMemorySpanExporter install() {
    InMemorySpanExporter exported = InMemorySpanExporter.create();
    GlobalOpenTelemetry.resetForTest();
    GlobalOpenTelemetry.set(
        OpenTelemetrySdk.builder()
            .setTracerProvider(
                SdkTracerProvider.builder()
                    .addSpanProcessor(SimpleSpanProcessor.create(exported))
                    .build())
            .setPropagators(ContextPropagators.create(W3CTraceContextPropagator.getInstance()))
            .build());
    return exported;
  }

  static void remove() {
    GlobalOpenTelemetry.resetForTest();
  }
}
