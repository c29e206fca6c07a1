package dev.retryagent.it.differential;

import java.util.ArrayList;
import java.util.List;
import java.util.function.Function;

/**
 * What may differ between a case's run with the agent and its run without. Three rules:
 *
 * <ul>
 *   <li>{@link #same()}: the policy does not retry, so everything must agree: outcome, kind of
 *       thread, further reports, what was logged, the server's request count, and the elapsed time
 *       within {@link #near tolerance}.
 *   <li>{@link #retried}: the policy retries, so the only differences allowed are the extra
 *       attempts (at most {@code maxRequests} on the server, the call over within {@code
 *       maxMillis}) and a later success in place of the failure.
 *   <li>{@link #like}: without the agent the call is over before the application acts (a cancel or
 *       interrupt during the agent's wait between attempts); with it, the application must see what
 *       it sees when it acts on a call in progress: the outcome and thread of the reference case
 *       without the agent (or of an {@link #orLike alternative}), at the time of the reference, and
 *       no more requests than without the agent.
 * </ul>
 *
 * Immutable.
 */
public final class Expect {
  /**
   * Elapsed times agree within this, or half the longer, whichever is larger: generous, because two
   * forked JVMs share a CI machine's two cores, and because every bug the suite shows by time alone
   * costs seconds.
   */
  static final long SLACK_MILLIS = 1_000;

  private final boolean retried;
  private final String like;
  private final List<String> alternatives;
  private final int maxRequests;
  private final long maxMillis;
  private final boolean succeeding;

  private Expect(
      boolean retried,
      String like,
      List<String> alternatives,
      int maxRequests,
      long maxMillis,
      boolean succeeding) {
    this.retried = retried;
    this.like = like;
    this.alternatives = List.copyOf(alternatives);
    this.maxRequests = maxRequests;
    this.maxMillis = maxMillis;
    this.succeeding = succeeding;
  }

  /** Not retried: both runs agree. */
  public static Expect same() {
    return new Expect(false, null, List.of(), -1, -1, false);
  }

  /**
   * Retried: the outcome is the same or a success, on the same kind of thread; the server sees at
   * least as many requests as without the agent (or {@code maxRequests}, when the client alone
   * sends more) and at most {@code maxRequests}; the call is over within {@code maxMillis}.
   */
  public static Expect retried(int maxRequests, long maxMillis) {
    return new Expect(true, null, List.of(), maxRequests, maxMillis, false);
  }

  /**
   * As case {@code reference} without the agent (outcome, thread, time), with no more requests than
   * this case without the agent.
   */
  public static Expect like(String reference) {
    return new Expect(false, reference, List.of(), -1, -1, false);
  }

  /** Retried, and the outcome with the agent must be a success. */
  public Expect succeeding() {
    return new Expect(retried, like, alternatives, maxRequests, maxMillis, true);
  }

  /**
   * The outcome and thread may also be those of case {@code reference} without the agent, where
   * that case runs on the same API: the application's own timeout ending a retried call, or a
   * cancel that finds no exchange in progress.
   */
  public Expect orLike(String reference) {
    List<String> alts = new ArrayList<>(alternatives);
    alts.add(reference);
    return new Expect(retried, like, alts, maxRequests, maxMillis, succeeding);
  }

  /**
   * With the agent, at most {@code n} requests (a racy count, or attempts made before a cancel).
   */
  public Expect requestsAtMost(int n) {
    return new Expect(retried, like, alternatives, n, maxMillis, succeeding);
  }

  /** True when the policy retries: the only differences allowed are the extra attempts. */
  boolean retried() {
    return retried;
  }

  /** The cases whose runs without the agent this rule compares with. */
  List<String> references() {
    List<String> refs = new ArrayList<>(alternatives);
    if (like != null) {
      refs.add(0, like);
    }
    return refs;
  }

  /**
   * The differences that break the rule, empty when the runs agree.
   *
   * @param without this case without the agent
   * @param with this case with the agent
   * @param reference a case's observation without the agent on the same API, or null if that case
   *     does not run there
   */
  List<String> differences(
      Observation without, Observation with, Function<String, Observation> reference) {
    Observation model = like == null ? without : reference.apply(like);
    if (model == null) {
      throw new IllegalStateException("reference case " + like + " did not run");
    }
    List<Observation> accepted = new ArrayList<>(List.of(model));
    for (String alt : alternatives) {
      Observation o = reference.apply(alt);
      if (o != null) {
        accepted.add(o);
      }
    }
    List<String> d = new ArrayList<>();
    outcome(accepted, with, d);
    if (!with.more().equals(model.more())) {
      d.add("further reports `" + with.more() + "`, expected `" + model.more() + "`");
    }
    if (!with.log().equals(model.log())) {
      d.add("logged `" + with.log() + "`, expected `" + model.log() + "`");
    }
    requests(without, with, d);
    elapsed(without, model, with, d);
    return d;
  }

