package dev.retryagent.testing;

import dev.retryagent.engine.RetryEvent;
import dev.retryagent.engine.RetryListener;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * A listener that records each call event it is told as "TYPE attempt[ reason]", in order;
 * thread-safe. For tests that compare how clients tell the same call.
 */
public final class EventLines implements RetryListener {
  public final List<String> lines = new CopyOnWriteArrayList<>();

  private void add(RetryEvent e) {
    lines.add(e.type() + " " + e.attempt() + (e.reason() == null ? "" : " " + e.reason()));
  }

  @Override
  public void onAttempt(RetryEvent e) {
    add(e);
  }

  @Override
  public void onRetry(RetryEvent e) {
    add(e);
  }

  @Override
  public void onGiveUp(RetryEvent e) {
    add(e);
  }

  @Override
  public void onCallComplete(RetryEvent e) {
    add(e);
  }

  @Override
  public void onRateLimited(RetryEvent e) {
    add(e);
  }
}
