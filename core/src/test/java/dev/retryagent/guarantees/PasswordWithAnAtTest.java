package dev.retryagent.guarantees;

import static dev.retryagent.testing.ScriptedHttpServer.Action.status;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.retryagent.apache4.RetryingCloseableHttpClient;
import dev.retryagent.apache5.RetryExecHandler;
import dev.retryagent.config.LogLevel;
import dev.retryagent.engine.RetryEngine;
import dev.retryagent.engine.RetryEvent;
import dev.retryagent.internal.observe.DeadLetterWriter;
import dev.retryagent.internal.observe.LogListener;
import dev.retryagent.internal.observe.RetryMetrics;
import dev.retryagent.policy.Policy;
import dev.retryagent.testing.FakeTime;
import dev.retryagent.testing.ScriptedHttpServer;
import dev.retryagent.testing.TestEngines;
import java.io.IOException;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A password with an unencoded {@code @} ({@code http://user:pa@ss@h.example/x}): Apache HttpClient
 * (4.5 and 5.x) cuts the user-info at the first {@code @} and takes {@code ss@h.example} as the
 * host, part of the password in it (the JDK's {@code URI} refuses such a host, OkHttp reads to the
 * last {@code @}). That host reaches the agent as the request's; the agent wrote it as it was in
 * every log line, dead letter, metrics host series and breaker key. A host never holds an
 * {@code @}: written {@code <redacted>@h.example} now. A resolver of the test's sends {@code
 * ss@h.example} to a loopback server that answers 503 three times: two retries, a give-up, a dead
 * letter.
 */
class PasswordWithAnAtTest {
  private static final String URL_HOST = "user:pa@ss@h.example";
  private static final String SECRET = "ss@";

  @TempDir Path dir;
  private ScriptedHttpServer server;
  private final FakeTime time = new FakeTime();
  private final List<RetryEvent> events = new CopyOnWriteArrayList<>();
  private final List<String> lines = new CopyOnWriteArrayList<>();
  private final RetryMetrics metrics = new RetryMetrics();
  private DeadLetterWriter deadLetters;
  private RetryEngine engine;

  @BeforeEach
  void start() throws IOException {
    server = new ScriptedHttpServer();
    server.otherwise(status(503));
    deadLetters = new DeadLetterWriter(dir.resolve("dead-letters.jsonl"), lines::add);
    engine =
        RetryEngine.builder()
            .clock(time)
            .sleeper(time)
            .scheduler(time)
            .policy(Policy.defaults())
            .listener(new LogListener(LogLevel.DEBUG, lines::add, null))
            .listener(metrics)
            .listener(deadLetters)
            .listener(TestEngines.recorder(events))
            .build();
  }

  @AfterEach
  void stop() throws IOException {
    deadLetters.close(Duration.ofSeconds(10));
    server.close();
  }

  private String url() {
    return "http://" + URL_HOST + ":" + server.port() + "/x";
  }

  /**
   * The client's host, {@code ss@h.example}, resolved to the loopback server; or, when {@link
   * #unresolvable}, refused as the JDK's resolver refuses a name it cannot find (no real lookup).
   */
  private InetAddress[] resolve(String host) throws UnknownHostException {
    if (!host.endsWith("h.example")) {
      throw new UnknownHostException(host);
    }
    if (unresolvable) {
      throw new UnknownHostException(host + ": Name or service not known");
    }
    return new InetAddress[] {InetAddress.getLoopbackAddress()};
  }

  private volatile boolean unresolvable;

  @Test
  void apacheHttpClient4() throws Exception {
    assertThat(callWithApache4()).isEqualTo(503);
    assertNoPartOfThePasswordWritten();
  }

  @Test
  void apacheHttpClient5Classic() throws Exception {
    assertThat(callWithApache5()).isEqualTo(503);
    assertNoPartOfThePasswordWritten();
  }

  /**
   * A host that does not resolve: the resolver's message names it bare ({@code ss@h.example: Name
   * or service not known}), no URL around it whose user-info the sanitiser would strip; it reached
   * the retry lines, the give-up line and the dead letter's error with part of the password.
   */
  @Test
  void apacheHttpClient4HostThatDoesNotResolve() throws Exception {
    unresolvable = true;
    assertThatThrownBy(this::callWithApache4)
        .isInstanceOf(UnknownHostException.class)
        .hasMessageContaining(SECRET); // the application's own exception, as without the agent
    assertNoPartOfThePasswordWrittenOfAFailure();
  }

  @Test
  void apacheHttpClient5ClassicHostThatDoesNotResolve() throws Exception {
    unresolvable = true;
    assertThatThrownBy(this::callWithApache5)
        .isInstanceOf(UnknownHostException.class)
        .hasMessageContaining(SECRET);
    assertNoPartOfThePasswordWrittenOfAFailure();
  }

  private int callWithApache4() throws IOException {
    try (org.apache.http.impl.client.CloseableHttpClient client =
            RetryingCloseableHttpClient.wrap(
                org.apache.http.impl.client.HttpClients.custom().setDnsResolver(this::resolve),
                engine);
        org.apache.http.client.methods.CloseableHttpResponse response =
            client.execute(new org.apache.http.client.methods.HttpGet(url()))) {
      return response.getStatusLine().getStatusCode();
    }
  }

  private int callWithApache5() throws IOException {
    org.apache.hc.client5.http.DnsResolver resolver =
        new org.apache.hc.client5.http.DnsResolver() {
          @Override
          public InetAddress[] resolve(String host) throws UnknownHostException {
            return PasswordWithAnAtTest.this.resolve(host);
          }

          @Override
          public String resolveCanonicalHostname(String host) {
            return host;
          }
        };
    try (org.apache.hc.client5.http.impl.classic.CloseableHttpClient client =
        RetryExecHandler.addTo(
                org.apache.hc.client5.http.impl.classic.HttpClients.custom()
                    .setConnectionManager(
                        org.apache.hc.client5.http.impl.io.PoolingHttpClientConnectionManagerBuilder
                            .create()
                            .setDnsResolver(resolver)
                            .build()),
                engine)
            .build()) {
      return client.execute(
          new org.apache.hc.client5.http.classic.methods.HttpGet(url()),
          response -> response.getCode());
    }
  }

  private void assertNoPartOfThePasswordWrittenOfAFailure() throws IOException {
    assertThat(server.requestCount()).as("nothing sent").isZero();
    assertThat(events).isNotEmpty();
    List<String> written = new ArrayList<>(lines);
    for (RetryEvent e : events) {
      written.add(e.toString());
    }
    written.addAll(metrics.hosts());
    assertThat(deadLetters.close(Duration.ofSeconds(10))).isTrue();
    String letters =
        new String(Files.readAllBytes(dir.resolve("dead-letters.jsonl")), StandardCharsets.UTF_8);
    written.add(letters);
    assertThat(String.join("\n", written))
        .as("the resolver's message was written")
        .contains("<redacted>@h.example: Name or service not known");
    assertThat(letters).contains("\"error\":\"java.net.UnknownHostException: <redacted>@h.example");
    assertThat(written)
        .as("log lines, events, metrics hosts and the dead letter")
        .noneMatch(s -> s.contains(SECRET));
  }

  private void assertNoPartOfThePasswordWritten() throws IOException {
    assertThat(server.requestCount()).as("sent to the loopback server").isEqualTo(3);
    assertThat(events).hasSize(3);
    assertThat(events.get(0).host()).as("the client's host, as routes see it").contains(SECRET);
    List<String> written = new ArrayList<>(lines);
    for (RetryEvent e : events) {
      written.add(e.toString());
      written.add(e.hostAndPort());
    }
    written.addAll(metrics.hosts());
    assertThat(deadLetters.close(Duration.ofSeconds(10))).isTrue();
    String letters =
        new String(Files.readAllBytes(dir.resolve("dead-letters.jsonl")), StandardCharsets.UTF_8);
    assertThat(letters).as("one dead letter").contains("\"reason\":\"attempts\"");
    written.add(letters);
    assertThat(written)
        .as("log lines, events, metrics hosts and the dead letter")
        .isNotEmpty()
        .noneMatch(s -> s.contains(SECRET));
    assertThat(letters).contains("\"host\":\"<redacted>@h.example\"");
    assertThat(metrics.hosts()).containsExactly("http://<redacted>@h.example:" + server.port());
  }
}
