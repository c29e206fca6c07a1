package dev.retryagent.demo;

import java.time.Duration;
import java.util.Locale;

/** The ground truth of one run: what the service saw, and what the servers counted. */
public final class RunResult {
  private final int succeeded;
  private final int failed;
  private final int providerRequests;
  private final int chargesCreated;
  private final Duration duration;

  public RunResult(
      int succeeded, int failed, int providerRequests, int chargesCreated, Duration duration) {
    this.succeeded = succeeded;
    this.failed = failed;
    this.providerRequests = providerRequests;
    this.chargesCreated = chargesCreated;
    this.duration = duration;
  }

  /** Articles for which both LLM calls succeeded. */
  public int succeeded() {
    return succeeded;
  }

  /** Articles for which an LLM call failed. */
  public int failed() {
    return failed;
  }

  /** Requests the provider read, as counted by the provider (retries included). */
  public int providerRequests() {
    return providerRequests;
  }

  /** Distinct charges the gateway stored. */
  public int chargesCreated() {
    return chargesCreated;
  }

  public Duration duration() {
    return duration;
  }

  /** Every article processed and the order charged exactly once. */
  public boolean allGood() {
    return failed == 0 && chargesCreated == 1;
  }

  /** {@code Succeeded: 20 | Failed: 0} */
  public String outcomeLine() {
    return "Succeeded: " + succeeded + " | Failed: " + failed;
  }

  /** {@code Provider requests: 57 | Charges created: 1 | Duration: 3.0s} */
  public String truthLine() {
    return String.format(
        Locale.ROOT,
        "Provider requests: %d | Charges created: %d | Duration: %.1fs",
        providerRequests,
        chargesCreated,
        duration.toMillis() / 1000.0);
  }

  @Override
  public String toString() {
    return outcomeLine() + " / " + truthLine();
  }
}
