package dev.retryagent.engine;

import java.util.Locale;

/**
 * <b>Test only.</b> Faults injected into the engine, to prove through the real agent that a failure
 * of its own never breaks a call (issue 14, docs/guarantees.md). Read once, when the engine's
 * classes load, from the system property {@value #PROPERTY}: a comma-separated list of
 *
 * <ul>
 *   <li>{@code newCall}: starting a call throws (as a bug in resolving its policy would);
 *   <li>{@code decide}: deciding after an attempt throws;
 *   <li>{@code listener}: a listener that throws at every event is added to every engine.
 * </ul>
 *
 * Each throws an {@link IllegalStateException} whose message says it was injected. Unset (as it
 * always is outside the tests), nothing happens and nothing is checked but a constant.
 */
final class TestFaults {
  /** The system property; not part of the configuration contract. */
  static final String PROPERTY = "retryagent.test.fault";

  static final boolean NEW_CALL;
  static final boolean DECIDE;
  static final boolean LISTENER;

  static {
    String spec;
    try {
      spec = System.getProperty(PROPERTY, "");
    } catch (SecurityException e) {
      spec = "";
    }
    String s = "," + spec.replace(" ", "").toLowerCase(Locale.ROOT) + ",";
    NEW_CALL = s.contains(",newcall,");
    DECIDE = s.contains(",decide,");
    LISTENER = s.contains(",listener,");
  }

  private TestFaults() {}

  /** Throws the injected failure of deciding when {@code decide} is on. */
  static void decide() {
    if (DECIDE) {
      throw fault("decide");
    }
  }

  /** The injected failure of {@code where}. */
  static IllegalStateException fault(String where) {
    return new IllegalStateException("retry-agent test fault injected in " + where);
  }

  /** A listener that throws at every event ({@code listener}). */
  static final class FailingListener implements RetryListener {
    @Override
    public void onAttempt(RetryEvent e) {
      throw fault("a listener");
    }

    @Override
    public void onRetry(RetryEvent e) {
      throw fault("a listener");
    }

    @Override
    public void onGiveUp(RetryEvent e) {
      throw fault("a listener");
    }

    @Override
    public void onCallComplete(RetryEvent e) {
      throw fault("a listener");
    }

    @Override
    public void onBreakerRejected(RetryEvent e) {
      throw fault("a listener");
    }

    @Override
    public void onRateLimited(RetryEvent e) {
      throw fault("a listener");
    }

    @Override
    public void onBreakerTransition(CircuitBreaker b, CircuitTransition t, String route) {
      throw fault("a listener");
    }
  }
}
