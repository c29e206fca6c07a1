package dev.retryagent.it.harness;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retryagent.it.apps.H2App;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.params.provider.Arguments;

/**
 * The clients {@code apps.H2App} runs over HTTP/2 in clear text, what its output says of a call,
 * and the rule a call the server refused or failed is judged by, without and with the agent: the
 * one home for the tests that run it (Http2AgentIT, http2.RefusedStreamIT).
 */
public final class H2AppRuns {
  private H2AppRuns() {}

  /** The client of a run: java.net.http ({@code okHttp} null), or OkHttp of a version. */
  public record Client(OkHttpVersions okHttp) {
    /** H2App's first argument. */
    public String app() {
      return okHttp == null ? "jdk" : "ok";
    }

    /** Whether the client reaches h2c by the upgrade its first request carries (the JDK's). */
    public boolean upgrades() {
      return okHttp == null;
    }

    /** The protocol H2App prints for a response over HTTP/2. */
    public String http2() {
      return okHttp == null ? "HTTP_2" : "h2_prior_knowledge";
    }

    @Override
    public String toString() {
      return okHttp == null ? "java.net.http" : okHttp.toString();
    }
  }

  /** Each JDK with java.net.http and each OkHttp version. */
  public static Stream<Arguments> jdksAndClients() {
    List<Client> clients = new ArrayList<>();
    clients.add(new Client(null));
    for (OkHttpVersions v : OkHttpVersions.all()) {
      clients.add(new Client(v));
    }
    return AgentScenarios.jdksWith(clients);
  }

  /**
   * H2App run on {@code jdk} by {@code client}, with the agent (default configuration) or without,
   * making {@code args} (the client's name first, then the calls); asserted to exit normally.
   */
  public static ForkedJvm.Result run(Path jdk, Client client, boolean agent, List<String> args) {
    ForkedJvm.Builder b =
        ForkedJvm.builder(jdk).mainClass(H2App.class).args(args.toArray(String[]::new));
    if (client.okHttp() != null) {
      b.classpath(client.okHttp().jars());
    }
    if (!agent) {
      b.withoutAgent();
    }
    ForkedJvm.Result r = b.run();
    assertThat(r.exitCode()).as(r.describe()).isZero();
    return r;
  }

  /** Both runs described, for an assertion's message. */
  public static String why(ForkedJvm.Result plain, ForkedJvm.Result ours) {
    return "without the agent:\n" + plain.describe() + "\nwith:\n" + ours.describe();
  }

  /**
   * What the application got for H2App's call number {@code call}: the exception's class and
   * message, or the status and the protocol ("200 over HTTP_2").
   */
  public static String outcome(ForkedJvm.Result r, int call) {
    String error = r.value(call + ".error");
    return error != null
        // JDK 17 names the connection's local address ("/127.0.0.1:<port>: GOAWAY received"),
        // another in each run.
        ? error.replaceAll("/127\\.0\\.0\\.1:\\d+", "/127.0.0.1:<port>")
        : r.value(call + ".status") + " over " + r.value(call + ".protocol");
  }

  /**
   * A GET whose first stream the server refused, then answered 200: it ends in the 200 with the
   * agent; where the plain client resent it itself the agent adds no request, else it retries it
   * once. {@code plain} and {@code ours} are the outcomes, the counts what the server saw.
   */
  public static void assertRefusedGetRetriedOnlyWhereNotResent(
      String as, Client client, String plain, int plainCount, String ours, int ourCount) {
    String ok = "200 over " + client.http2();
    assertThat(ours).as(as).isEqualTo(ok);
    assertThat(ourCount).as(as).isEqualTo(plainCount + (plain.equals(ok) ? 0 : 1));
  }
}
