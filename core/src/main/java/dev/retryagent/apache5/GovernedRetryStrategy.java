package dev.retryagent.apache5;

import dev.retryagent.engine.AttemptResult;
import dev.retryagent.engine.RetryCall;
import java.io.IOException;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.lang.reflect.Field;
import java.util.Objects;
import org.apache.hc.client5.http.HttpRequestRetryStrategy;
import org.apache.hc.client5.http.impl.DefaultHttpRequestRetryStrategy;
import org.apache.hc.client5.http.impl.async.H2AsyncClientBuilder;
import org.apache.hc.client5.http.impl.async.HttpAsyncClientBuilder;
import org.apache.hc.client5.http.impl.classic.HttpClientBuilder;
import org.apache.hc.core5.http.HttpRequest;
import org.apache.hc.core5.http.HttpResponse;
import org.apache.hc.core5.http.protocol.HttpContext;
import org.apache.hc.core5.util.TimeValue;

/**
 * HttpClient's own retry strategy (the application's, or HttpClient's default one), asked only with
 * the consent of the call in progress: HttpClient 5's {@code HttpRequestRetryExec} resends a
 * request inside one of our attempts when its strategy says so (by default a 429 or 503 once after
 * 1 s or its {@code Retry-After}, any method; an idempotent request after an I/O failure), and this
 * wrapper lets the call decide first ({@link RetryCall#clientMayResend}):
 *
 * <ul>
 *   <li>an outcome the policy retries is never resent by HttpClient: the response (or exception)
 *       comes back to {@link RetryExecHandler}, whose retry, with the policy's backoff, {@code
 *       Retry-After} rule, deadline, breaker and budget, takes the resend's place, so the two never
 *       multiply and the last attempt is never spent on a resend the policy did not choose;
 *   <li>a request the policy would not repeat (a POST without idempotency key) is never resent, as
 *       OkHttp's and the JDK's own resends of it are not;
 *   <li>any other outcome (a status {@code retryOn} does not name, retries disabled, observe mode,
 *       where a POST is resent too) is HttpClient's to resend, exactly as without the agent, except
 *       in a retry of ours with no attempt left; a resend counts as an attempt ({@link
 *       ResendCounter}).
 * </ul>
 *
 * Outside a call of ours (no {@link RetryExecHandler} attempt on this thread: the agent off, a
 * pass-through call) the wrapped strategy decides alone. Thread-safe when the wrapped one is.
 */
final class GovernedRetryStrategy implements HttpRequestRetryStrategy {
  private final HttpRequestRetryStrategy own;

  private GovernedRetryStrategy(HttpRequestRetryStrategy own) {
    this.own = Objects.requireNonNull(own, "own");
  }

  /** {@code own}, governed; {@code own} itself when it already is. */
  static HttpRequestRetryStrategy around(HttpRequestRetryStrategy own) {
    return own instanceof GovernedRetryStrategy ? own : new GovernedRetryStrategy(own);
  }

  /** The strategy this one asks once the call consents. */
  HttpRequestRetryStrategy own() {
    return own;
  }

  @Override
  public boolean retryRequest(
      HttpRequest request, IOException exception, int execCount, HttpContext context) {
    // HttpClient's strategy first, as without the agent: the call is asked only about a resend
    // that would really happen, so an answer of "yes" can be counted when it is made.
    return own.retryRequest(request, exception, execCount, context)
        && callConsents(AttemptResult.thrown(exception), request);
  }

  @Override
  public boolean retryRequest(HttpResponse response, int execCount, HttpContext context) {
    return own.retryRequest(response, execCount, context)
        && callConsents(AttemptResult.response(response.getCode()), null);
  }

  @Override
  public TimeValue getRetryInterval(HttpResponse response, int execCount, HttpContext context) {
    return own.getRetryInterval(response, execCount, context);
  }

  /**
   * HttpClient 5.2+ asks for a wait before resending after an I/O failure too (a default method
   * there, absent in 5.1, which this class is compiled against): the wrapped strategy's answer.
   */
  public TimeValue getRetryInterval(
      HttpRequest request, IOException exception, int execCount, HttpContext context) {
    try {
      return (TimeValue) IoInterval.OWN.invoke(own, request, exception, execCount, context);
    } catch (RuntimeException | Error e) {
      throw e;
    } catch (Throwable e) {
      throw new IllegalStateException(e);
    }
  }

