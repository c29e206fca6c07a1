package dev.retryagent.it;

import static dev.retryagent.it.harness.Reply.hang;
import static dev.retryagent.it.harness.Reply.ok;
import static dev.retryagent.it.harness.Reply.status;
import static dev.retryagent.it.harness.Reply.webSocketAccept;
import static org.assertj.core.api.Assertions.assertThat;

import dev.retryagent.it.apps.OkAgentChecksApp;
import dev.retryagent.it.apps.OkLateAttachApp;
import dev.retryagent.it.apps.OkScenarioApp;
import dev.retryagent.it.harness.AgentScenarios;
import dev.retryagent.it.harness.CountingServer;
import dev.retryagent.it.harness.ForkedJvm;
import dev.retryagent.it.harness.OkHttpVersions;
import dev.retryagent.it.harness.RecordedRequest;
import java.io.File;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import retrofit2.Retrofit;

/**
 * What only the agent does for OkHttp: one interceptor however a client is built, last, so the
 * application's interceptors run once per call; enqueued retries that hold no dispatcher slot, can
 * be cancelled (the call, or all of the dispatcher's) and end at the call timeout; a WebSocket
 * whose handshake was retried still closes on cancel; Retrofit on top; every class loader layout
 * (another OkHttp version in a child-first loader, another agent's loader left alone, a dropped
 * loader collected), and {@code agent.clients.okhttp: false}. On JDK 17 and 25, OkHttp 3, 4 and 5:
 * all checks of one JDK and version run in one forked JVM.
 */
class OkHttpAgentIT {
  @TempDir Path dir;

  static Stream<Arguments> jdksAndVersions() {
    return AgentScenarios.jdksWith(OkHttpVersions.all());
  }

  private static String jars(OkHttpVersions v) {
    return Arrays.stream(v.jars())
        .map(Path::toString)
        .collect(Collectors.joining(File.pathSeparator));
  }

  /** Another version than {@code v}, for the child-first loader. */
  private static OkHttpVersions other(OkHttpVersions v) {
    List<OkHttpVersions> all = OkHttpVersions.all();
    return all.get((all.indexOf(v) + 2) % all.size());
  }

  private static Path config(String name) {
    try {
      return Path.of(OkHttpAgentIT.class.getResource("/" + name).toURI());
    } catch (URISyntaxException e) {
      throw new IllegalStateException(e);
    }
  }