  private void outcome(List<Observation> accepted, Observation with, List<String> d) {
    Observation match = null;
    for (Observation o : accepted) {
      if (o.outcome().equals(with.outcome())) {
        match = o;
        break;
      }
    }
    boolean success = with.succeeded() && (retried || succeeding);
    if (succeeding ? !with.succeeded() : match == null && !success) {
      java.util.Set<String> outcomes = new java.util.LinkedHashSet<>();
      accepted.forEach(o -> outcomes.add("`" + o.outcome() + "`"));
      d.add(
          "outcome `"
              + with.outcome()
              + "`, expected "
              + (succeeding ? "a success" : String.join(" or ", outcomes))
              + (retried && !succeeding ? " or a success" : ""));
    }
    Observation threadModel = match != null ? match : accepted.get(0);
    if (!with.threadKind().equals(threadModel.threadKind())
        && !with.outcome().startsWith("none within")
        && !laterOnTheClientsThread(threadModel, with)) {
      d.add(
          "delivered on `" + with.threadKind() + "`, expected `" + threadModel.threadKind() + "`");
    }
  }

  /**
   * A future whose outcome is already there when the application attaches its stage runs that stage
   * on the caller ({@code caller} without the agent, the case's refused connection answered within
   * a millisecond); one completed later runs it on the client's own completion thread. A retried
   * call's outcome comes after a wait, so it is always the later kind: the JDK's asynchronous pool
   * is then what the same call would get without the agent had its answer come a moment later, and
   * so is Apache HttpClient 5.x's dispatch thread for a request that failed on the caller before it
   * was executed (a stale connection's {@code RequestNotExecutedException}, retried since 2c85e06,
   * whose retry's answer comes from the server). Any other thread (the agent's own among them)
   * still differs, and a call not retried must still agree exactly.
   */
  private boolean laterOnTheClientsThread(Observation model, Observation with) {
    return retried
        && model.threadKind().equals(ThreadKinds.CALLER)
        && (ThreadKinds.JDK_ASYNC_POOL.contains(with.threadKind())
            || ThreadKinds.APACHE_ASYNC_DISPATCH.equals(with.threadKind()));
  }

  private void requests(Observation without, Observation with, List<String> d) {
    int n = with.requests();
    if (retried) {
      // The client's own resends count as attempts: where it alone sends more than the policy
      // allows, the agent bounds them (HttpClient's governed retry handler).
      int least = Math.min(without.requests(), maxRequests);
      if (n < least || n > maxRequests) {
        d.add(n + " requests on the server, expected " + least + " to " + maxRequests);
      }
    } else if (maxRequests >= 0) {
      if (n > maxRequests) {
        d.add(n + " requests on the server, expected at most " + maxRequests);
      }
    } else if (n != without.requests()) {
      d.add(n + " requests on the server, expected " + without.requests());
    }
  }

  private void elapsed(Observation without, Observation model, Observation with, List<String> d) {
    if (retried) {
      // Where the client resent by itself without the agent (HttpClient 5's strategy waits 1 s
      // before resending a 503), the agent's retry takes that resend's place with the policy's
      // backoff, which may be shorter: no lower bound then.
      boolean clientResent = without.requests() > 1;
      if (with.millis() > maxMillis) {
        d.add("took " + with.millis() + " ms, expected at most " + maxMillis);
      } else if (!clientResent && with.millis() < model.millis() - SLACK_MILLIS) {
        d.add("took " + with.millis() + " ms, expected at least " + model.millis());
      }
    } else if (!near(model.millis(), with.millis())) {
      d.add("took " + with.millis() + " ms, expected about " + model.millis());
    }
  }

  /** Within {@link #SLACK_MILLIS}, or half the longer time. */
  static boolean near(long a, long b) {
    return Math.abs(a - b) <= Math.max(SLACK_MILLIS, Math.max(a, b) / 2);
  }

  @Override
  public String toString() {
    String alts =
        alternatives.isEmpty() ? "" : ", or like `" + String.join("`, `", alternatives) + "`";
    if (like != null) {
      return "like `" + like + "` without the agent" + alts;
    } else if (!retried) {
      return "the same";
    }
    return "retried: at most "
        + maxRequests
        + " requests, over within "
        + maxMillis
        + " ms"
        + (succeeding ? ", then a success" : "")
        + alts;
  }
}
