package dev.retryagent.it.differential;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * Runs one call of the application's (in the forked JVM): prepares it with the driver, starts it on
 * a new thread {@code app-caller}, cancels or interrupts it from a thread {@code app-canceller}
 * when the action says so, and waits for the first report, at most the action's bound.
 */
final class Call {
  /** How long the application waits for its follow-up call. */
  static final int FOLLOW_UP_BOUND_MILLIS = 3_000;

  /**
   * What the application saw.
   *
   * @param suppressed how many suppressed exceptions the failure carried ({@link
   *     Delivery#suppressedIn})
   * @param followUp what the follow-up call got ({@link Driver.Exchange#followUp}), empty for none
   */
  record Seen(
      String outcome, String thread, long millis, String more, int suppressed, String followUp) {}

  private Call() {}

  static Seen run(Driver driver, DiffApp.Item item) {
    Action a = item.action();
    try {
      Driver.Exchange exchange = driver.prepare(item.api(), a, item.url());
      if (a.primes()) {
        String primed = exchange.followUp();
        if (!primed.startsWith("status 200")) {
          return new Seen("harness error: the priming call got " + primed, "-", 0, "", 0, "");
        }
      }
      Delivery delivery = new Delivery();
      long[] start = new long[1];
      CountDownLatch started = new CountDownLatch(1);
      Thread caller =
          new Thread(
              () -> {
                if (a.cancelAt() == Action.BEFORE && a.cancel() == Action.Cancel.INTERRUPT) {
                  Thread.currentThread().interrupt();
                } else if (a.cancelAt() == Action.BEFORE && a.cancel() != Action.Cancel.NONE) {
                  exchange.cancel(a.cancel());
                }
                start[0] = System.nanoTime();
                started.countDown();
                try {
                  exchange.start(delivery);
                } catch (Throwable t) {
                  delivery.failed(t);
                }
              },
              "app-caller");
      caller.setDaemon(true);
      caller.setContextClassLoader(DiffApp.APP_LOADER);
      caller.start();
      started.await();
      if (a.cancel() != Action.Cancel.NONE && a.cancelAt() != Action.BEFORE) {
        cancelLater(a, exchange, caller, start[0]);
      }
      long deadline = start[0] + TimeUnit.MILLISECONDS.toNanos(a.bound());
      if (!delivery.await(deadline)) {
        return new Seen("none within " + a.bound() + " ms", "-", a.bound(), "", 0, "");
      }
      List<Delivery.Report> reports = delivery.reports();
      Delivery.Report first = reports.get(0);
      List<String> more = new ArrayList<>();
      for (Delivery.Report r : reports.subList(1, reports.size())) {
        more.add(r.outcome() + " on " + r.thread());
      }
      return new Seen(
          first.outcome(),
          first.thread(),
          TimeUnit.NANOSECONDS.toMillis(first.nanos() - start[0]),
          String.join("; ", more),
          first.suppressed(),
          a.followsUp() ? followUp(exchange) : "");
    } catch (Exception e) {
      return new Seen("harness error " + Delivery.describe(e), "-", 0, "", 0, "");
    }
  }

  /**
   * The follow-up call, on a thread of its own, waited for at most {@value #FOLLOW_UP_BOUND_MILLIS}
   * ms: what it got, and in how many ms.
   */
  private static String followUp(Driver.Exchange exchange) throws InterruptedException {
    String[] got = {null};
    long start = System.nanoTime();
    Thread t =
        new Thread(
            () -> {
              String r;
              try {
                r = exchange.followUp();
              } catch (Throwable e) {
                r = "exception " + Delivery.describe(e);
              }
              synchronized (got) {
                got[0] = r;
              }
            },
            "app-follow-up");
    t.setDaemon(true);
    t.setContextClassLoader(DiffApp.APP_LOADER);
    t.start();
    t.join(FOLLOW_UP_BOUND_MILLIS);
    synchronized (got) {
      return got[0] == null
          ? "none within " + FOLLOW_UP_BOUND_MILLIS + " ms"
          : got[0] + " after " + TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start) + " ms";
    }
  }

  private static void cancelLater(
      Action a, Driver.Exchange exchange, Thread caller, long startNanos) {
    Thread canceller =
        new Thread(
            () -> {
              long wait =
                  startNanos + TimeUnit.MILLISECONDS.toNanos(a.cancelAt()) - System.nanoTime();
              try {
                TimeUnit.NANOSECONDS.sleep(Math.max(0, wait));
              } catch (InterruptedException e) {
                return;
              }
              if (a.cancel() == Action.Cancel.INTERRUPT) {
                caller.interrupt();
              } else {
                exchange.cancel(a.cancel());
              }
            },
            "app-canceller");
    canceller.setDaemon(true);
    canceller.setContextClassLoader(DiffApp.APP_LOADER);
    canceller.start();
  }
}
