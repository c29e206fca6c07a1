package dev.retryagent.it.differential;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * What must hold with the agent beyond the comparison with the run without it: the fault matrix's
 * explicit expectations (issue 14). Each is off unless set. Immutable.
 *
 * @param requests the exact request count on the server with the agent, per scope ({@code
 *     VARIANT/API@JDK} globs; a later scope overrides an earlier one), empty for unchecked
 * @param followUp the application's follow-up call on the same client (whose pool holds one
 *     connection) succeeds within {@value #FOLLOW_UP_MILLIS} ms and finds nothing left held
 * @param carriesFailures a failure the application gets carries, as suppressed exceptions, one
 *     earlier failure per retry the agent logged for the call after an exception (a retried status
 *     is a response, even where the client turns it into an exception for the application)
 * @param sameRequest every request the server saw has the same method, {@code Idempotency-Key} and
 *     body
 * @param minMillis the call took at least this long with the agent (a {@code Retry-After} waited
 *     for), 0 for unchecked
 */
record Checks(
    List<Scoped> requests,
    boolean followUp,
    boolean carriesFailures,
    boolean sameRequest,
    long minMillis) {
  /**
   * A follow-up that takes longer than this did not find the client free (generous: a loaded
   * machine; what a client still holds is reported explicitly).
   */
  static final long FOLLOW_UP_MILLIS = 2_500;

  /** An expected request count on the combinations of a scope. */
  record Scoped(String scope, int requests) {}

  static final Checks NONE = new Checks(List.of(), false, false, false, 0);

  private static final Pattern FOLLOW_UP = Pattern.compile("status 200 after (\\d+) ms");

  /** The agent's log line of a retry after an exception: {@code attempt 1 failed (reset: ...)}. */
  private static final Pattern RETRIED_FAILURE =
      Pattern.compile("failed \\((?!\\d).*, retrying in ");

  /**
   * Exactly {@code n} requests with the agent on the combinations of {@code scope}: what an earlier
   * scope said of them no longer holds there.
   */
  Checks requests(String scope, int n) {
    List<Scoped> r = new ArrayList<>(requests);
    r.add(new Scoped(scope, n));
    return new Checks(List.copyOf(r), followUp, carriesFailures, sameRequest, minMillis);
  }

  Checks withFollowUp() {
    return new Checks(requests, true, carriesFailures, sameRequest, minMillis);
  }

  Checks withCarriedFailures() {
    return new Checks(requests, followUp, true, sameRequest, minMillis);
  }

  Checks withSameRequest() {
    return new Checks(requests, followUp, carriesFailures, true, minMillis);
  }

  Checks minMillis(long millis) {
    return new Checks(requests, followUp, carriesFailures, sameRequest, millis);
  }

  /** The expected request count on {@code combination} (the last scope that covers it), or -1. */
  int requestsOn(String combination) {
    int n = -1;
    for (Scoped s : requests) {
      if (new Known(s.scope(), "", "", false).covers(combination)) {
        n = s.requests();
      }
    }
    return n;
  }

  /** What breaks these checks, empty when they hold. */
  List<String> differences(Observation without, Observation with, String combination) {
    List<String> d = new ArrayList<>();
    int n = requestsOn(combination);
    if (n >= 0 && with.requests() != n) {
      d.add(with.requests() + " requests on the server, the fault matrix expects " + n);
    }
    if (followUp) {
      Matcher m = FOLLOW_UP.matcher(with.followUp());
      if (!m.matches() || Long.parseLong(m.group(1)) > FOLLOW_UP_MILLIS) {
        d.add(
            "follow-up on the same client: `"
                + with.followUp()
                + "`, expected a 200 within "
                + FOLLOW_UP_MILLIS
                + " ms and nothing held");
      }
    }
    if (carriesFailures && with.outcome().startsWith("exception")) {
      int retries = 0;
      for (String line : with.agentLog()) {
        // The follow-up call is another call on the same server: its retries are its own.
        if (RETRIED_FAILURE.matcher(line).find()
            && !line.contains(dev.retryagent.it.harness.CountingServer.FOLLOW_UP_PATH)) {
          retries++;
        }
      }
      if (with.suppressed() - without.suppressed() != retries) {
        d.add(
            "the failure carries "
                + with.suppressed()
                + " suppressed ("
                + without.suppressed()
                + " without the agent), expected one more per retry: "
                + retries);
      }
    }
    if (sameRequest && new HashSet<>(with.shapes()).size() > 1) {
      d.add("the attempts differ: " + with.shapes());
    }
    if (with.millis() < minMillis) {
      d.add("took " + with.millis() + " ms, expected at least " + minMillis);
    }
    return d;
  }
}