  @ParameterizedTest(name = "{0}, {1}")
  @MethodSource("jdksAndVersions")
  void theAgentCopesWithEveryWayOkHttpIsBuiltCalledAndLoaded(Path jdk, OkHttpVersions version)
      throws Exception {
    OkHttpVersions other = other(version);
    try (CountingServer waitServer = CountingServer.start();
        CountingServer cancelServer = CountingServer.start();
        CountingServer retrofitServer = CountingServer.start();
        CountingServer foreignServer = CountingServer.start();
        CountingServer otherServer = CountingServer.start();
        CountingServer isolatedServer = CountingServer.start();
        CountingServer cancelAllServer = CountingServer.start();
        CountingServer onceServer = CountingServer.start();
        CountingServer timeoutServer = CountingServer.start();
        CountingServer queuedServer = CountingServer.start();
        CountingServer webSocketServer = CountingServer.start()) {
      waitServer.enqueue(status(503).withHeader("Retry-After", "2"));
      cancelServer.enqueue(status(503).withHeader("Retry-After", "2"));
      retrofitServer.enqueue(status(503), ok("sync"), status(503), ok("async"));
      foreignServer.enqueue(status(503));
      otherServer.enqueue(status(503), status(503), ok("other"));
      isolatedServer.enqueue(status(503), status(503), ok("isolated"));
      cancelAllServer.enqueue(status(503).withHeader("Retry-After", "2"));
      onceServer.enqueue(status(503), ok("once"));
      timeoutServer.enqueue(status(503).after(Duration.ofMillis(1_200))).setDefaultReply(hang());
      queuedServer.enqueue(status(503).withHeader("Retry-After", "1")).setDefaultReply(hang());
      webSocketServer.enqueue(status(503)).setDefaultReply(webSocketAccept());

      ForkedJvm.Result r =
          ForkedJvm.builder(jdk)
              .classpath(version.jars())
              .classpath(ForkedJvm.locationOf(Retrofit.class))
              .jvmArgs("-Xlog:class+load=info:file=" + dir.resolve("class-load.log"))
              .mainClass(OkAgentChecksApp.class)
              .args(
                  "builders",
                  "wait|" + waitServer.uri(""),
                  "cancel|" + cancelServer.uri(""),
                  "cancelAll|" + cancelAllServer.uri(""),
                  "once|" + onceServer.uri(""),
                  "timeout|" + timeoutServer.uri(""),
                  "queued|" + queuedServer.uri(""),
                  "websocket|" + webSocketServer.uri(""),
                  "retrofit|" + retrofitServer.uri(""),
                  "foreign|" + foreignServer.uri("/f") + "|" + jars(version),
                  "other|" + otherServer.uri("/o") + "|" + jars(other),
                  "isolated|" + isolatedServer.uri("/i") + "|" + jars(version),
                  // OkHttp 5 itself keeps its loader for a minute after an enqueue (its TaskRunner
                  // thread), agent or not: there the dropped loader only built clients and calls.
                  "unload|http://127.0.0.1:9/never|"
                      + jars(version)
                      + (version == OkHttpVersions.V5 ? "|quiet" : "|enqueue"))
              .timeout(Duration.ofSeconds(90))
              .run();
      String all = r.describe();
      assertThat(r.exitCode()).as(all).isZero();
      assertThat(r.value("okhttp.version")).as(all).isEqualTo(version.version());

      // OkHttp's hooked classes are patched in their bytes: none of ASM's classes is loaded for
      // them (~29, run interpreted as the first client is built: issue 13, eleventh pass).
      List<String> loaded = Files.readAllLines(dir.resolve("class-load.log"));
      assertThat(loaded)
          .as("the class-load log")
          .anyMatch(l -> l.contains(" okhttp3.Dispatcher "))
          .anyMatch(l -> l.contains(" okhttp3.internal.http.CallServerInterceptor "))
          .anyMatch(l -> l.contains("RealCall "))
          .noneMatch(l -> l.contains("dev.retryagent.shaded.bytebuddy.jar.asm."));

      // One interceptor, last, the same instance, however the client was built. No network
      // interceptor: OkHttp's own resends are counted by the hook in its CallServerInterceptor,
      // so the application's network interceptors are its own, as without the agent.
      assertThat(r.value("builders.new")).as(all).isEqualTo("AgentInterceptor");
      assertThat(r.value("builders.builder")).as(all).isEqualTo("Mine,AgentInterceptor");
      assertThat(r.value("builders.newBuilder")).as(all).isEqualTo("Mine,AgentInterceptor");
      assertThat(r.value("builders.newBuilderTwice")).as(all).isEqualTo("Mine,AgentInterceptor");
      assertThat(r.value("builders.reused")).as(all).isEqualTo("Mine,AgentInterceptor");
      assertThat(r.value("builders.sameInstance")).as(all).isEqualTo("true");
      assertThat(r.value("builders.network")).as(all).isEqualTo("Mine");

      // The application's interceptor runs once per call, as for OkHttp's own retries.
      assertThat(r.value("once.status")).as(all).isEqualTo("200");
      assertThat(r.value("once.runs")).as(all).isEqualTo("1");
      assertThat(onceServer.requestCount()).isEqualTo(2);

      // A call waiting between attempts holds no dispatcher slot: with one request per host, a
      // second call to the same host ran and finished during the wait.
      assertThat(r.value("wait.running")).as(all).isEqualTo("0");
      assertThat(r.value("wait.queued")).as(all).isEqualTo("0");
      assertThat(r.value("wait.secondDoneWhileFirstWaits")).as(all).isEqualTo("true");
      assertThat(r.value("wait.second")).as(all).isEqualTo("200:ok");
      assertThat(r.value("wait.first")).as(all).isEqualTo("200:ok");
      assertThat(waitServer.requests())
          .extracting(RecordedRequest::target)
          .containsExactly("/first", "/second", "/first");

      // Cancelled during its wait: one onFailure, no further request.
      assertThat(r.value("cancel.isCanceled")).as(all).isEqualTo("true");
      assertThat(r.value("cancel.failures")).as(all).isEqualTo("1");
      assertThat(r.value("cancel.responses")).as(all).isEqualTo("0");
      assertThat(r.value("cancel.message")).as(all).isEqualTo("Canceled");
      assertThat(r.value("cancel.thread")).as(all).isEqualTo("OkHttp");
      assertThat(cancelServer.requestCount()).isEqualTo(1);

      // dispatcher().cancelAll() reaches a call that waits for its retry, as cancel() does.
      assertThat(r.value("cancelAll.isCanceled")).as(all).isEqualTo("true");
      assertThat(r.value("cancelAll.failures")).as(all).isEqualTo("1");
      assertThat(r.value("cancelAll.responses")).as(all).isEqualTo("0");
      assertThat(r.value("cancelAll.message")).as(all).isEqualTo("Canceled");
      assertThat(r.value("cancelAll.thread")).as(all).isEqualTo("OkHttp");
      assertThat(cancelAllServer.requestCount()).isEqualTo(1);

      // callTimeout(2 s) ends the call, its retry included, as OkHttp ends a call: in time, on a
      // dispatcher thread, with InterruptedIOException: timeout, the call cancelled.
      assertThat(r.value("timeout.outcome"))
          .as(all)
          .isEqualTo("failed:java.io.InterruptedIOException: timeout");
      assertThat(r.value("timeout.thread")).as(all).isEqualTo("OkHttp");
      assertThat(r.value("timeout.inTime")).as(all).isEqualTo("true");
      assertThat(r.value("timeout.isCanceled")).as(all).isEqualTo("true");
      assertThat(timeoutServer.requestCount()).isEqualTo(2);

      // The same with the retry's clone queued behind the host's one slot, held by a call the
      // server never answers: OkHttp starts a call's timeout only when it runs it, and the
      // callback heard nothing until that call ended. The clone, run at last, sends nothing.
      assertThat(r.value("queued.outcome"))
          .as(all)
          .isEqualTo("failed:java.io.InterruptedIOException: timeout");
      assertThat(r.value("queued.thread")).as(all).isEqualTo("OkHttp");
      assertThat(r.value("queued.inTime")).as(all).isEqualTo("true");
      assertThat(r.value("queued.isCanceled")).as(all).isEqualTo("true");
      assertThat(r.value("queued.clonesQueued")).as(all).isEqualTo("1");
      assertThat(r.value("queued.failures")).as(all).isEqualTo("1");
      assertThat(queuedServer.requests())
          .extracting(RecordedRequest::target)
          .containsExactly("/queued", "/slot");

      // A WebSocket whose handshake was retried is closed by its cancel(): the call's cancel
      // reaches the clone that owns the socket.
      assertThat(r.value("websocket.open")).as(all).isEqualTo("101");
      assertThat(r.value("websocket.afterCancel")).as(all).isNotEqualTo("still open");
      assertThat(webSocketServer.requestCount()).isEqualTo(2);

      // Retrofit on top, unchanged, both ways.
      assertThat(r.value("retrofit.execute")).as(all).isEqualTo("200:sync");
      assertThat(r.value("retrofit.enqueue")).as(all).isEqualTo("200:async");
      assertThat(retrofitServer.requestCount()).isEqualTo(4);

      // Another agent's OkHttp is left alone: no interceptor, the 503 comes back as it is.
      assertThat(r.value("foreign.loader"))
          .as(all)
          .isEqualTo("io.opentelemetry.javaagent.bootstrap.AgentClassLoader");
      assertThat(r.value("foreign.sameOkHttp")).as(all).isEqualTo("false");
      assertThat(r.value("foreign.status")).as(all).isEqualTo("503");
      assertThat(r.value("foreign.interceptors")).as(all).isEmpty();

      // Another OkHttp version in a child-first loader gets its own interceptor and retries.
      assertThat(r.value("other.sameOkHttp")).as(all).isEqualTo("false");
      assertThat(r.value("other.version")).as(all).isEqualTo(other.version());
      assertThat(r.value("other.status")).as(all).isEqualTo("200");
      assertThat(r.value("other.interceptors"))
          .as(all)
          .isEqualTo("dev.retryagent.agent.okhttp.glue.AgentInterceptor");
      assertThat(r.value("other.interceptorLoader")).as(all).contains("ChildFirstLoader");
      assertThat(otherServer.requestCount()).isEqualTo(4); // 503, 503, 200, then the app's own

      // A loader that delegates only java.* and hides the agent's packages (OSGi-like) still sees
      // the bridge, a java.lang class, so its OkHttp is hooked too (it was skipped while the
      // bridge was appended to the bootstrap class path under dev.retryagent.bootstrap).
      assertThat(r.value("isolated.sameOkHttp")).as(all).isEqualTo("false");
      assertThat(r.value("isolated.status")).as(all).isEqualTo("200");
      assertThat(r.value("isolated.interceptors"))
          .as(all)
          .isEqualTo("dev.retryagent.agent.okhttp.glue.AgentInterceptor");
      assertThat(r.value("isolated.interceptorLoader"))
          .as(all)
          .startsWith("retry-agent-okhttp[parent=dev.retryagent.it.apps.IsolatedLoader");
      assertThat(isolatedServer.requestCount()).isEqualTo(4); // 503, 503, 200, then the app's own

      // A dropped OkHttp loader is collected: the agent's cache does not hold it.
      assertThat(r.value("unload.interceptors"))
          .as(all)
          .isEqualTo("dev.retryagent.agent.okhttp.glue.AgentInterceptor");
      assertThat(r.value("unload.enqueued"))
          .as(all)
          .isEqualTo(version == OkHttpVersions.V5 ? "not enqueued" : "ConnectException");
      assertThat(r.value("unload.collected")).as(all).isEqualTo("true");

      assertThat(r.stderr()).as(all).doesNotContain("internal error").doesNotContain("NOT hooked");
    }
  }

