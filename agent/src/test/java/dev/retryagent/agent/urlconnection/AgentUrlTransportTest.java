package dev.retryagent.agent.urlconnection;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/**
 * What the {@code parseHTTP} prologue is told: the JDK's own value outside the agent's attempts;
 * inside one, its resend switched off or counted.
 */
class AgentUrlTransportTest {
  private final AgentUrlTransport transport = new AgentUrlTransport();
  private final Object client = new Object();

  /**
   * The value the prologue leaves in {@code failedOnce}: the JDK's own where the answer is null.
   */
  private boolean parsing(Object c, boolean failedOnce) {
    Boolean answer = transport.parsing(c, failedOnce);
    return answer == null ? failedOnce : answer;
  }

  @Test
  void outsideTheAgentsAttemptsTheJdkDecidesAsAlways() {
    assertThat(transport.parsing(client, false)).as("the agent leaves it").isNull();
    assertThat(parsing(client, false)).isFalse();
    assertThat(parsing(client, true)).isTrue();
    assertThat(transport.afterStep()).isZero();
  }

  @Test
  void aStepThatMustNotBeResentSwitchesTheResendOffAndCountsNothing() {
    transport.beforeStep(false);

    assertThat(parsing(client, false)).isTrue();
    // a second response read on the same client (100-continue, an authentication round)
    assertThat(parsing(client, true)).isTrue();
    assertThat(transport.afterStep()).isZero();
  }

  @Test
  void aResendTheJdkMakesIsCountedAsAnAttempt() {
    transport.beforeStep(true);

    assertThat(parsing(client, false)).isFalse();
    // the JDK set failedOnce and reads the response of the request it sent again
    assertThat(parsing(client, true)).isTrue();
    assertThat(transport.afterStep()).isEqualTo(1);
  }

  @Test
  void eachStepCountsItsOwnResends() {
    transport.beforeStep(true);
    parsing(client, true);
    assertThat(transport.afterStep()).isEqualTo(1);

    transport.beforeStep(true);
    assertThat(transport.afterStep()).isZero();
  }

  @Test
  void anotherThreadsStepsAreNotThisOnes() throws Exception {
    transport.beforeStep(false);
    boolean[] seen = new boolean[1];
    Thread other = new Thread(() -> seen[0] = parsing(client, false));
    other.start();
    other.join();

    assertThat(seen[0]).isFalse();
    transport.afterStep();
  }

  @Test
  void aStepNestedInAnotherOnTheSameThreadLeavesTheOuterStepAsItWas() {
    // A POST without key reads its response; during that step the JDK calls application code
    // (an Authenticator, a ProxySelector) that makes a connection of its own, a GET.
    transport.beforeStep(false);
    Object getsClient = new Object();
    transport.beforeStep(true);
    assertThat(parsing(getsClient, false)).isFalse();
    assertThat(parsing(getsClient, true)).as("the GET's resend, counted for it").isTrue();
    assertThat(transport.afterStep()).isEqualTo(1);

    // The POST's response read goes on: the JDK must still not send it again by itself.
    assertThat(parsing(client, false)).as("the POST's resend is still off").isTrue();
    assertThat(transport.afterStep()).isZero();
  }

  @Test
  void anOuterStepKeepsTheResendsCountedBeforeAStepNestedInIt() {
    transport.beforeStep(true);
    parsing(client, true); // the JDK resent the outer request
    transport.beforeStep(true);
    assertThat(transport.afterStep()).isZero();

    assertThat(transport.afterStep()).isEqualTo(1);
    // and the thread's next step starts afresh
    transport.beforeStep(false);
    assertThat(parsing(client, false)).isTrue();
    assertThat(transport.afterStep()).isZero();
  }
}
