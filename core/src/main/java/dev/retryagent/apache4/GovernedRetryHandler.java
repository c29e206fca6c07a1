package dev.retryagent.apache4;

import dev.retryagent.engine.AttemptResult;
import dev.retryagent.engine.RetryCall;
import java.io.IOException;
import java.lang.reflect.Field;
import java.util.Objects;
import org.apache.http.client.HttpRequestRetryHandler;
import org.apache.http.impl.client.DefaultHttpRequestRetryHandler;
import org.apache.http.impl.client.HttpClientBuilder;
import org.apache.http.protocol.HttpContext;

/**
 * HttpClient 4.5's own retry handler (the application's, or {@code DefaultHttpRequestRetryHandler},
 * which resends an idempotent request, or one not sent yet, up to 3 times at once after an I/O
 * failure), asked only with the consent of the call in progress ({@link
 * RetryCall#clientMayResend}): a failure the policy retries is never resent by HttpClient, our
 * retry (with the policy's backoff, deadline, breaker and budget) takes its place; a request the
 * policy would not repeat (a POST without key) is not resent, even one HttpCore had not marked as
 * sent (it may have been written in part); any other is HttpClient's to resend, as without the
 * agent, except in a retry of ours with no attempt left.
 *
 * <p>The call is found in the attempt's context ({@link ObservingContext} answers {@link
 * #CALL_ATTRIBUTE}); outside an attempt of ours (a client not taken over, the agent off) the
 * wrapped handler decides alone. Thread-safe when the wrapped one is.
 */
final class GovernedRetryHandler implements HttpRequestRetryHandler {
  /** The attribute under which an attempt's context gives the call; never stored. */
  static final String CALL_ATTRIBUTE = "dev.retryagent.call";

  private final HttpRequestRetryHandler own;

  private GovernedRetryHandler(HttpRequestRetryHandler own) {
    this.own = Objects.requireNonNull(own, "own");
  }

  /** {@code own}, governed; {@code own} itself when it already is. */
  static HttpRequestRetryHandler around(HttpRequestRetryHandler own) {
    return own instanceof GovernedRetryHandler ? own : new GovernedRetryHandler(own);
  }

  /** The handler this one asks once the call consents. */
  HttpRequestRetryHandler own() {
    return own;
  }

  @Override
  public boolean retryRequest(IOException exception, int executionCount, HttpContext context) {
    // HttpClient's handler first, as without the agent: the call is asked only about a resend
    // that would really happen, so an answer of "yes" can be counted when it is made.
    if (!own.retryRequest(exception, executionCount, context)) {
      return false;
    }
    Object call = context == null ? null : context.getAttribute(CALL_ATTRIBUTE);
    return !(call instanceof RetryCall)
        || ((RetryCall) call).clientMayResend(AttemptResult.thrown(exception));
  }

  @Override
  public String toString() {
    return "retry-agent governed " + own;
  }

  /**
   * Sets {@code builder}'s handler to its current one ({@code DefaultHttpRequestRetryHandler} when
   * none was set), governed. The builder has no getter: its private field {@code retryHandler} is
   * read (the same in every 4.3+ release; HttpClient's jars are open to reflection). Returns false,
   * having changed nothing, when it cannot be read.
   */
  static boolean govern(HttpClientBuilder builder) {
    Field field = Holder.FIELD;
    if (field == null) {
      return false;
    }
    HttpRequestRetryHandler current;
    try {
      current = (HttpRequestRetryHandler) field.get(builder);
    } catch (IllegalAccessException | RuntimeException e) {
      return false;
    }
    builder.setRetryHandler(
        around(current != null ? current : DefaultHttpRequestRetryHandler.INSTANCE));
    return true;
  }

  /** The builder's field, looked up on first use; null when absent or closed. */
  private static final class Holder {
    static final Field FIELD = find();

    private static Field find() {
      try {
        Field f = HttpClientBuilder.class.getDeclaredField("retryHandler");
        if (!HttpRequestRetryHandler.class.isAssignableFrom(f.getType())) {
          return null;
        }
        f.setAccessible(true);
        return f;
      } catch (NoSuchFieldException | RuntimeException e) {
        // another layout, or a module that does not open the package (InaccessibleObjectException)
        return null;
      }
    }
  }
}
