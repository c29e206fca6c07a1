package dev.retryagent.apache5;

import java.lang.reflect.Field;
import org.apache.hc.client5.http.HttpRequestRetryStrategy;
import org.apache.hc.client5.http.impl.DefaultHttpRequestRetryStrategy;
import org.apache.hc.client5.http.impl.classic.HttpClientBuilder;

/**
 * Governs the retry strategy an {@code HttpClientBuilder} has now, for {@link
 * RetryExecHandler#addTo}, which may be called after the application set one of its own: the
 * builder has no getter, so its field is read ({@code retryStrategy}, private, in every 5.x from
 * 5.0 to 5.6; HttpClient's jars are automatic modules, open to reflection). When it cannot be read
 * the strategy is left as it is: HttpClient then resends as without the agent, and its resends are
 * counted, never governed.
 */
final class BuilderStrategy {
  private BuilderStrategy() {}

  /**
   * Sets {@code builder}'s strategy to its current one (HttpClient's default when none was set),
   * governed. Returns false, having changed nothing, when the current one cannot be read.
   */
  static boolean govern(HttpClientBuilder builder) {
    Field field = Holder.FIELD;
    if (field == null) {
      return false;
    }
    HttpRequestRetryStrategy own;
    try {
      own = (HttpRequestRetryStrategy) field.get(builder);
    } catch (IllegalAccessException | RuntimeException e) {
      return false;
    }
    builder.setRetryStrategy(
        GovernedRetryStrategy.around(own != null ? own : DefaultHttpRequestRetryStrategy.INSTANCE));
    return true;
  }

  /** The field, looked up on the first {@code addTo}; null when absent or closed. */
  private static final class Holder {
    static final Field FIELD = find();

    private static Field find() {
      try {
        Field f = HttpClientBuilder.class.getDeclaredField("retryStrategy");
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
  }
}
