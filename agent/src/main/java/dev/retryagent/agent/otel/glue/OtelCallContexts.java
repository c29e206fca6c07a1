package dev.retryagent.agent.otel.glue;

import dev.retryagent.agent.otel.OtelSupport;
import dev.retryagent.agent.runtime.AgentLog;
import dev.retryagent.config.PathMask;
import dev.retryagent.engine.CallContext;
import dev.retryagent.engine.RequestInfo;
import dev.retryagent.engine.RetryCall;
import dev.retryagent.internal.observe.Sanitizer;
import io.opentelemetry.api.GlobalOpenTelemetry;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.api.trace.Tracer;
import io.opentelemetry.context.Context;
import io.opentelemetry.context.propagation.TextMapPropagator;
import io.opentelemetry.instrumentation.api.semconv.http.HttpClientRequestResendCount;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;

/**
 * Makes each call's OpenTelemetry context, on the caller's thread when the call starts. The
 * OpenTelemetry agent's own HTTP client instrumentation then makes one CLIENT span per attempt
 * under it; this class decides only where those spans go:
 *
 * <ul>
 *   <li>Parent: the caller's current context. When it has no valid span, one INTERNAL span for the
 *       whole call is started (named {@code GET (retry-agent)}) and is the parent of every attempt.
 *       Not CLIENT: a CLIENT span in the context would make the instrumentation suppress the
 *       attempts' spans as nested, and the semantic conventions ask for one CLIENT span per request
 *       sent, none around them.
 *   <li>The context carries an {@link HttpClientRequestResendCount}: the instrumentation sets
 *       {@code http.request.resend_count} from it, 1 on the second attempt's span, 2 on the third.
 *   <li>Apache HttpClient, whose attempts the instrumentation cannot see (its span wraps the whole
 *       {@code execute}), asks for a CLIENT span per attempt itself ({@link OtelAttempt}).
 *   <li>Observe mode makes no attempt of its own: the trace stays as without the agent, and the
 *       "would retry" events go on the application's span, if there is one.
 *   <li>Paths on our own spans ({@code url.path} here, {@code url.full} in {@link OtelAttempt}) are
 *       written as a log line writes them: no query, user-info nor path parameters, and the
 *       segments {@code agent.redact.pathSegments} matches masked.
 * </ul>
 */
public final class OtelCallContexts implements CallContext.Factory {
  // Package-private for tests, which say it again.
  static final AtomicBoolean FAILURE_SAID = new AtomicBoolean();

  final Tracer tracer;
  final TextMapPropagator propagator;
  private final AtomicReference<PathMask> pathMask;

  /**
   * @param pathMask the agent's current {@code agent.redact.pathSegments}, replaced on reload
   * @throws IllegalStateException when the OpenTelemetry agent has not set its global instance
   *     (then nothing is traced; asking for it anyway would pin a no-op instance for good)
   */
  public OtelCallContexts(AtomicReference<PathMask> pathMask) {
    boolean set;
    try {
      // Not GlobalOpenTelemetry.isSet(): an OpenTelemetry agent before 2.23 has no such method,
      // and none of its calls was ever traced (a NoSuchMethodError here, said at start).
      set = OtelSupport.isSet(GlobalOpenTelemetry.class);
    } catch (ReflectiveOperationException e) {
      throw new IllegalStateException("GlobalOpenTelemetry cannot tell whether it is set", e);
    }
    if (!set) {
      throw new IllegalStateException("GlobalOpenTelemetry is not set");
    }
    tracer = GlobalOpenTelemetry.getTracer("dev.retryagent");
    propagator = GlobalOpenTelemetry.getPropagators().getTextMapPropagator();
    this.pathMask = pathMask;
  }

  /**
   * Tracing failed ({@link OtelCall}): the call goes on untraced there. Said once for the JVM, by
   * the exception's class and the frame that threw it, never its message (the engine's rule for its
   * own failures); never throws.
   */
  static void failed(String where, Throwable e) {
    try {
      if (FAILURE_SAID.compareAndSet(false, true)) {
        StackTraceElement[] trace = e.getStackTrace();
        AgentLog.error(
            "OpenTelemetry failed while "
                + where
                + " ("
                + e.getClass().getName()
                + (trace.length > 0 ? " at " + trace[0] : "")
                + "); calls go on, untraced where it fails (said once)");
      }
    } catch (RuntimeException | LinkageError ignored) {
      // nowhere left to report to
    }
  }

  /** {@code request}'s path as our spans write it (see the class comment). */
  String spanPath(RequestInfo request) {
    return Sanitizer.path(request.path(), pathMask.get(), request.atPastPath());
  }

  /**
   * The call's context, or null when the OpenTelemetry agent's API fails to make one (a method the
   * glue calls that it lacks, a context storage of the application's that throws): the call goes on
   * untraced, said once, as when its scopes fail ({@link OtelCall}). The engine dropped what this
   * threw without a word, and a call span started before the failure was never ended.
   */
  @Override
  public CallContext create(RetryCall call) {
    Span callSpan = null;
    try {
      Context caller = Context.current();
      Span callerSpan = Span.fromContext(caller);
      boolean underSpan = callerSpan.getSpanContext().isValid();
      if (call.observeOnly()) {
        return underSpan
            ? new OtelCall(this, call.request(), caller, null, null, callerSpan)
            : null;
      }
      // The resend counter first: what fails here fails before a span is started.
      Context counted = HttpClientRequestResendCount.initialize(caller);
      if (underSpan) {
        return new OtelCall(this, call.request(), caller, counted, null, callerSpan);
      }
      RequestInfo r = call.request();
      // Named and attributed for its method as the resends' spans are (the HTTP semantic
      // conventions: HTTP and _OTHER for a method they do not name).
      callSpan =
          OtelAttempt.method(
                  tracer
                      .spanBuilder(OtelAttempt.spanName(r.method()) + " (retry-agent)")
                      .setSpanKind(SpanKind.INTERNAL)
                      .setParent(caller),
                  r.method())
              .setAttribute("server.address", Sanitizer.host(r.host()))
              .setAttribute("server.port", (long) r.port())
              .setAttribute("url.scheme", r.scheme())
              // never the query nor path parameters (;jsessionid=...): they may hold secrets
              .setAttribute("url.path", spanPath(r))
              .setAttribute("retry_agent.route", call.policy().routeName())
              .startSpan();
      return new OtelCall(this, r, caller, counted.with(callSpan), callSpan, callSpan);
    } catch (RuntimeException | LinkageError e) {
      if (callSpan != null) {
        try {
          callSpan.end(); // a span started is ended, never left open
        } catch (RuntimeException | LinkageError ignored) {
          // said below
        }
      }
      failed("making a call's context", e);
      return null;
    }
  }
}
