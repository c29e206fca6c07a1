package dev.retryagent.apache4;

import dev.retryagent.engine.AttemptResult;
import dev.retryagent.engine.RequestInfo;
import dev.retryagent.engine.RetryCall;
import java.io.IOException;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.util.Objects;
import org.apache.http.HttpEntity;
import org.apache.http.HttpEntityEnclosingRequest;
import org.apache.http.HttpRequest;
import org.apache.http.client.HttpRequestRetryHandler;
import org.apache.http.client.methods.HttpRequestWrapper;
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
 * agent, except in a retry of ours with no attempt left. A request HttpClient would not resend
 * anyway (its non-repeatable entity written) is not asked about: HttpClient then fails it with
 * {@code NonRepeatableRequestException}, as without the agent.
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
    if (!(call instanceof RetryCall)) {
      return true;
    }
    RetryCall retryCall = (RetryCall) call;
    if (retryCall instanceof Call4
        && !RequestEntities.resendable(context, ((Call4) retryCall).httpRequest())) {
      // HttpClient's retry element, told yes, sends nothing: it throws
      // NonRepeatableRequestException
      // (this failure its cause), which the application gets without the agent. A refusal here
      // would give it the bare I/O failure instead; the call decides no resend either way.
      return true;
    }
    return retryCall.clientMayResend(AttemptResult.thrown(exception), followUp(context, retryCall));
  }

  /**
   * The request HttpClient would resend when it is one it made itself to follow the application's
   * (a redirect's: {@code RedirectExec} is above {@code RetryExec}, which resends each hop), judged
   * as itself; null when it is the application's own (HttpClient's wrapper of it) or cannot be
   * told. Rare (a failed redirect hop): made only then.
   */
  private static RequestInfo followUp(HttpContext context, RetryCall call) {
    Object sent = context.getAttribute(ObservingContext.REQUEST);
    if (!(sent instanceof HttpRequestWrapper) || !(call instanceof Call4)) {
      return null;
    }
    HttpRequest original = ((HttpRequestWrapper) sent).getOriginal();
    return original == ((Call4) call).httpRequest() ? null : new Request4(null, original);
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

  /**
   * The test HttpClient's {@code RetryExec} makes of the request it would resend once its handler
   * said yes ({@code RequestEntityProxy.isRepeatable}, not public): a non-repeatable entity can be
   * sent again only while it was not written ({@code MainClientExec} wraps it in that proxy, which
   * notes a write). The request is the one in the context ({@code http.request}, set by {@code
   * ProtocolExec}): HttpClient's wrapper of the application's request, the one {@code RetryExec}
   * holds; any other (a redirect's, a proxy's {@code CONNECT}) is left to the call.
   */
  private static final class RequestEntities {
    private static final Method IS_CONSUMED = find();

    private RequestEntities() {}

    /**
     * False when HttpClient would not resend the request whatever its handler says; true when it
     * would, or when that cannot be told (then the call decides, never resending a request it would
     * not repeat).
     */
    static boolean resendable(HttpContext context, HttpRequest own) {
      try {
        Object request = context.getAttribute(ObservingContext.REQUEST);
        if (!(request instanceof HttpRequestWrapper)
            || ((HttpRequestWrapper) request).getOriginal() != own
            || !(request instanceof HttpEntityEnclosingRequest)) {
          return true;
        }
        HttpEntity entity = ((HttpEntityEnclosingRequest) request).getEntity();
        if (entity == null || entity.isRepeatable()) {
          return true; // the proxy's isRepeatable is its entity's
        }
        if (IS_CONSUMED == null) {
          return true;
        }
        if (!IS_CONSUMED.getDeclaringClass().isInstance(entity)) {
          return false; // not wrapped yet: RetryExec asks the entity alone
        }
        return !(Boolean) IS_CONSUMED.invoke(entity);
      } catch (ReflectiveOperationException | RuntimeException e) {
        return true;
      }
    }

    private static Method find() {
      try {
        Class<?> proxy =
            Class.forName(
                "org.apache.http.impl.execchain.RequestEntityProxy",
                false,
                HttpClientBuilder.class.getClassLoader());
        Method m = proxy.getMethod("isConsumed");
        m.setAccessible(true); // a public method of a class that is not
        return m.getReturnType() == boolean.class ? m : null;
      } catch (ReflectiveOperationException | RuntimeException | LinkageError e) {
        return null;
      }
    }
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
