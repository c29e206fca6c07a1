package dev.retryagent.it;

import static dev.retryagent.it.harness.Reply.ok;
import static dev.retryagent.it.harness.Reply.status;
import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.DynamicContainer.dynamicContainer;
import static org.junit.jupiter.api.DynamicTest.dynamicTest;

import dev.retryagent.it.apps.UrlClientsApp;
import dev.retryagent.it.harness.CountingServer;
import dev.retryagent.it.harness.ForkedJvm;
import dev.retryagent.it.harness.Jdks;
import dev.retryagent.it.harness.RecordedRequest;
import dev.retryagent.it.harness.RefusedPort;
import dev.retryagent.it.harness.Reply;
import dev.retryagent.it.harness.RewriteServer;
import dev.retryagent.it.harness.TlsCountingServer;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.function.BiConsumer;
import java.util.function.Consumer;
import java.util.stream.Stream;
import org.junit.jupiter.api.DynamicNode;
import org.junit.jupiter.api.TestFactory;

/**
 * The retry scenarios of {@code HttpURLConnection} (http and https, every way of sending a body)
 * and of what sits on it (Spring's {@code RestTemplate}, Feign, Jersey), run on JDK 17 and 25 by an
 * application with no retry code ({@link UrlClientsApp}); each subclass wires retries one way (the
 * agent, or the library by hand) from the same configuration file, {@code url-scenarios.yml}.
 *
 * <p>Every scenario has its own loopback server, which counts what really arrived. All scenarios of
 * one JDK run in one forked JVM, and each is then checked as its own test.
 */
abstract class UrlRetryScenarios {
  /** Adds to {@code jvm} what makes retries happen, from {@code config} (and a mode override). */
  abstract ForkedJvm.Builder wire(ForkedJvm.Builder jvm, Path config, String mode);

  /**
   * True for the agent: it reaches the JDK's own resends (switched off for a request not safe to
   * repeat, counted otherwise) and the clients on top of {@code HttpURLConnection}.
   */
  abstract boolean throughAgent();

  static Path config(String name) {
    try {
      return Path.of(UrlRetryScenarios.class.getResource("/" + name).toURI());
    } catch (URISyntaxException e) {
      throw new IllegalStateException(e);
    }
  }

  /** A scenario's server, whatever it is. */
  interface Server extends AutoCloseable {
    URI uri(String path);

    int requestCount();

    List<RecordedRequest> requests();

    /** JVM options the application needs to reach it (a trust store). */
    default List<String> jvmOptions() {
      return List.of();
    }

    @Override
    void close() throws IOException;
  }

  /** Starts a scenario's server. */
  interface ServerFactory {
    Server start() throws IOException;
  }

  /** One scenario: its server, what the application calls, what must hold. */
  record Scenario(
      String name, ServerFactory server, List<Call> calls, BiConsumer<Outcome, Server> check) {}

  /** A call: name, client, method, path on the scenario's server, headers, body. */
  record Call(
      String name, String client, String method, String path, String headers, String body) {}

  /** What one forked run printed, read per call of one scenario (its calls carry a prefix). */
  record Outcome(ForkedJvm.Result result, String prefix, URI server) {
    String get(String call, String field) {
      return result.value(prefix + call + "." + field);
    }

    int status(String call) {
      String s = get(call, "status");
      assertThat(s).as("status of %s in\n%s", call, result.describe()).isNotNull();
      return Integer.parseInt(s);
    }

    long millis(String call) {
      return Long.parseLong(get(call, "millis"));
    }

    /** The agent's (or library's) log lines about this scenario's server. */
    List<String> log() {
      return result.stderrLines("retry-agent: ").stream()
          .filter(l -> l.contains(server.getHost() + ":" + server.getPort() + "/"))
          .toList();
    }

    long retries() {
      return log().stream().filter(l -> l.contains(" retrying in ")).count();
    }
  }

  static Call call(String name, String client, String method, String path, String h, String b) {
    return new Call(name, client, method, path, h, b);
  }

