package dev.retryagent.agent.tooling;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;

/** The token that lets the agent's own attempt run a hooked method's original body. */
class PassThroughTest {
  private final PassThrough passThrough = new PassThrough();

  @Test
  void aTokenIsConsumedOnce() {
    assertThat(passThrough.consume()).as("no token yet").isFalse();
    passThrough.next();
    assertThat(passThrough.consume()).isTrue();
    assertThat(passThrough.consume()).as("consumed").isFalse();
  }

  @Test
  void clearingRemovesATokenThatWasNotConsumed() {
    passThrough.next();
    passThrough.clear();
    assertThat(passThrough.consume()).isFalse();
    passThrough.clear(); // nothing to clear: no harm
    passThrough.next();
    assertThat(passThrough.consume()).as("a new token after a clear").isTrue();
  }

  @Test
  void aTokenIsThisThreadsOnly() throws Exception {
    passThrough.next();
    assertThat(CompletableFuture.supplyAsync(passThrough::consume).get()).isFalse();
    assertThat(passThrough.consume()).isTrue();
  }
}