  @ParameterizedTest(name = "{0}, {1}")
  @MethodSource("jdksAndVersions")
  void aLateAttachRetransformsLoadedOkHttpAndClientsBuiltAfterItGetRetries(
      Path jdk, OkHttpVersions version) throws Exception {
    try (CountingServer server = CountingServer.start()) {
      server.enqueue(status(503), ok("after"), status(503), ok("async"), status(503));

      ForkedJvm.Result r =
          ForkedJvm.builder(jdk)
              .withoutAgent()
              .jvmArgs("-Djdk.attach.allowAttachSelf=true")
              .classpath(version.jars())
              .mainClass(OkLateAttachApp.class)
              .args(ForkedJvm.agentJar().toString(), server.uri("").toString())
              .run();

      assertThat(r.exitCode()).as(r.describe()).isZero();
      assertThat(r.stderrLines("retry-agent " + ForkedJvm.agentVersion()))
          .as(r.describe())
          .singleElement()
          .asString()
          .contains(
              "okhttp hooked (OkHttpClient.Builder, RealCall.enqueue/cancel,"
                  + " Dispatcher.cancelAll, CallServerInterceptor)");
      // A client built before the attach keeps what it had; a builder made after it gets ours.
      assertThat(r.value("before.interceptors")).isEmpty();
      assertThat(r.value("after.interceptors"))
          .isEqualTo("dev.retryagent.agent.okhttp.glue.AgentInterceptor");
      assertThat(r.value("fromBefore.interceptors"))
          .isEqualTo("dev.retryagent.agent.okhttp.glue.AgentInterceptor");
      assertThat(r.value("after.execute")).isEqualTo("200:after");
      assertThat(r.value("after.enqueue")).isEqualTo("200:async");
      assertThat(r.value("before.execute")).isEqualTo("503:");
      assertThat(r.value("enqueuesTaken")).isEqualTo("1");
      assertThat(server.requestCount()).isEqualTo(5);
    }
  }

