package dev.retryagent.it.apps;

import dev.retryagent.config.AgentConfig;
import dev.retryagent.config.ConfigLoader;
import dev.retryagent.engine.RetryEngine;
import dev.retryagent.internal.observe.LogListener;
import dev.retryagent.okhttp.AsyncRetrier;
import dev.retryagent.policy.Mode;
import java.nio.file.Path;
import okhttp3.Call;
import okhttp3.Callback;
import okhttp3.OkHttpClient;

/**
 * What a developer wiring OkHttp retries by hand writes: the same file the agent would read, the
 * retrier's interceptor last on the client (and its network interceptor, which counts OkHttp's own
 * resends), and {@code retrier.enqueue(call, callback)} instead of {@code call.enqueue(callback)}.
 */
final class OkByHandWiring {
  private OkByHandWiring() {}

  /** A client with retries, and the way its asynchronous calls are started. */
  record Wired(OkHttpClient client, AsyncRetrier retrier) {
    void enqueue(Call call, Callback callback) {
      retrier.enqueue(call, callback);
    }
  }

  static Wired wire(OkHttpClient client, Path config, String modeOverride) throws Exception {
    AgentConfig c = ConfigLoader.load(config, System.getenv());
    Mode mode = modeOverride == null ? c.mode() : Mode.fromConfigName(modeOverride);
    RetryEngine engine =
        RetryEngine.builder()
            .mode(mode)
            .policies(c::resolve)
            .listener(LogListener.toStderr(c.logLevel(), () -> mode == Mode.OBSERVE))
            .build();
    AsyncRetrier retrier = new AsyncRetrier(engine);
    OkHttpClient.Builder b =
        client
            .newBuilder()
            .addInterceptor(retrier.interceptor())
            .addNetworkInterceptor(retrier.interceptor().networkInterceptor());
    return new Wired(b.build(), retrier);
  }
}
