package dev.retryagent.it;

import dev.retryagent.it.harness.ForkedJvm;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * The OkHttp retry scenarios with the library wired by hand (the async retrier's interceptor last
 * on the client, {@code enqueue} through the retrier), no agent: the library and SnakeYAML on the
 * class path.
 */
class OkRetryScenariosByHandIT extends OkRetryScenarios {
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