  static ServerFactory http(Consumer<CountingServer> script) {
    return () -> {
      CountingServer s = CountingServer.start();
      script.accept(s);
      return new Server() {
        @Override
        public URI uri(String path) {
          return s.uri(path);
        }

        @Override
        public int requestCount() {
          return s.requestCount();
        }

        @Override
        public List<RecordedRequest> requests() {
          return s.requests();
        }

        @Override
        public void close() throws IOException {
          s.close();
        }
      };
    };
  }

  static ServerFactory https(Consumer<TlsCountingServer> script) {
    return () -> {
      Path dir = Files.createDirectories(Path.of("target", "tls"));
      TlsCountingServer s = TlsCountingServer.start(dir);
      script.accept(s);
      return new Server() {
        @Override
        public URI uri(String path) {
          return s.uri(path);
        }

        @Override
        public int requestCount() {
          return s.requestCount();
        }

        @Override
        public List<RecordedRequest> requests() {
          return s.requests();
        }

        @Override
        public List<String> jvmOptions() {
          return s.trustStoreOptions();
        }

        @Override
        public void close() {
          s.close();
        }
      };
    };
  }

  /** A server that resets the odd connections while the body is written (RewriteServer). */
  static ServerFactory rewrite(Integer... statuses) {
    return () -> {
      RewriteServer s = RewriteServer.start(statuses);
      return new Server() {
        @Override
        public URI uri(String path) {
          return s.uri(path);
        }

        /** Here: connections, each a request the client began to write. */
        @Override
        public int requestCount() {
          return s.connectionCount();
        }

        @Override
        public List<RecordedRequest> requests() {
          return List.of();
        }

        @Override
        public void close() throws IOException {
          s.close();
        }
      };
    };
  }

  /** A loopback port nothing listens on: every connection is refused. */
  static ServerFactory closedPort() {
    return () -> {
      int port = RefusedPort.port();
      return new Server() {
        @Override
        public URI uri(String path) {
          return URI.create("http://127.0.0.1:" + port + path);
        }

        @Override
        public int requestCount() {
          return 0;
        }

        @Override
        public List<RecordedRequest> requests() {
          return List.of();
        }

        @Override
        public void close() {}
      };
    };
  }

  @TestFactory
  Stream<DynamicNode> retryScenarios() {
    List<Scenario> scenarios = new ArrayList<>(UrlScenarioList.urlConnection(throughAgent()));
    if (throughAgent()) {
      scenarios.addAll(UrlScenarioList.clientsOnTop());
    }
    List<DynamicNode> nodes = new ArrayList<>();
    for (Path jdk : Jdks.all()) {
      // JDK 17 does not verify changed boot classes by default (25 does): make it.
      List<String> options =
          Jdks.featureOf(jdk) == 17
              ? List.of("-XX:+UnlockDiagnosticVMOptions", "-XX:+BytecodeVerificationLocal")
              : List.of();
      nodes.add(
          dynamicContainer(
              "JDK " + Jdks.featureOf(jdk),
              run(jdk, config("url-scenarios.yml"), null, options, scenarios)));
    }
    return nodes.stream();
  }

  /**
   * An application that sets no timeout gets the JDK's default, {@code
   * -Dsun.net.client.defaultReadTimeout}, which the JDK applies only to a connection whose timeout
   * was never set: a retry gets it too (it used to get the rest of the deadline, 30 s here, and the
   * call ended with that timeout, never reaching the third attempt).
   */
  @TestFactory
  Stream<DynamicNode> theJdksDefaultTimeoutHoldsForEveryAttempt() {
    Scenario timedOut =
        new Scenario(
            "a retry that hangs times out at the JDK's default read timeout and is retried",
            http(s -> s.enqueue(status(503), Reply.hang(), ok("done"))),
            List.of(call("a", "url-default-timeouts", "GET", "/v1/items", "", "")),
            (o, s) -> {
              assertThat(o.status("a")).isEqualTo(200);
              assertThat(o.get("a", "body")).isEqualTo("done");
              assertThat(s.requestCount()).isEqualTo(3);
            });
    List<DynamicNode> nodes = new ArrayList<>();
    for (Path jdk : Jdks.all()) {
      nodes.add(
          dynamicContainer(
              "JDK " + Jdks.featureOf(jdk),
              run(
                  jdk,
                  config("url-scenarios.yml"),
                  null,
                  List.of("-Dsun.net.client.defaultReadTimeout=1000"),
                  List.of(timedOut))));
    }
    return nodes.stream();
  }

