package dev.retryagent.it;

import static dev.retryagent.it.harness.Reply.ok;
import static dev.retryagent.it.harness.Reply.status;
import static org.assertj.core.api.Assertions.assertThat;

import dev.retryagent.it.harness.ApacheVersions;
import dev.retryagent.it.harness.CountingServer;
import dev.retryagent.it.harness.ForkedJvm;
import dev.retryagent.it.harness.Jdks;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Named;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Apache HttpClient's hooked classes are patched in their bytes: a call retried through the hook
 * loads none of ASM's classes (~29, run interpreted as the first client is built; issue 13,
 * eleventh pass). On JDK 17 and 25, HttpClient 4.5 (its builder and its client) and 5.6 (its
 * builder). {@code OkHttpAgentIT} checks the same for OkHttp.
 */
class ApacheWithoutAsmIT {
  @TempDir Path dir;

  static Stream<Arguments> jdksAndVersions() {
    List<Arguments> all = new ArrayList<>();
    for (Path jdk : Jdks.all()) {
      for (ApacheVersions v : List.of(ApacheVersions.V4_5, ApacheVersions.V5_6)) {
        all.add(
            Arguments.of(Named.of("JDK " + Jdks.featureOf(jdk), jdk), Named.of(v.toString(), v)));
      }
    }
    return all.stream();
  }

  @ParameterizedTest(name = "{0}, {1}")
  @MethodSource("jdksAndVersions")
  void aCallIsRetriedThroughTheHookAndNoAsmClassIsLoaded(Path jdk, ApacheVersions version)
      throws Exception {
    try (CountingServer server = CountingServer.start()) {
      server.enqueue(status(503), ok("second"));
      Path log = dir.resolve("class-load.log");
      ForkedJvm.Result r =
          ForkedJvm.builder(jdk)
              .agentArgs("config=" + ApacheRetryScenarios.config("apache-scenarios.yml"))
              .jvmArgs("-Xlog:class+load=info:file=" + log)
              .classpath(version.jars())
              .mainClass(ApacheRetryScenarios.app(version))
              .args(
                  String.join(
                      "|", "p.a", "execute", "GET", server.uri("/v1/items").toString(), "", ""))
              .timeout(Duration.ofSeconds(60))
              .run();
      assertThat(r.exitCode()).as(r.describe()).isZero();
      assertThat(r.value("p.a.status")).as(r.describe()).isEqualTo("200");
      assertThat(server.requestCount()).as("the 503, then its retry").isEqualTo(2);

      List<String> loaded = Files.readAllLines(log);
      String builder =
          version.major() == 4
              ? " org.apache.http.impl.client.HttpClientBuilder "
              : " org.apache.hc.client5.http.impl.classic.HttpClientBuilder ";
      assertThat(loaded)
          .as("the class-load log")
          .anyMatch(l -> l.contains(builder))
          .anyMatch(l -> l.contains("dev.retryagent.agent.tooling.ProloguePatcher "))
          .noneMatch(l -> l.contains("dev.retryagent.shaded.bytebuddy.jar.asm."));
      if (version.major() == 4) {
        assertThat(loaded)
            .anyMatch(l -> l.contains(" org.apache.http.impl.client.InternalHttpClient "));
      }
    }
  }
}
