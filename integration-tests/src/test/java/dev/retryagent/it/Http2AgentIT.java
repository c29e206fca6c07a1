package dev.retryagent.it;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retryagent.it.harness.ForkedJvm;
import dev.retryagent.it.harness.H2AppRuns;
import dev.retryagent.it.harness.H2AppRuns.Client;
import dev.retryagent.testing.PushingH2cServer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * HTTP/2 through the agent, in clear text against a loopback server that speaks it (the harness's
 * other servers speak HTTP/1.1): java.net.http with {@code Version.HTTP_2} (the JDK's client
 * reaches an {@code http:} URL by the HTTP/1.1 upgrade to h2c) and OkHttp 3, 4 and 5 with {@code
 * H2_PRIOR_KNOWLEDGE}, each run without and with the agent (default configuration), the requests
 * counted at the server as HTTP/2 streams, each scenario on a server of its own. A 503 on a GET is
 * retried to the 200. A GET whose stream the server refused (RST_STREAM REFUSED_STREAM: not
 * processed) ends in the 200: plain OkHttp 3 and 4 and JDK 25's client resend it themselves, and
 * the agent then adds no stream; plain OkHttp 5 and JDK 17's client give the refusal back, and the
 * agent retries it. A POST without idempotency key refused so ends as without the agent (the
 * refusal, or the 200 of the client's own resend), with as many streams.
 *
 * <p>The JDK's client makes a first GET to each server, which the upgrade carries (the server
 * answers it as stream 1): the scenario's call then travels as an HTTP/2 stream of its own.
 */
class Http2AgentIT {
  private static final String[] SCENARIOS = {"unavailable", "refusedGet", "refusedPost"};

  /** What one run printed per scenario, and how many streams each server saw. */
  record Run(ForkedJvm.Result result, List<String> outcomes, List<Integer> streams) {
    String outcome(String scenario) {
      return outcomes.get(List.of(SCENARIOS).indexOf(scenario));
    }

    int streams(String scenario) {
      return streams.get(List.of(SCENARIOS).indexOf(scenario));
    }
  }

  private static Run run(Path jdk, Client client, boolean agent) throws Exception {
    boolean upgrade = client.upgrades();
    List<PushingH2cServer> servers = new ArrayList<>();
    try {
      List<String> args = new ArrayList<>();
      args.add(client.app());
      for (String scenario : SCENARIOS) {
        PushingH2cServer s =
            upgrade ? PushingH2cServer.withoutPushes() : PushingH2cServer.priorKnowledge();
        servers.add(s);
        if (upgrade) {
          s.enqueue(200);
          args.add("GET|" + s.url("/upgrade"));
        }
        if (scenario.equals("unavailable")) {
          s.enqueue(503); // then 200s
        } else {
          s.enqueueReset(PushingH2cServer.REFUSED_STREAM); // then 200s
        }
        args.add((scenario.equals("refusedPost") ? "POST|" : "GET|") + s.url("/" + scenario));
      }
      ForkedJvm.Result r = H2AppRuns.run(jdk, client, agent, args);
      List<String> outcomes = new ArrayList<>();
      List<Integer> streams = new ArrayList<>();
      int call = 0;
      for (PushingH2cServer s : servers) {
        if (upgrade) {
          call++;
          assertThat(r.value(call + ".status")).as(r.describe()).isEqualTo("200");
        }
        call++;
        outcomes.add(H2AppRuns.outcome(r, call));
        streams.add(s.requestStreams().size() - (upgrade ? 1 : 0));
      }
      return new Run(r, outcomes, streams);
    } finally {
      for (PushingH2cServer s : servers) {
        s.close();
      }
    }
  }

  @ParameterizedTest(name = "{0}, {1}")
  @MethodSource("dev.retryagent.it.harness.H2AppRuns#jdksAndClients")
  void aFailedHttp2CallIsRetriedAndARefusedPostEndsAsWithoutTheAgent(Path jdk, Client client)
      throws Exception {
    Run plain = run(jdk, client, false);
    Run ours = run(jdk, client, true);
    String http2 = client.http2();
    String why = H2AppRuns.why(plain.result(), ours.result());

    assertThat(plain.outcome("unavailable")).as(why).isEqualTo("503 over " + http2);
    assertThat(plain.streams("unavailable")).as(why).isEqualTo(1);
    assertThat(ours.outcome("unavailable")).as(why).isEqualTo("200 over " + http2);
    assertThat(ours.streams("unavailable")).as(why).isEqualTo(2);

    H2AppRuns.assertRefusedGetRetriedOnlyWhereNotResent(
        why,
        client,
        plain.outcome("refusedGet"),
        plain.streams("refusedGet"),
        ours.outcome("refusedGet"),
        ours.streams("refusedGet"));

    assertThat(ours.outcome("refusedPost")).as(why).isEqualTo(plain.outcome("refusedPost"));
    assertThat(ours.streams("refusedPost")).as(why).isEqualTo(plain.streams("refusedPost"));
  }
}