  @TestFactory
  Stream<DynamicNode> observeMode() {
    Scenario observed =
        new Scenario(
            "observe mode makes one request and logs what it would do",
            http(s -> s.enqueue(status(503), ok("never"))),
            List.of(call("a", "url", "GET", "/v1/items", "", "")),
            (o, s) -> {
              assertThat(o.status("a")).isEqualTo(503);
              assertThat(s.requestCount()).isEqualTo(1);
              assertThat(o.log()).anyMatch(l -> l.contains("would retry"));
            });
    List<DynamicNode> nodes = new ArrayList<>();
    for (Path jdk : Jdks.all()) {
      nodes.add(
          dynamicContainer(
              "JDK " + Jdks.featureOf(jdk),
              run(jdk, config("url-scenarios.yml"), "observe", List.of(), List.of(observed))));
    }
    return nodes.stream();
  }

  /** Starts one server per scenario, runs every call in one JVM, then checks each scenario. */
  Stream<DynamicNode> run(
      Path jdk, Path config, String mode, List<String> options, List<Scenario> scenarios) {
    List<Server> servers = new ArrayList<>();
    try {
      List<String> args = new ArrayList<>();
      List<String> jvmOptions = new ArrayList<>(options);
      for (Scenario sc : scenarios) {
        Server server = sc.server().start();
        servers.add(server);
        for (String o : server.jvmOptions()) {
          if (!jvmOptions.contains(o)) {
            jvmOptions.add(o);
          }
        }
        String prefix = "s" + servers.size() + ".";
        for (Call c : sc.calls()) {
          args.add(
              String.join(
                  "|",
                  prefix + c.name(),
                  c.client(),
                  c.method(),
                  server.uri(c.path()).toString(),
                  c.headers(),
                  c.body()));
        }
      }
      ForkedJvm.Result result =
          wire(ForkedJvm.builder(jdk), config, mode)
              .jvmArgs(jvmOptions.toArray(new String[0]))
              .mainClass(UrlClientsApp.class)
              .args(args.toArray(new String[0]))
              .timeout(java.time.Duration.ofSeconds(180))
              .run();
      assertThat(result.exitCode()).as(result.describe()).isZero();
      List<DynamicNode> tests = new ArrayList<>();
      for (int i = 0; i < scenarios.size(); i++) {
        Scenario sc = scenarios.get(i);
        Server server = servers.get(i);
        Outcome outcome = new Outcome(result, "s" + (i + 1) + ".", server.uri("/"));
        tests.add(
            dynamicTest(
                sc.name(),
                () -> {
                  try {
                    sc.check().accept(outcome, server);
                  } catch (AssertionError e) {
                    throw new AssertionError(
                        e.getMessage() + "\n" + requests(server) + "\n" + result.describe(), e);
                  }
                }));
      }
      return tests.stream();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    } finally {
      for (Server s : servers) {
        try {
          s.close();
        } catch (IOException ignored) {
          // closing anyway
        }
      }
    }
  }

  private static String requests(Server server) {
    StringBuilder b = new StringBuilder("server saw:");
    for (RecordedRequest r : server.requests()) {
      b.append("\n  ").append(r).append(' ').append(r.headers());
    }
    return b.toString();
  }

  /** The legacy clients' jars (Spring, Feign, Jersey and theirs), copied by the build. */
  static Path[] legacyJars() {
    Path dir = Path.of(System.getProperty("retryagent.legacy.dir", "target/legacy-clients"));
    try (Stream<Path> files = Files.list(dir)) {
      return files.filter(p -> p.toString().endsWith(".jar")).sorted().toArray(Path[]::new);
    } catch (IOException e) {
      throw new IllegalStateException("no legacy client jars in " + dir.toAbsolutePath(), e);
    }
  }
}
