package dev.retryagent.it;

import static dev.retryagent.it.harness.Reply.ok;
import static dev.retryagent.it.harness.Reply.status;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.sun.tools.attach.VirtualMachine;
import dev.retryagent.it.harness.CountingServer;
import dev.retryagent.it.harness.ForkedJvm;
import dev.retryagent.it.harness.Ops;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import javax.management.MBeanAttributeInfo;
import javax.management.MBeanServerConnection;
import javax.management.ObjectName;
import javax.management.remote.JMXConnector;
import javax.management.remote.JMXConnectorFactory;
import javax.management.remote.JMXServiceURL;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Everything the agent writes about real calls, grepped for secrets (issue 14, Security): its log
 * lines at {@code debug} (every attempt, every call's end), the Prometheus text, every attribute of
 * every MBean, the dead letters (a file only its owner can read), the exit summary and {@code
 * explain}. The calls carry user-info, a query token, {@code Authorization}, {@code Cookie} and an
 * idempotency key, and a path segment that looks like a token and that {@code
 * agent.redact.pathSegments} masks.
 */
class SecretsIT {
  private static final String USER_INFO = "alice:secret-password@";
  private static final String PATH = "/files/tok_secretFileToken/raw";
  private static final String QUERY = "?token=secret-query-token";
  private static final String HEADERS =
      "Authorization=Bearer secret-bearer-token;Cookie=session=secret-cookie-value";

  @TempDir Path dir;

  private static String config(int prometheusPort, Path deadLetters) {
    return "agent:\n"
        + "  log: { level: debug }\n"
        + "  metrics: { prometheus: { enabled: true, port: "
        + prometheusPort
        + " } }\n"
        + "  deadLetter: { path: \""
        + deadLetters
        + "\" }\n"
        + "  redact: { pathSegments: ['tok_[A-Za-z0-9]+'] }\n"
        + "defaults:\n"
        + "  retry: { unsafeMethods: if-idempotency-key,"
        + " backoff: { initial: 5ms, max: 5ms, jitter: none } }\n";
  }

  @ParameterizedTest
  @MethodSource("dev.retryagent.it.harness.AgentScenarios#jdks")
  void noCredentialQueryUserInfoOrMaskedSegmentInAnythingTheAgentWrites(Path jdk) throws Exception {
    int prometheusPort = Ops.freePort();
    Path deadLetters = dir.resolve("dead-letters.jsonl");
    Path file = Ops.write(dir.resolve("config.yml"), config(prometheusPort, deadLetters));
    String prometheus;
    String jmx;
    ForkedJvm.Result result;
    try (CountingServer server = CountingServer.start();
        ForkedJvm.Running app = Ops.start(jdk, file)) {
      server.enqueue(status(503), status(503), status(503), status(503), ok("ok"));
      server.enqueue(status(503), status(503), ok("charged"));
      URI uri = URI.create("http://" + USER_INFO + "127.0.0.1:" + server.port() + PATH + QUERY);
      // 503 three times: given up (attempts), a dead letter.
      Ops.call(app, "g1", "GET", uri, HEADERS, "");
      // 503, then 200: one retry (async).
      app.send("async g2|GET|" + uri + "|" + HEADERS + "|");
      app.awaitValue("g2.done");
      // A POST without a key: given up at once (not idempotent), a dead letter.
      Ops.call(app, "p1", "POST", uri, HEADERS, "{}");
      // A keyed POST: 503, then 200.
      Ops.call(app, "p2", "POST", uri, HEADERS + ";Idempotency-Key=secret-idempotency-key", "{}");
      // A password with unencoded '/'s, the last its last character: the client reads
      // 127.0.0.1:port as the host and sends the rest as the path, which a reader takes for
      // user-info again. 503 three times: a dead letter.
      server.enqueue(status(503), status(503), status(503));
      URI slash =
          URI.create("http://127.0.0.1:" + server.port() + "/secret-slash/password/@h.example/x");
      Ops.call(app, "g3", "GET", slash, "", "");
      // A password with a '/' and then a '?' (or '#'): the client sends the path /secret-q (or
      // /secret-h), the '@' in the query (or fragment), and a reader takes the path for part of
      // the password. 503 three times each: two dead letters.
      server.enqueue(status(503), status(503), status(503), status(503), status(503), status(503));
      URI query =
          URI.create("http://127.0.0.1:" + server.port() + "/secret-q?password@h.example/x");
      Ops.call(app, "g4", "GET", query, "", "");
      URI fragment =
          URI.create("http://127.0.0.1:" + server.port() + "/secret-h#password@h.example/x");
      Ops.call(app, "g5", "GET", fragment, "", "");
      await().atMost(ForkedJvm.Running.WAIT).until(() -> Ops.scrape(prometheusPort) != null);
      prometheus = Ops.scrape(prometheusPort);
      jmx = everyAgentMBean(app.pid());
      app.send("exit");
      result = app.finish(Duration.ofSeconds(30));
      assertThat(result.exitCode()).as(result.describe()).isZero();
      assertThat(server.requestCount()).as(result.describe()).isEqualTo(17);
    }
    List<String> letters = Files.readAllLines(deadLetters);
    ForkedJvm.Result explain =
        ForkedJvm.cli(
            jdk,
            "explain",
            file.toString(),
            "GET",
            "https://" + USER_INFO + "files.example.com" + PATH + QUERY,
            "Authorization:Bearer secret-bearer-token");

    List<String> agentLines = result.stderrLines("retry-agent: ");
    assertThat(agentLines)
        .anyMatch(
            l -> l.contains("GET 127.0.0.1:") && l.contains("/files/<redacted>/raw attempt 3"))
        .anyMatch(l -> l.contains("gave up after 3 attempts (503)"))
        .anyMatch(l -> l.contains("not idempotent"))
        .anyMatch(l -> l.startsWith("retry-agent: summary"));
    assertThat(letters)
        .hasSize(5)
        .filteredOn(l -> l.contains("\"path\":\"/files/<redacted>/raw\""))
        .hasSize(2);
    assertThat(letters).anyMatch(l -> l.contains("\"path\":\"/<redacted>@h.example/x\""));
    assertThat(letters).filteredOn(l -> l.contains("\"path\":\"/<redacted>\"")).hasSize(2);
    assertThat(prometheus).contains("retryagent_calls_total");
    assertThat(jmx).contains("dev.retryagent:type=Route,name=default").contains("Calls=7");
    if (deadLetters.getFileSystem().supportedFileAttributeViews().contains("posix")) {
      assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(deadLetters)))
          .as("the dead-letter file is the owner's only")
          .isEqualTo("rw-------");
    }
    assertThat(explain.exitCode()).as(explain.describe()).isZero();
    assertThat(explain.stdout())
        .startsWith(
            "GET https://files.example.com/files/<redacted>/raw with Authorization -> no route");

    for (String output :
        List.of(result.stderr(), prometheus, jmx, String.join("\n", letters), explain.stdout())) {
      assertThat(output)
          .doesNotContain("secret")
          .doesNotContain("alice")
          .doesNotContain("tok_")
          .doesNotContain("token=")
          .doesNotContain("Bearer")
          .doesNotContain("session=");
    }
    assertThat(explain.stderr()).isEmpty();
  }

  /** Every MBean of the agent, each name and attribute as text, read over JMX from this JVM. */
  private static String everyAgentMBean(long pid) throws Exception {
    StringBuilder out = new StringBuilder();
    VirtualMachine vm = VirtualMachine.attach(String.valueOf(pid));
    try (JMXConnector jmx =
        JMXConnectorFactory.connect(new JMXServiceURL(vm.startLocalManagementAgent()))) {
      MBeanServerConnection mbeans = jmx.getMBeanServerConnection();
      for (ObjectName name : mbeans.queryNames(new ObjectName("dev.retryagent:*"), null)) {
        out.append(name).append('\n');
        for (MBeanAttributeInfo a : mbeans.getMBeanInfo(name).getAttributes()) {
          Object v = mbeans.getAttribute(name, a.getName());
          Object text =
              v != null && v.getClass().isArray() ? Arrays.deepToString(new Object[] {v}) : v;
          out.append("  ").append(a.getName()).append('=').append(text).append('\n');
        }
      }
    } finally {
      vm.detach();
    }
    return out.toString();
  }
}
