package dev.retryagent.demo;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.util.List;
import java.util.jar.JarFile;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/** target/demo-app.jar runs on its own and holds nothing of retry-agent. */
class DemoJarIT {
  private static final Path JAR =
      Path.of(System.getProperty("demo.jar", "target/demo-app.jar")).toAbsolutePath();

  @Test
  void bundlesOkHttpAndItsRuntimeUnrelocatedWithAMainClass() throws Exception {
    try (JarFile jar = new JarFile(JAR.toFile())) {
      assertThat(jar.getManifest().getMainAttributes().getValue("Main-Class"))
          .isEqualTo(NewsProcessor.class.getName());
      // Unrelocated: the agent must find OkHttp under its own name, as in any application.
      assertThat(jar.getEntry("okhttp3/OkHttpClient.class")).isNotNull();
      assertThat(jar.getEntry("okio/Buffer.class")).isNotNull();
      assertThat(jar.getEntry("kotlin/Unit.class")).isNotNull();
    }
  }

  @Test
  void containsNothingFromRetryAgent() throws Exception {
    try (JarFile jar = new JarFile(JAR.toFile())) {
      List<String> foreign =
          jar.stream()
              .map(e -> e.getName())
              .filter(n -> n.startsWith("dev/retryagent/") && !n.startsWith("dev/retryagent/demo/"))
              .filter(n -> !n.equals("dev/retryagent/"))
              .collect(Collectors.toList());
      List<String> agentLibraries =
          jar.stream()
              .map(e -> e.getName())
              .filter(n -> n.startsWith("net/bytebuddy/") || n.startsWith("org/yaml/"))
              .collect(Collectors.toList());

      assertThat(foreign).isEmpty();
      assertThat(agentLibraries).isEmpty();
      assertThat(jar.getEntry("dev/retryagent/demo/SeedSweep.class"))
          .isNull(); // test code stays out
    }
  }
}
