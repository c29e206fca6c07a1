package dev.retryagent.it.differential;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import org.junit.jupiter.api.Test;

/** The fault matrix's own checks find what they are there to find (and nothing else). */
class ChecksTest {
  private static final String RESET_RETRY =
      "retry-agent: GET 127.0.0.1:PORT/ attempt 1 failed (reset: SocketException: Connection"
          + " reset), retrying in 17ms [route=x]";
  private static final String STATUS_RETRY =
      "retry-agent: GET 127.0.0.1:PORT/ attempt 1 failed (503), retrying in 15ms [route=x]";

  private static Observation seen(
      String outcome,
      int requests,
      List<String> agentLog,
      int suppressed,
      String followUp,
      List<String> shapes) {
    return new Observation(
        outcome, "caller", 200, "", "", requests, agentLog, suppressed, followUp, shapes);
  }

  private static Observation plain(int requests) {
    return seen(
        "exception java.net.SocketException: Connection reset",
        requests,
        List.of(),
        0,
        "",
        List.of());
  }

  @Test
  void theExactRequestCountIsTheLastScopeThatCoversTheCombination() {
    Checks c = Checks.NONE.requests("*", 3).requests("apache-5*", 2);

    assertThat(c.differences(plain(1), plain(3), "okhttp-4.12.0/execute@17")).isEmpty();
    assertThat(c.differences(plain(1), plain(3), "apache-5.6.5/execute@25"))
        .containsExactly("3 requests on the server, the fault matrix expects 2");
    assertThat(c.differences(plain(1), plain(2), "apache-5.6.5/execute@25")).isEmpty();
  }

  @Test
  void aFollowUpMustSucceedPromptlyWithNothingHeld() {
    Checks c = Checks.NONE.withFollowUp();
    String combination = "okhttp-4.12.0/execute@17";

    assertThat(differences(c, "status 200 after 12 ms", combination)).isEmpty();
    assertThat(
            differences(
                c,
                "status 200, 1 connection(s) in use, 0 call(s) in the dispatcher"
                    + " after 1003 ms",
                combination))
        .hasSize(1);
    assertThat(differences(c, "status 200 after 2600 ms", combination)).hasSize(1);
    assertThat(differences(c, "none within 3000 ms", combination)).hasSize(1);
    assertThat(
            differences(
                c, "exception java.net.SocketTimeoutException: timeout after 2001 ms", combination))
        .hasSize(1);
  }

  private static List<String> differences(Checks c, String followUp, String combination) {
    Observation with = seen("status 200", 1, List.of(), 0, followUp, List.of());
    return c.differences(plain(1), with, combination);
  }

  @Test
  void aFailureCarriesOneSuppressedPerRetryAfterAnException() {
    Checks c = Checks.NONE.withCarriedFailures();
    String followUpRetry =
        "retry-agent: GET 127.0.0.1:PORT/follow-up attempt 1 failed (timeout:"
            + " SocketTimeoutException: Read timed out), retrying in 56ms [route=x]";
    List<String> log = List.of(RESET_RETRY, RESET_RETRY, STATUS_RETRY, followUpRetry);

    Observation carried = seen(plain(3).outcome(), 3, log, 2, "", List.of());
    Observation lost = seen(plain(3).outcome(), 3, log, 0, "", List.of());
    Observation success = seen("status 200", 3, log, 0, "", List.of());

    assertThat(c.differences(plain(1), carried, "x/y@17")).isEmpty();
    assertThat(c.differences(plain(1), lost, "x/y@17"))
        .singleElement()
        .asString()
        .contains("carries 0 suppressed", "expected one more per retry: 2");
    assertThat(c.differences(plain(1), success, "x/y@17")).isEmpty();
  }

  @Test
  void everyAttemptOfAKeyedRequestMustBeTheSame() {
    Checks c = Checks.NONE.withSameRequest();
    Observation same =
        seen("status 200", 2, List.of(), 0, "", List.of("POST key=k body=1", "POST key=k body=1"));
    Observation otherKey =
        seen("status 200", 2, List.of(), 0, "", List.of("POST key=k body=1", "POST key=j body=1"));

    assertThat(c.differences(plain(1), same, "x/y@17")).isEmpty();
    assertThat(c.differences(plain(1), otherKey, "x/y@17"))
        .singleElement()
        .asString()
        .startsWith("the attempts differ");
  }

  @Test
  void aRetryAfterMustBeWaitedFor() {
    Checks c = Checks.NONE.minMillis(1_000);

    assertThat(c.differences(plain(1), plain(2), "x/y@17"))
        .containsExactly("took 200 ms, expected at least 1000");
  }

  @Test
  void aRetriedFailureMayComeLaterOnTheJdksPoolWhereTheFirstWasThereBeforeTheCallback() {
    Observation before =
        new Observation(
            "exception java.net.ConnectException",
            "app-caller",
            1,
            "",
            "",
            0,
            List.of(),
            0,
            "",
            List.of());
    Observation later17 = onThread(before, "Thread-12");
    Observation later25 = onThread(before, "ForkJoinPool.commonPool-worker-3");
    Observation agents = onThread(before, "retry-agent-async-1");

    Expect retried = Expect.retried(0, 5_000);
    assertThat(retried.differences(before, later17, ref -> null)).isEmpty();
    assertThat(retried.differences(before, later25, ref -> null)).isEmpty();
    assertThat(retried.differences(before, agents, ref -> null))
        .containsExactly("delivered on `retry-agent-async`, expected `caller`");
    assertThat(Expect.same().differences(before, later25, ref -> null))
        .containsExactly("delivered on `ForkJoinPool.commonPool-worker-N`, expected `caller`");
  }

  /**
   * HttpClient 5.x async fails a request it never executed on the caller, inside execute; the
   * retry's answer comes from the server on its dispatch thread, as the first request's would have.
   */
  @Test
  void aRetriedApacheAsyncFailureMayComeLaterOnItsDispatchThread() {
    Observation before =
        new Observation(
            "exception org.apache.hc.core5.http.RequestNotExecutedException",
            "app-caller",
            1,
            "",
            "",
            0,
            List.of(),
            0,
            "",
            List.of());
    Observation dispatched = onThread(before, "httpclient-dispatch-2");

    assertThat(Expect.retried(0, 5_000).differences(before, dispatched, ref -> null)).isEmpty();
    assertThat(Expect.same().differences(before, dispatched, ref -> null))
        .containsExactly("delivered on `httpclient-dispatch-N`, expected `caller`");
  }

  private static Observation onThread(Observation o, String thread) {
    return new Observation(
        o.outcome(),
        thread,
        o.millis(),
        o.more(),
        o.log(),
        o.requests(),
        o.agentLog(),
        o.suppressed(),
        o.followUp(),
        o.shapes());
  }
}
