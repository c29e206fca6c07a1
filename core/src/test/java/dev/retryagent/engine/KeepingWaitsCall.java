package dev.retryagent.engine;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;

/**
 * A GET that is its own call, whose adapter keeps the waits it is told of ({@link
 * RetryCall#waitStarts}) and whose caller gives up when the test says.
 */
final class KeepingWaitsCall extends SelfViewCall {
  final List<RetryCall.Wait> kept = new ArrayList<>();
  int told;
  volatile boolean gaveUp;
  boolean giveUpAsTheWaitStarts;

  @Override
  protected boolean waitStarts(RetryCall.Wait wait) {
    told++;
    kept.add(wait);
    if (giveUpAsTheWaitStarts) {
      gaveUp = true; // shutdownNow() ran just before the wait was kept: it could not end it
    }
    return true;
  }

  @Override
  protected void waitEnds(RetryCall.Wait wait) {
    assertThat(kept.remove(wait)).as("a wait told of").isTrue();
  }

  @Override
  public boolean callerGaveUp() {
    return gaveUp;
  }

  @Override
  public String method() {
    return "GET";
  }

  @Override
  public String scheme() {
    return "http";
  }

  @Override
  public String host() {
    return "api.example.com";
  }

  @Override
  public int port() {
    return 80;
  }

  @Override
  public String path() {
    return "/v1/items";
  }

  @Override
  public String header(String name) {
    return null;
  }

  @Override
  public boolean bodyReplayable() {
    return true;
  }
}
