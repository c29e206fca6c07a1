package dev.retryagent.agent.okhttp.glue;

import dev.retryagent.okhttp.AsyncRetrier;
import java.io.IOException;
import okhttp3.Interceptor;
import okhttp3.Response;

/**
 * The interceptors the agent adds to every {@code OkHttpClient} (one instance of each per OkHttp
 * copy): the last application interceptor, which is the library's {@code RetryInterceptor} of the
 * copy's {@code AsyncRetrier} (made on the first call), and, only where OkHttp's {@code
 * CallServerInterceptor} could not be hooked ({@link OkHttpGlue}), the last network interceptor,
 * which counts OkHttp's own resends after a failed connection. While {@code agent.clients.okhttp}
 * is off both pass every call through, except the attempts of an enqueued call that started before.
 */
final class AgentInterceptor implements Interceptor {
  private final OkHttpGlue glue;
  private final boolean network;

  AgentInterceptor(OkHttpGlue glue, boolean network) {
    this.glue = glue;
    this.network = network;
  }

  @Override
  public Response intercept(Chain chain) throws IOException {
    if (!glue.enabled()) {
      AsyncRetrier started = glue.existingRetrier();
      if (network || started == null || !started.manages(chain.call())) {
        return chain.proceed(chain.request());
      }
    }
    AsyncRetrier r = glue.retrier();
    return network
        ? r.interceptor().networkInterceptor().intercept(chain)
        : r.interceptor().intercept(chain);
  }

  @Override
  public String toString() {
    return network ? "retry-agent (resends)" : "retry-agent";
  }
}
