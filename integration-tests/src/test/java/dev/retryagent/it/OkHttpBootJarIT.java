package dev.retryagent.it;

import static dev.retryagent.it.harness.Reply.ok;
import static dev.retryagent.it.harness.Reply.status;
import static org.assertj.core.api.Assertions.assertThat;

import dev.retryagent.it.harness.CountingServer;
import dev.retryagent.it.harness.ForkedJvm;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * A Spring Boot executable jar ({@code test-apps/okhttp-boot-app}, repackaged by
 * spring-boot-maven-plugin) started with {@code java -javaagent:retry-agent.jar -jar app.jar}:
 * OkHttp lives in a nested jar that only Boot's {@code LaunchedClassLoader} sees, and the agent's
 * interceptor is defined next to it.
 */
class OkHttpBootJarIT {
  private static Path bootJar() {
    Path jar = Path.of(System.getProperty("retryagent.bootapp.jar", "missing"));
    if (!Files.isRegularFile(jar)) {
      throw new IllegalStateException(jar + " does not exist: build test-apps/okhttp-boot-app");
    }
    return jar;
  }

  @ParameterizedTest
  @MethodSource("dev.retryagent.it.harness.AgentScenarios#jdks")
  void retriesOkHttpCallsInsideASpringBootFatJar(Path jdk) throws Exception {
    try (CountingServer server = CountingServer.start()) {
      server.enqueue(status(503), status(503), ok("sync"), status(503), ok("async"));

      ForkedJvm.Result r =
          ForkedJvm.builder(jdk).jar(bootJar()).args(server.uri("").toString()).run();

      assertThat(r.exitCode()).as(r.describe()).isZero();
      assertThat(r.value("okhttp.loader"))
          .as(r.describe())
          .isEqualTo("org.springframework.boot.loader.launch.LaunchedClassLoader");
      assertThat(r.value("execute")).as(r.describe()).isEqualTo("200:sync");
      assertThat(r.value("enqueue")).as(r.describe()).isEqualTo("200:async");
      assertThat(r.value("interceptors"))
          .isEqualTo("dev.retryagent.agent.okhttp.glue.AgentInterceptor");
      assertThat(r.value("interceptor.loader"))
          .startsWith("retry-agent-okhttp[parent=org.springframework.boot.loader.launch.");
      assertThat(server.requestCount()).isEqualTo(5);
    }
  }
}
