package dev.retryagent.testing;

import dev.retryagent.engine.RetryEvent;
import dev.retryagent.engine.RetryListener;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/** A listener that records the type of each call event it is told, in order; thread-safe. */
public class EventTypes implements RetryListener {
  public final List<RetryEvent.Type> types = new CopyOnWriteArrayList<>();

  @Override
  public void onAttempt(RetryEvent e) {
    types.add(e.type());
  }

  @Override
  public void onRetry(RetryEvent e) {
    types.add(e.type());
  }

  @Override
  public void onGiveUp(RetryEvent e) {
    types.add(e.type());
  }

  @Override
  public void onCallComplete(RetryEvent e) {
    types.add(e.type());
  }

  /**
   * One that blocks in {@code onRetry} (a listener stuck on I/O): counts {@code entered} down, then
   * waits for {@code release} (60 s at most) before it records the retry.
   */
  public static EventTypes blockingOnRetry(CountDownLatch entered, CountDownLatch release) {
    return new EventTypes() {
      @Override
      public void onRetry(RetryEvent e) {
        entered.countDown();
        try {
          release.await(60, TimeUnit.SECONDS);
        } catch (InterruptedException x) {
          Thread.currentThread().interrupt();
        }
        super.onRetry(e);
      }
    };
  }
}