  /**
   * The call's consent to HttpClient's resend after {@code result}; {@code resent}: the request
   * HttpClient names as the one it would resend (the I/O strategy's argument), null when it names
   * none (429, 503).
   */
  private static boolean callConsents(AttemptResult result, HttpRequest resent) {
    RetryExecHandler.Attempt attempt = RetryExecHandler.CURRENT.get();
    if (attempt != null) {
      return attempt.call.clientMayResend(result, attempt.followUpRequest());
    }
    // The async client's exchange HttpClient judges on this thread (AsyncResendCounter): in every
    // 5.x its retry element sits below AsyncRedirectExec, so what it resends may be a redirect's
    // hop (the GET after a POST's 303), judged as itself: judged as the call's POST, it was
    // refused,
    // and the application lost the GET's resend HttpClient alone makes.
    AsyncResendCounter.Counted async = AsyncRetryExecHandler.CURRENT.get();
    return async == null || async.mayResend(result, resent);
  }

  @Override
  public String toString() {
    return "retry-agent governed " + own;
  }

  /**
   * Sets {@code builder}'s strategy to its current one (HttpClient's default when none was set),
   * governed, for {@link RetryExecHandler#addTo}, which may come after the application set its own.
   * The builder has no getter: its private field {@code retryStrategy} is read (the same in every
   * 5.x from 5.0 to 5.6; HttpClient's jars are open to reflection). Returns false, having changed
   * nothing, when it cannot be read: HttpClient's resends are then counted, never governed.
   */
  static boolean govern(HttpClientBuilder builder) {
    HttpRequestRetryStrategy governed = governedOf(BuilderField.FIELD, builder);
    if (governed != null) {
      builder.setRetryStrategy(governed);
    }
    return governed != null;
  }

  /**
   * {@link #govern(HttpClientBuilder)} for the async client's builder (its field has that name).
   */
  static boolean govern(HttpAsyncClientBuilder builder) {
    HttpRequestRetryStrategy governed = governedOf(AsyncBuilderField.FIELD, builder);
    if (governed != null) {
      builder.setRetryStrategy(governed);
    }
    return governed != null;
  }

  /** {@link #govern(HttpClientBuilder)} for the HTTP/2-only async client's builder. */
  static boolean govern(H2AsyncClientBuilder builder) {
    HttpRequestRetryStrategy governed = governedOf(H2BuilderField.FIELD, builder);
    if (governed != null) {
      builder.setRetryStrategy(governed);
    }
    return governed != null;
  }

  /**
   * The strategy {@code builder}'s {@code field} holds (or the default), governed; null if unread.
   */
  private static HttpRequestRetryStrategy governedOf(Field field, Object builder) {
    if (field == null) {
      return null;
    }
    HttpRequestRetryStrategy current;
    try {
      current = (HttpRequestRetryStrategy) field.get(builder);
    } catch (IllegalAccessException | RuntimeException e) {
      return null;
    }
    return around(current != null ? current : DefaultHttpRequestRetryStrategy.INSTANCE);
  }

  /** The builder's field, looked up on the first {@code addTo}; null when absent or closed. */
  private static final class BuilderField {
    static final Field FIELD = strategyField(HttpClientBuilder.class);
  }

  /** The async builder's field, as {@link BuilderField}. */
  private static final class AsyncBuilderField {
    static final Field FIELD = strategyField(HttpAsyncClientBuilder.class);
  }

  /** The HTTP/2-only async builder's field, as {@link BuilderField}. */
  private static final class H2BuilderField {
    static final Field FIELD = strategyField(H2AsyncClientBuilder.class);
  }

  private static Field strategyField(Class<?> builder) {
    try {
      Field f = builder.getDeclaredField("retryStrategy");
      if (!HttpRequestRetryStrategy.class.isAssignableFrom(f.getType())) {
        return null;
      }
      f.setAccessible(true);
      return f;
    } catch (NoSuchFieldException | RuntimeException e) {
      // another layout, or a module that does not open the package (InaccessibleObjectException)
      return null;
    }
  }

  /**
   * 5.2+'s {@code getRetryInterval(HttpRequest, IOException, int, HttpContext)}, looked up once.
   */
  private static final class IoInterval {
    static final MethodHandle OWN = find();

    private static MethodHandle find() {
      try {
        return MethodHandles.publicLookup()
            .findVirtual(
                HttpRequestRetryStrategy.class,
                "getRetryInterval",
                MethodType.methodType(
                    TimeValue.class,
                    HttpRequest.class,
                    IOException.class,
                    int.class,
                    HttpContext.class));
      } catch (NoSuchMethodException | IllegalAccessException e) {
        // HttpClient 5.1 has no such method, and never calls this one.
        throw new IllegalStateException(e);
      }
    }
  }
}
