package dev.retryagent.agent.otel.glue;

import dev.retryagent.engine.CallContext;
import dev.retryagent.engine.RequestInfo;
import dev.retryagent.internal.observe.Sanitizer;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanBuilder;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.api.trace.StatusCode;
import io.opentelemetry.context.Context;
import java.util.Arrays;
import java.util.List;

/**
 * The CLIENT span of one attempt, made by retry-agent itself for a client whose attempts the
 * OpenTelemetry agent's instrumentation cannot see (Apache HttpClient: its span wraps the whole
 * {@code execute}). It follows the HTTP semantic conventions for a client span, as that
 * instrumentation would: named for the method as the request writes it (compared as it is: a {@code
 * get} is {@code HTTP}, {@code _OTHER}); {@code http.request.method}, {@code server.address},
 * {@code server.port}, {@code url.full}, {@code http.request.resend_count} from the second attempt
 * on, {@code http.response.status_code}, {@code error.type} and status ERROR for a failure or a
 * status of 400 and above. One difference: {@code url.full} never holds the query (it may hold
 * secrets), user-info nor path parameters, and the segments {@code agent.redact.pathSegments}
 * matches are masked. The attempt's request carries this span's trace context, set by the
 * OpenTelemetry agent's propagators.
 */
final class OtelAttempt implements CallContext.AttemptSpan {
  /** The methods the conventions name; any other is {@code _OTHER}. */
  private static final List<String> KNOWN_METHODS =
      Arrays.asList("GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH");

  private final Span span;

  private OtelAttempt(Span span) {
    this.span = span;
  }

  /**
   * Starts the span under {@code parent} and sets its trace context on {@code carrier}.
   *
   * @param method as the request line writes it, or null for {@code request}'s: compared as it is,
   *     as the OpenTelemetry agent's Apache HttpClient instrumentation compares the request's own
   *     {@code getMethod()} (a {@code get} is {@code _OTHER}, its original {@code get}, and the
   *     span {@code HTTP}), so a resend's span reads as the first attempt's; {@link
   *     RequestInfo#method()} is normalised for the engine's rules
   * @param resends the attempts of this call started before this one
   */
  static <R> OtelAttempt start(
      OtelCallContexts contexts,
      Context parent,
      RequestInfo request,
      String requestLineMethod,
      int resends,
      R carrier,
      CallContext.HeaderSetter<R> headers) {
    String method = requestLineMethod != null ? requestLineMethod : request.method();
    SpanBuilder builder =
        method(
            contexts
                .tracer
                .spanBuilder(spanName(method))
                .setSpanKind(SpanKind.CLIENT)
                .setParent(parent)
                .setAttribute("server.address", Sanitizer.host(request.host()))
                .setAttribute("server.port", (long) request.port())
                .setAttribute("url.full", urlWithoutQuery(request, contexts)),
            method);
    if (resends > 0) {
      builder.setAttribute("http.request.resend_count", (long) resends);
    }
    Span span = builder.startSpan();
    contexts.propagator.inject(
        parent.with(span), carrier, (c, name, value) -> headers.set(c, name, value));
    return new OtelAttempt(span);
  }

  /**
   * The span name's method, by the HTTP semantic conventions: the method when they name it
   * (compared as it is), else {@code HTTP}. Every span of retry-agent's names its method so: the
   * resends' and the call's ({@link OtelCallContexts#create}).
   */
  static String spanName(String method) {
    return KNOWN_METHODS.contains(method) ? method : "HTTP";
  }

  /**
   * Sets {@code http.request.method} by the HTTP semantic conventions: the method when they name
   * it, else {@code _OTHER} with the method in {@code http.request.method_original}.
   */
  static SpanBuilder method(SpanBuilder builder, String method) {
    if (KNOWN_METHODS.contains(method)) {
      return builder.setAttribute("http.request.method", method);
    }
    return builder
        .setAttribute("http.request.method", "_OTHER")
        .setAttribute("http.request.method_original", method);
  }

  @Override
  public void end(int status, Throwable failure) {
    try {
      if (status >= 0) {
        span.setAttribute("http.response.status_code", (long) status);
      }
      if (failure != null) {
        // the class only: an exception's message may hold a URL with its query
        span.setAttribute("error.type", failure.getClass().getName());
        span.setStatus(StatusCode.ERROR);
      } else if (status >= 400) {
        span.setAttribute("error.type", Integer.toString(status));
        span.setStatus(StatusCode.ERROR);
      }
    } catch (RuntimeException | LinkageError ignored) {
      // tracing never fails the attempt; the span still ends
    } finally {
      span.end();
    }
  }

  /**
   * {@code scheme://host[:port]/path}: the port when not the scheme's default, no query, no path
   * parameters.
   */
  static String urlWithoutQuery(RequestInfo request, OtelCallContexts contexts) {
    // As every log line and dead letter writes it: no path parameters (a servlet container's
    // ;jsessionid=... is a session's credential), the operator's masked segments, on one line.
    String path = contexts.spanPath(request);
    if (!path.startsWith("/") && path.contains("://")) {
      return path; // the request's URL itself, cleaned (Apache 5 keeps one it cannot parse whole)
    }
    String scheme = request.scheme();
    String host = Sanitizer.host(request.host());
    int port = request.port();
    boolean defaultPort =
        port < 0
            || ("http".equals(scheme) && port == 80)
            || ("https".equals(scheme) && port == 443);
    StringBuilder url = new StringBuilder(scheme).append("://");
    if (host.indexOf(':') >= 0 && !host.startsWith("[")) {
      url.append('[').append(host).append(']'); // an IPv6 literal
    } else {
      url.append(host);
    }
    if (!defaultPort) {
      url.append(':').append(port);
    }
    return url.append(path.isEmpty() ? "/" : path).toString();
  }
}
