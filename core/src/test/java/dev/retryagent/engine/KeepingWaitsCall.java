package dev.retryagent.engine;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;

/**
 * A GET that is its own call ({@link OwnView}), whose adapter keeps the waits it is told of ({@link
 * RetryCall#waitStarts}) and whose caller gives up when the test says ({@code cancelled}).
 */
final class KeepingWaitsCall extends OwnView {
  final List<RetryCall.Wait> kept = new ArrayList<>();
  int told;
  boolean giveUpAsTheWaitStarts;

  @Override
  protected boolean waitStarts(RetryCall.Wait wait) {
    told++;
    kept.add(wait);
    if (giveUpAsTheWaitStarts) {
      cancelled = true; // shutdownNow() ran just before the wait was kept: it could not end it
    }
    return true;
  }

  @Override
  protected void waitEnds(RetryCall.Wait wait) {
    assertThat(kept.remove(wait)).as("a wait told of").isTrue();
  }
}
