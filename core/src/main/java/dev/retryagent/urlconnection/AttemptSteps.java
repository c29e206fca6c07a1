package dev.retryagent.urlconnection;

import dev.retryagent.engine.CallContext;
import dev.retryagent.engine.RetryCall;
import java.net.HttpURLConnection;

/**
 * How one exchange's attempt steps (connect, open the request body, read the response) run: between
 * the transport's {@link UrlTransport#beforeStep} and {@link UrlTransport#afterStep} (the JDK's own
 * resends, then counted as attempts), and inside the call's {@link CallContext}, as {@code
 * SyncRetryLoop} runs each attempt. The waits between attempts run outside both.
 *
 * <p>Why the context: a tracer that instruments the JDK's connection (the OpenTelemetry agent)
 * starts a connection's span at the first network step made on it, under the context current then,
 * and keeps it with that connection until the response is read. Each attempt is its own JDK
 * connection, so each becomes its own span of the call's trace, counted as a resend by the call's
 * context; the application's connection object (the facade) is not the JDK's and is never traced.
 *
 * <p>Tracing never breaks a call: a context that fails to enter or close is dropped. Used by one
 * exchange, under its lock, on the thread that makes the step.
 */
final class AttemptSteps implements UrlTransport.JdkResend {
  private final UrlTransport transport;
  private CallContext.Scope scope = CallContext.Scope.NONE;
  private boolean callEnded;

  // The step in progress, for mayResend: its call and request, and the connection reading the
  // response (null until then).
  private RetryCall call;
  private UrlRequest request;
  private HttpURLConnection reading;

  AttemptSteps(UrlTransport transport) {
    this.transport = transport;
  }

  /** A step of {@code call}'s current attempt starts on this thread. */
  void begin(RetryCall call, UrlRequest request) {
    this.call = call;
    this.request = request;
    this.reading = null;
    transport.beforeStep(this);
    scope = call.enterContext(false); // NONE if it fails: the step runs as without tracing
  }

  /** The step reads the response of {@code c}, the attempt's connection. */
  void reading(HttpURLConnection c) {
    reading = c;
  }

  /**
   * The rule for the request the JDK is reading the response to: the application's, or the GET the
   * JDK turned it into to follow a redirect ({@link JdkResendRule#allows}).
   */
  @Override
  public boolean mayResend() {
    HttpURLConnection c = reading;
    return JdkResendRule.allows(call, request, c == null ? null : c.getRequestMethod());
  }

  /**
   * The step started by {@link #begin} ended (normally or not).
   *
   * @return how many times the JDK sent the request again by itself during the step
   */
  int end() {
    CallContext.Scope s = scope;
    scope = CallContext.Scope.NONE;
    if (s != CallContext.Scope.NONE) {
      call.leaveContext(s); // the context's own failure said once: the attempt's outcome stands
    }
    int resends = transport.afterStep();
    reading = null;
    return resends;
  }

  /**
   * The JDK's own resends inside {@code call}'s attempt (on a stale connection: {@code repeats},
   * summed from {@link #end}; after a write error: asked of the attempt's connection {@code c},
   * null when none was opened) count as attempts, retries for the budget and, as transport
   * failures, in the breaker. Called once per attempt, when it is over.
   */
  void countResends(RetryCall call, int repeats, HttpURLConnection c) {
    int resends = repeats + (c == null ? 0 : transport.rewrites(c));
    for (int i = 0; i < resends; i++) {
      call.clientResentAfterFailure(true);
    }
  }

  /**
   * {@code call} is over (its last attempt ended, the application has not heard yet): ends its
   * context, once, however often the exchange reports it.
   */
  void callOver(RetryCall call) {
    if (callEnded) {
      return;
    }
    callEnded = true;
    call.endContext();
  }
}
