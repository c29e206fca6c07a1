package dev.retryagent.engine;

import java.io.IOException;
import java.io.InterruptedIOException;

/** Drives a {@link RetryCall} on the caller's thread, waiting with the engine's {@link Sleeper}. */
public final class SyncRetryLoop {
  private SyncRetryLoop() {}

  /** One attempt, made on the calling thread. */
  @FunctionalInterface
  public interface Attempt<T> {
    /**
     * @param attempt 1-based attempt number (for the attempt header)
     * @param timeoutNanos the attempt's timeout, or -1 to keep the client's own
     */
    T run(int attempt, long timeoutNanos) throws IOException, InterruptedException;
  }

  /**
   * Runs attempts until one is final. An interrupt while waiting stops retrying: the interrupt flag
   * is restored and an {@link InterruptedIOException} thrown.
   *
   * @return the final response; every response before it was discarded
   */
  public static <T> T execute(
      RetryCall call, Sleeper sleeper, Attempt<T> attempt, ResponseAccess<T> access)
      throws IOException, InterruptedException {
    while (true) {
      long wait = call.reservePermit();
      if (wait > 0) {
        sleep(call, sleeper, wait);
      }
      call.acquireBreaker();
      int n = call.startAttempt();
      T response;
      try {
        response = attempt.run(n, call.attemptTimeoutNanos());
      } catch (IOException | InterruptedException | RuntimeException | Error e) {
        Decision d = call.onFailure(e);
        if (!d.retry()) {
          if (d.error() != null) {
            d.error().addSuppressed(e);
            throw d.error();
          }
          throw e;
        }
        sleep(call, sleeper, d.delayNanos());
        continue;
      }
      Decision d;
      try {
        d = call.onResponse(access.status(response), access.header(response, "Retry-After"));
      } catch (RuntimeException e) {
        // Never lose a response because of our own bug.
        call.onAbandoned();
        return response;
      }
      if (!d.retry()) {
        if (d.error() != null) {
          access.discard(response);
          throw d.error();
        }
        return response;
      }
      access.discard(response);
      sleep(call, sleeper, d.delayNanos());
    }
  }

  private static void sleep(RetryCall call, Sleeper sleeper, long nanos)
      throws InterruptedIOException {
    try {
      sleeper.sleep(nanos);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      call.onAbandoned();
      InterruptedIOException ie =
          new InterruptedIOException(
              "retry-agent: interrupted while waiting to retry "
                  + call.request().method()
                  + " "
                  + call.request().target()
                  + call.request().path());
      ie.initCause(e);
      throw ie;
    }
  }
}
