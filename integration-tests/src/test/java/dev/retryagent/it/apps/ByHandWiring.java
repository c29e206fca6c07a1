package dev.retryagent.it.apps;

import dev.retryagent.config.AgentConfig;
import dev.retryagent.config.ConfigLoader;
import dev.retryagent.engine.RetryEngine;
import dev.retryagent.internal.observe.LogListener;
import dev.retryagent.jdk.RetryingHttpClient;
import dev.retryagent.policy.Mode;
import java.net.http.HttpClient;
import java.nio.file.Path;

/** What a developer wiring retries by hand writes: the same file the agent would read. */
final class ByHandWiring {
  private ByHandWiring() {}

  static HttpClient wrap(HttpClient client, Path config, String modeOverride) throws Exception {
    AgentConfig c = ConfigLoader.load(config, System.getenv());
    Mode mode = modeOverride == null ? c.mode() : Mode.fromConfigName(modeOverride);
    RetryEngine engine =
        RetryEngine.builder()
            .mode(mode)
            .policies(c::resolve)
            .listener(LogListener.toStderr(c.logLevel(), () -> mode == Mode.OBSERVE))
            .build();
    return RetryingHttpClient.wrap(client, engine);
  }
}
