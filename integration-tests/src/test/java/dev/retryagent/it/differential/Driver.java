package dev.retryagent.it.differential;

import java.net.URI;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * One HTTP client as the differential suite drives it: everything client-specific lives in one
 * class that implements this. The suite runs every case whose {@link Action#needs()} an API offers,
 * in one forked JVM per {@link Variant}, JDK and with or without the agent.
 *
 * <p>{@link #variants()} runs in the test JVM; {@link #prepare} runs in the forked application (its
 * class is loaded there by name, with a public no-argument constructor), where it may use nothing
 * but the client and the JDK. Nothing here refers to the agent.
 */
public interface Driver {
  /**
   * The forked JVM set-ups of this client, each run as its own JVM: one per version or jar set
   * (test JVM side).
   */
  List<Variant> variants();

  /** The client's APIs, for example {@code send} and {@code sendAsync}. */
  List<String> apis();

  /** What {@code api} can do; a case runs on it when this holds all its action needs. */
  Set<Feature> features(String api);

  /**
   * Builds, as an application would, a new client configured as {@code action} says (timeouts,
   * redirects, interceptor) and the call of {@code action} to {@code server}, not yet started.
   */
  Exchange prepare(String api, Action action, URI server) throws Exception;

  /**
   * Outcomes this client delivers one way or another at random, with or without the agent (a race
   * inside the client): each regular expression over an outcome, with the one outcome it stands
   * for. Such an outcome's thread is not compared. Empty by default.
   */
  default Map<String, String> racyOutcomes(String api) {
    return Map.of();
  }

  /**
   * A regular expression over one logged entry that the client writes about its own resends
   * (HttpClient 4.5's {@code RetryExec}), or null. Where the policy retries, the agent's retry
   * takes the place of such a resend, so these entries may be missing with the agent; in a case the
   * policy does not retry they are compared like any other. None by default.
   */
  default String ownResendLog() {
    return null;
  }

  /**
   * A forked JVM set-up: a name for reports ({@code okhttp-4.12.0}) and the jars the application
   * has on its class path besides the test classes.
   */
  record Variant(String name, List<Path> classpath) {}

  /** One prepared call of the application's. */
  interface Exchange {
    /**
     * Starts the call. A blocking API blocks here and reports to {@code delivery} on this thread
     * (or throws, which the harness reports on this thread); an async API returns at once and
     * reports from wherever the client calls back.
     */
    void start(Delivery delivery) throws Exception;

    /**
     * The application gives up on the call as {@code how} says ({@link Action.Cancel#CALL}, {@link
     * Action.Cancel#DEPENDENT} or {@link Action.Cancel#ALL}; the harness interrupts by itself).
     * Called before {@link #start} for a cancel before the call, else from another thread.
     */
    void cancel(Action.Cancel how);

    /**
     * For an action that {@link Action#followsUp() follows up}, once the call is over: a {@code
     * GET} of the follow-up path on the same client, blocking, with the call's headers; returns
     * {@code status N}, followed by what the client still holds where it can tell ({@code , 1
     * connection leased}, {@code , 1 call in the dispatcher}). Throws what the call threw.
     */
    default String followUp() throws Exception {
      throw new UnsupportedOperationException("no follow-up");
    }
  }
}