  @ParameterizedTest
  @MethodSource("dev.retryagent.it.harness.AgentScenarios#jdks")
  void okHttp5AsANamedModuleOnTheModulePathGetsRetries(Path jdk) throws Exception {
    try (CountingServer server = CountingServer.start()) {
      server.enqueue(status(503), ok("sync"), status(503), ok("async"));

      ForkedJvm.Result r =
          ForkedJvm.builder(jdk)
              .jvmArgs("--module-path", jars(OkHttpVersions.V5), "--add-modules", "okhttp3")
              .mainClass(OkScenarioApp.class)
              .args(
                  "a|execute|GET|" + server.uri("/a") + "||",
                  "b|enqueue|GET|" + server.uri("/b") + "||")
              .run();

      assertThat(r.exitCode()).as(r.describe()).isZero();
      assertThat(r.value("okhttp.module")).as(r.describe()).isEqualTo("okhttp3");
      assertThat(r.value("a.status")).as(r.describe()).isEqualTo("200");
      assertThat(r.value("b.status")).as(r.describe()).isEqualTo("200");
      assertThat(r.value("interceptors"))
          .isEqualTo("dev.retryagent.agent.okhttp.glue.AgentInterceptor");
      assertThat(server.requestCount()).isEqualTo(4);
    }
  }

  @ParameterizedTest(name = "{0}, {1}")
  @MethodSource("jdksAndVersions")
  void clientsOkhttpFalseLeavesOkHttpAlone(Path jdk, OkHttpVersions version) throws Exception {
    try (CountingServer server = CountingServer.start()) {
      server.enqueue(status(503), ok("never"));

      ForkedJvm.Result r =
          ForkedJvm.builder(jdk)
              .agentArgs("config=" + config("okhttp-off.yml"))
              .classpath(version.jars())
              .mainClass(OkScenarioApp.class)
              .args("a|execute|GET|" + server.uri("/items") + "||")
              .run();

      assertThat(r.exitCode()).as(r.describe()).isZero();
      assertThat(r.value("a.status")).as(r.describe()).isEqualTo("503");
      assertThat(r.value("interceptors")).isEmpty();
      assertThat(server.requestCount()).isEqualTo(1);
      assertThat(r.stderrLines("retry-agent " + ForkedJvm.agentVersion()))
          .singleElement()
          .asString()
          .contains("jdk-http armed")
          .contains("okhttp off (agent.clients.okhttp: false)");
    }
  }
}
