package dev.retryagent.it;

import static dev.retryagent.it.harness.Reply.ok;
import static dev.retryagent.it.harness.Reply.status;
import static org.assertj.core.api.Assertions.assertThat;

import dev.retryagent.it.apps.AllClientsApp;
import dev.retryagent.it.harness.ApacheVersions;
import dev.retryagent.it.harness.CountingServer;
import dev.retryagent.it.harness.ForkedJvm;
import dev.retryagent.it.harness.OkHttpVersions;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Every hook is patched into its class's bytes ({@code ProloguePatcher}, {@code HandlerPatch}): an
 * application that calls through every hooked client, each call retried once, loads none of ASM's
 * classes (~29, run interpreted as each client is first used; issue 13, eleventh pass). ASM stays
 * in the jar for a class file the patchers decline. {@code OkHttpAgentIT} checks the same for
 * OkHttp 3, 4 and 5.
 */
class HooksWithoutAsmIT {
  /** The clients of {@link AllClientsApp}, in the order it calls them. */
  private static final List<String> CLIENTS =
      List.of("jdk", "okhttpExecute", "okhttpEnqueue", "apache4", "apache5", "url");

  /** The classes the hooks rewrite, as the class-load log names them. */
  private static final List<String> HOOKED =
      List.of(
          " jdk.internal.net.http.HttpClientFacade ",
          " okhttp3.OkHttpClient$Builder ",
          " okhttp3.internal.connection.RealCall ",
          " okhttp3.internal.http.CallServerInterceptor ",
          " org.apache.http.impl.client.HttpClientBuilder ",
          " org.apache.http.impl.client.InternalHttpClient ",
          " org.apache.hc.client5.http.impl.classic.HttpClientBuilder ",
          " sun.net.www.http.HttpClient ");

  @TempDir Path dir;

  @ParameterizedTest
  @MethodSource("dev.retryagent.it.harness.AgentScenarios#jdks")
  void everyClientIsRetriedAndNoAsmClassIsLoaded(Path jdk) throws Exception {
    try (CountingServer server = CountingServer.start()) {
      for (String client : CLIENTS) {
        server.enqueue(status(502), ok(client));
      }
      Path log = dir.resolve("class-load.log");
      ForkedJvm.Result r =
          ForkedJvm.builder(jdk)
              .classpath(OkHttpVersions.V4.jars())
              .classpath(ApacheVersions.V4_5.jars())
              .classpath(ApacheVersions.V5_6.jars())
              .jvmArgs("-Xlog:class+load=info:file=" + log)
              .mainClass(AllClientsApp.class)
              .args(server.uri("").toString())
              .run();

      String all = r.describe();
      assertThat(r.exitCode()).as(all).isZero();
      for (String client : CLIENTS) {
        assertThat(r.value("calls." + client)).as(client + ": " + all).isEqualTo("200");
      }
      for (String hook : List.of("jdk", "okhttp", "apache4", "url")) {
        assertThat(r.value("handled." + hook)).as(hook + ": " + all).isEqualTo("1");
      }
      assertThat(r.stderr()).as(all).doesNotContain("NOT hooked").doesNotContain("internal error");
      assertThat(server.requestCount()).as(all).isEqualTo(2 * CLIENTS.size());

      List<String> loaded = Files.readAllLines(log);
      for (String hooked : HOOKED) {
        assertThat(loaded)
            .as("the class-load log names" + hooked)
            .anyMatch(l -> l.contains(hooked));
      }
      assertThat(loaded)
          .as("the class-load log")
          .noneMatch(l -> l.contains("dev.retryagent.shaded.bytebuddy.jar.asm."));
    }
  }
}
