package dev.retryagent.it;

import dev.retryagent.it.harness.ForkedJvm;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * The Apache HttpClient retry scenarios with the library wired by hand, no agent: 4.5's client
 * wrapped in {@code RetryingCloseableHttpClient}, 5.x's builder given {@code RetryExecHandler}; the
 * library and SnakeYAML on the class path.
 */
class ApacheRetryScenariosByHandIT extends ApacheRetryScenarios {
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
}
