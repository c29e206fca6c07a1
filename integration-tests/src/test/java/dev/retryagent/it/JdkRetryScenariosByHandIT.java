package dev.retryagent.it;

import dev.retryagent.it.harness.ForkedJvm;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * The java.net.http retry scenarios with the library wired by hand ({@code RetryingHttpClient}
 * around the application's client), no agent: the library and SnakeYAML on the class path.
 */
class JdkRetryScenariosByHandIT extends JdkRetryScenarios {
  @Override
  ForkedJvm.Builder wire(ForkedJvm.Builder jvm, Path config, String mode) {
    List<String> args = new ArrayList<>(List.of("--by-hand", config.toString()));
    if (mode != null) {
      args.add("--mode");
      args.add(mode);
    }
    return jvm.withoutAgent().classpath(libraryJars()).args(args.toArray(new String[0]));
  }

  /** retry-agent-core and its SnakeYAML, copied by the build into target/by-hand. */
  static Path[] libraryJars() {
    Path dir = Path.of(System.getProperty("retryagent.byhand.dir", "target/by-hand"));
    try (var files = Files.list(dir)) {
      return files.filter(p -> p.toString().endsWith(".jar")).toArray(Path[]::new);
    } catch (java.io.IOException e) {
      throw new IllegalStateException("no library jars in " + dir.toAbsolutePath(), e);
    }
  }
}
