package dev.retryagent.it.apps;

import dev.retryagent.config.AgentConfig;
import dev.retryagent.config.ConfigLoader;
import dev.retryagent.engine.RetryEngine;
import dev.retryagent.internal.observe.LogListener;
import dev.retryagent.policy.Mode;
import dev.retryagent.urlconnection.RetryingUrlConnections;
import java.io.IOException;
import java.net.URL;
import java.net.URLConnection;
import java.nio.file.Path;

/** What a developer wiring {@code HttpURLConnection} retries by hand writes. */
final class UrlByHandWiring {
  private UrlByHandWiring() {}

  static Object engine(Path config, String modeOverride) throws Exception {
    AgentConfig c = ConfigLoader.load(config, System.getenv());
    Mode mode = modeOverride == null ? c.mode() : Mode.fromConfigName(modeOverride);
    return RetryEngine.builder()
        .mode(mode)
        .policies(c::resolve)
        .listener(LogListener.toStderr(c.logLevel(), () -> mode == Mode.OBSERVE))
        .build();
  }

  static URLConnection open(URL url, Object engine) throws IOException {
    return RetryingUrlConnections.open(url, (RetryEngine) engine);
  }
}
