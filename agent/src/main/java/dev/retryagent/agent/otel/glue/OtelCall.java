package dev.retryagent.agent.otel.glue;

import dev.retryagent.engine.CallContext;
import dev.retryagent.engine.RequestInfo;
import dev.retryagent.engine.RetryEvent;
import io.opentelemetry.api.common.Attributes;
import io.opentelemetry.api.common.AttributesBuilder;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.StatusCode;
import io.opentelemetry.context.Context;

/**
 * One call's OpenTelemetry context ({@link OtelCallContexts}): entered around each attempt, the
 * caller's own context around the caller's completion; the call's decisions as span events.
 *
 * <p>Events, on the call's span or else the application's: {@code retry_agent.retry} (the attempt,
 * its outcome, the wait before the next attempt in {@code retry_agent.delay_ms}, the route), {@code
 * retry_agent.give_up} (the same and {@code retry_agent.reason}), {@code
 * retry_agent.breaker_rejected} and {@code retry_agent.rate_limited}. For Apache HttpClient, a
 * CLIENT span per resend ({@link #startAttempt}). No exception message is recorded (it may hold a
 * URL with a query), only {@code error.type}, its class.
 */
final class OtelCall implements CallContext {
  private final OtelCallContexts contexts;
  private final RequestInfo request;
  private final Context caller;
  private final Context context; // null in observe mode: the attempt runs as without the agent
  private final Span callSpan; // ours, or null under the application's span
  private final Span events; // the call span, or the application's span
  private int attempts; // told by startAttempt, on the (one) thread of a synchronous call

  OtelCall(
      OtelCallContexts contexts,
      RequestInfo request,
      Context caller,
      Context context,
      Span callSpan,
      Span events) {
    this.contexts = contexts;
    this.request = request;
    this.caller = caller;
    this.context = context;
    this.callSpan = callSpan;
    this.events = events;
  }

  @Override
  public CallContext.Scope enter() {
    return context == null ? CallContext.Scope.NONE : current(context);
  }

  @Override
  public CallContext.Scope enterCaller() {
    return context == null ? CallContext.Scope.NONE : current(caller);
  }

  /**
   * {@code c} made current. Tracing never fails the call (the engine's contract: a context never
   * throws): the glue links to the OpenTelemetry agent's relocated API method by method, at first
   * use, so an agent whose API differs fails here (a {@code NoSuchMethodError}), as can a context
   * storage the application installed. The call then reached the application with our error in
   * place of its response (the loop took it for the attempt's failure), or, ending an asynchronous
   * call, left its future for ever incomplete. It goes on untraced instead.
   */
  private static CallContext.Scope current(Context c) {
    try {
      return new OtelScope(c.makeCurrent());
    } catch (RuntimeException | LinkageError e) {
      OtelCallContexts.failed("making a call's context current", e);
      return CallContext.Scope.NONE;
    }
  }

  /**
   * A CLIENT span for each resend ({@link OtelAttempt}), in the call's context: for Apache
   * HttpClient, under the OpenTelemetry agent's span for the whole {@code execute}. The first
   * attempt gets none: that span is its span, and its request carries that span's context, so a
   * call that is not retried is traced and sent exactly as without retry-agent. Never in observe
   * mode, where the agent makes no attempt of its own. Tracing never fails the attempt: if the
   * OpenTelemetry agent's API fails, the attempt goes on without a span.
   */
  @Override
  public <R> AttemptSpan startAttempt(String method, R carrier, HeaderSetter<R> headers) {
    int resends = attempts++;
    if (context == null || resends == 0) {
      return AttemptSpan.NONE;
    }
    try {
      return OtelAttempt.start(contexts, context, request, method, resends, carrier, headers);
    } catch (RuntimeException | LinkageError e) {
      return AttemptSpan.NONE;
    }
  }

  @Override
  public void on(RetryEvent e) {
    switch (e.type()) {
      case RETRY:
        events.addEvent(
            "retry_agent.retry",
            describe(e).put("retry_agent.delay_ms", e.delayNanos() / 1_000_000).build());
        break;
      case GIVE_UP:
        events.addEvent(
            "retry_agent.give_up",
            describe(e).put("retry_agent.reason", e.reason().label()).build());
        break;
      case BREAKER_REJECTED:
        events.addEvent("retry_agent.breaker_rejected", describe(e).build());
        break;
      case RATE_LIMITED:
        events.addEvent(
            "retry_agent.rate_limited",
            describe(e).put("retry_agent.delay_ms", e.delayNanos() / 1_000_000).build());
        break;
      case CALL_COMPLETE:
        if (callSpan != null) {
          callSpan.setAttribute("retry_agent.attempts", (long) e.attempt());
          if (!e.succeeded()) {
            callSpan.setStatus(
                StatusCode.ERROR, e.reason() != null ? e.reason().label() : e.outcomeText());
          }
        }
        break;
      default:
        break;
    }
  }

  @Override
  public void end() {
    if (callSpan != null) {
      try {
        callSpan.end();
      } catch (RuntimeException | LinkageError e) {
        OtelCallContexts.failed("ending a call's span", e); // as current(): never the call's
      }
    }
  }

  private static AttributesBuilder describe(RetryEvent e) {
    AttributesBuilder b =
        Attributes.builder()
            .put("retry_agent.attempt", (long) e.attempt())
            .put("retry_agent.outcome", e.outcomeText())
            .put("retry_agent.route", e.route());
    if (e.status() >= 0) {
      b.put("http.response.status_code", (long) e.status());
    }
    if (e.error() != null) {
      b.put("error.type", e.error().getClass().getName());
    }
    if (e.observeOnly()) {
      b.put("retry_agent.observe_only", true);
    }
    return b;
  }

  /** The OpenTelemetry scope as the engine's. */
  private static final class OtelScope implements CallContext.Scope {
    private final io.opentelemetry.context.Scope scope;

    OtelScope(io.opentelemetry.context.Scope scope) {
      this.scope = scope;
    }

    @Override
    public void close() {
      try {
        scope.close();
      } catch (RuntimeException | LinkageError e) {
        OtelCallContexts.failed("closing a call's context", e); // as current(): never the call's
      }
    }
  }
}
