package dev.retryagent.it.differential;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * Where a driver reports what the application got: a status, an open WebSocket, or an exception,
 * with the thread it came on and when. The first report is the outcome; any further one is kept,
 * since a callback called twice is a difference too. Thread-safe.
 */
public final class Delivery {
  /**
   * One report.
   *
   * @param suppressed how many suppressed exceptions the failure and its causes carry (0 for a
   *     success)
   */
  record Report(String outcome, String thread, long nanos, int suppressed) {}

  private final CountDownLatch first = new CountDownLatch(1);
  private final List<Report> reports = new ArrayList<>();

  /** The application got a response with this status. */
  public void status(int code) {
    report("status " + code, 0);
  }

  /** The application got something else than a response (e.g. {@code websocket open}). */
  public void succeeded(String what) {
    report(what, 0);
  }

  /** The application got this exception. */
  public void failed(Throwable t) {
    report("exception " + describe(t), suppressedIn(t));
  }

  /** Suppressed exceptions of {@code t} and its causes (a wrapper's cause carries them). */
  static int suppressedIn(Throwable t) {
    int n = 0;
    int depth = 0;
    for (Throwable c = t; c != null && depth < 5; c = c.getCause(), depth++) {
      n += c.getSuppressed().length;
    }
    return n;
  }

  /** Class and message, on one line. */
  static String describe(Throwable t) {
    String message = t.getMessage() == null ? "" : ": " + t.getMessage().replaceAll("\\R", " ");
    return t.getClass().getName() + message;
  }

  private void report(String outcome, int suppressed) {
    Report r = new Report(outcome, Thread.currentThread().getName(), System.nanoTime(), suppressed);
    synchronized (reports) {
      reports.add(r);
    }
    first.countDown();
  }

  /** Waits for the first report until {@code deadlineNanos} (System.nanoTime); true if it came. */
  boolean await(long deadlineNanos) throws InterruptedException {
    return first.await(deadlineNanos - System.nanoTime(), TimeUnit.NANOSECONDS);
  }

  List<Report> reports() {
    synchronized (reports) {
      return List.copyOf(reports);
    }
  }
}
