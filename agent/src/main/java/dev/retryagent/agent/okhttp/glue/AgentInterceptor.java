package dev.retryagent.agent.okhttp.glue;

import java.io.IOException;
import okhttp3.Interceptor;
import okhttp3.Response;

/**
 * The application interceptor the agent adds to every {@code OkHttpClient} (one instance per OkHttp
 * copy): the library's {@code RetryInterceptor} of the copy's {@code AsyncRetrier}, made on the
 * first call, or a plain pass-through while {@code agent.clients.okhttp} is off.
 */
final class AgentInterceptor implements Interceptor {
  private final OkHttpGlue glue;

  AgentInterceptor(OkHttpGlue glue) {
    this.glue = glue;
  }

  @Override
  public Response intercept(Chain chain) throws IOException {
    if (!glue.enabled()) {
      return chain.proceed(chain.request());
    }
    return glue.retrier().interceptor().intercept(chain);
  }

  @Override
  public String toString() {
    return "retry-agent";
  }
}
