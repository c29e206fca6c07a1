package dev.retryagent.it;

import dev.retryagent.it.harness.ForkedJvm;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * The {@code HttpURLConnection} scenarios with the library wired by hand ({@code
 * RetryingUrlConnections.open}), no agent: the library and SnakeYAML on the class path. The JDK's
 * own resends stay as they are there (docs/url-connection.md), and the clients on top are not
 * wired.
 */
class UrlRetryScenariosByHandIT extends UrlRetryScenarios {
  @Override
  ForkedJvm.Builder wire(ForkedJvm.Builder jvm, Path config, String mode) {
    List<String> args = new ArrayList<>(List.of("--by-hand", config.toString()));
    if (mode != null) {
      args.add("--mode");
      args.add(mode);
    }
    return jvm.withoutAgent()
        .classpath(JdkRetryScenariosByHandIT.libraryJars())
        .args(args.toArray(new String[0]));
  }

  @Override
  boolean throughAgent() {
    return false;
  }
}
