package dev.retryagent.it.apps;

import dev.retryagent.config.AgentConfig;
import dev.retryagent.config.ConfigLoader;
import dev.retryagent.engine.RetryEngine;
import dev.retryagent.internal.observe.LogListener;
import dev.retryagent.policy.Mode;
import java.nio.file.Path;

/**
 * What a developer wiring Apache HttpClient retries by hand writes: an engine from the same file
 * the agent would read; 4.5 wraps its client in {@code RetryingCloseableHttpClient}, 5.x adds
 * {@code RetryExecHandler} to its builder.
 */
final class ApacheByHandWiring {
  private ApacheByHandWiring() {}

  static RetryEngine engine(Path config, String modeOverride) throws Exception {
    AgentConfig c = ConfigLoader.load(config, System.getenv());
    Mode mode = modeOverride == null ? c.mode() : Mode.fromConfigName(modeOverride);
    return RetryEngine.builder()
        .mode(mode)
        .policies(c::resolve)
        .listener(LogListener.toStderr(c.logLevel(), () -> mode == Mode.OBSERVE))
        .build();
  }
}
