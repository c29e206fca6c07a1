package dev.retryagent.agent.runtime;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retryagent.agent.CapturedStderr;
import dev.retryagent.config.AgentConfig;
import dev.retryagent.config.ConfigSources;
import dev.retryagent.engine.Decision;
import dev.retryagent.engine.RequestInfo;
import dev.retryagent.engine.RetryCall;
import java.util.Map;
import java.util.Properties;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** What the shutdown hook prints. */
class ExitSummaryAtExitTest {
  @RegisterExtension final CapturedStderr stderr = new CapturedStderr();

  /** A GET the engine may retry. */
  private static final class Get implements RequestInfo {
    @Override
    public String method() {
      return "GET";
    }

    @Override
    public String scheme() {
      return "http";
    }

    @Override
    public String host() {
      return "127.0.0.1";
    }

    @Override
    public int port() {
      return 8080;
    }

    @Override
    public String path() {
      return "/search";
    }

    @Override
    public String header(String name) {
      return null;
    }

    @Override
    public boolean bodyReplayable() {
      return true;
    }
  }

  @Test
  void anExitWhileTheOnlyCallWaitsForItsRetryStillSummarisesTheRetryMade() throws Exception {
    // System.exit from the application (or a signal) while a retry waits: no call has ended yet,
    // but the agent saw one and retried it, and logged so.
    ConfigSources sources = ConfigSources.resolve(null, new Properties(), Map.of());
    AgentRuntime runtime = new AgentRuntime(sources, AgentConfig.defaults());
    RetryCall call = runtime.engine().newCall(new Get());
    call.beginAttempt();
    Decision d = call.onResponse(503, null);
    assertThat(d.retry()).isTrue();
    call.waitsToRetry();

    runtime.onExit();

    assertThat(stderr.text())
        .contains("retry-agent: summary [route=default] calls=0 succeeded=0 failed=0 retries=1");
  }
}
