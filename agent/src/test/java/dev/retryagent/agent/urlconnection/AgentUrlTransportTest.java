package dev.retryagent.agent.urlconnection;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retryagent.urlconnection.UrlTransport;
import org.junit.jupiter.api.Test;

/**
 * What the {@code parseHTTP} prologue is told: the JDK's own value outside the agent's attempts;
 * inside one, its resend switched off or counted.
 */
class AgentUrlTransportTest {
  private static final UrlTransport.JdkResend ALLOWED = () -> true;
  private static final UrlTransport.JdkResend NOT_ALLOWED = () -> false;

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
    transport.beforeStep(NOT_ALLOWED);

    assertThat(parsing(client, false)).isTrue();
    // a second response read on the same client (100-continue, an authentication round)
    assertThat(parsing(client, true)).isTrue();
    assertThat(transport.afterStep()).isZero();
  }

  @Test
  void aResendTheJdkMakesIsCountedAsAnAttempt() {
    transport.beforeStep(ALLOWED);

    assertThat(parsing(client, false)).isFalse();
    // the JDK set failedOnce and reads the response of the request it sent again
    assertThat(parsing(client, true)).isTrue();
    assertThat(transport.afterStep()).isEqualTo(1);
  }

  @Test
  void eachStepCountsItsOwnResends() {
    transport.beforeStep(ALLOWED);
    parsing(client, false);
    parsing(client, true);
    assertThat(transport.afterStep()).isEqualTo(1);

    transport.beforeStep(ALLOWED);
    assertThat(transport.afterStep()).isZero();
  }

  @Test
  void anotherThreadsStepsAreNotThisOnes() throws Exception {
    transport.beforeStep(NOT_ALLOWED);
    boolean[] seen = new boolean[1];
    Thread other = new Thread(() -> seen[0] = parsing(client, false));
    other.start();
    other.join();

    assertThat(seen[0]).isFalse();
    transport.afterStep();
  }

  @Test
  void theSwitchLeftOnByAnEarlierStepsResponseIsNotAResend() {
    // A POST without key, connect() first: through an HTTP proxy the JDK reads the proxy's
    // CONNECT reply ("200 Connection established", no length) in the connect step; with a
    // 100 Continue the interim response in the body step. Neither resets failedOnce, which the
    // agent set: the response step finds it still true, and the JDK sent nothing again.
    transport.beforeStep(NOT_ALLOWED);
    assertThat(parsing(client, false)).as("the CONNECT reply, or the 100 Continue").isTrue();
    assertThat(transport.afterStep()).isZero();

    transport.beforeStep(NOT_ALLOWED);
    assertThat(parsing(client, true)).as("the response, still not to be resent").isTrue();
    assertThat(transport.afterStep()).as("no resend, so no attempt").isZero();

    // Nor where the rule lets a resend by then: the JDK does not resend on a switch left on.
    transport.beforeStep(NOT_ALLOWED);
    parsing(client, false);
    transport.afterStep();
    transport.beforeStep(ALLOWED);
    assertThat(parsing(client, true)).isTrue();
    assertThat(transport.afterStep()).isZero();
  }

  @Test
  void aResendThroughAProxyIsCountedOnce() {
    // The JDK's resend of an HTTPS request through a proxy tunnels again: it reads the CONNECT
    // reply, then the request's response, each entering with failedOnce true. One resend.
    transport.beforeStep(ALLOWED);
    assertThat(parsing(client, false)).isFalse();
    assertThat(parsing(client, true)).as("the CONNECT reply of the resend").isTrue();
    assertThat(parsing(client, true)).as("the resent request's response").isTrue();
    assertThat(transport.afterStep()).isEqualTo(1);
  }

  @Test
  void aStepNestedInAnotherOnTheSameThreadLeavesTheOuterStepAsItWas() {
    // A POST without key reads its response; during that step the JDK calls application code
    // (an Authenticator, a ProxySelector) that makes a connection of its own, a GET.
    transport.beforeStep(NOT_ALLOWED);
    Object getsClient = new Object();
    transport.beforeStep(ALLOWED);
    assertThat(parsing(getsClient, false)).isFalse();
    assertThat(parsing(getsClient, true)).as("the GET's resend, counted for it").isTrue();
    assertThat(transport.afterStep()).isEqualTo(1);

    // The POST's response read goes on: the JDK must still not send it again by itself.
    assertThat(parsing(client, false)).as("the POST's resend is still off").isTrue();
    assertThat(transport.afterStep()).isZero();
  }

  @Test
  void anOuterStepKeepsTheResendsCountedBeforeAStepNestedInIt() {
    transport.beforeStep(ALLOWED);
    parsing(client, false);
    parsing(client, true); // the JDK resent the outer request
    transport.beforeStep(ALLOWED);
    assertThat(transport.afterStep()).isZero();

    assertThat(transport.afterStep()).isEqualTo(1);
    // and the thread's next step starts afresh
    transport.beforeStep(NOT_ALLOWED);
    assertThat(parsing(client, false)).isTrue();
    assertThat(transport.afterStep()).isZero();
  }

  @Test
  void theRuleIsAskedAsEachResponseIsReadNotWhenTheStepBegan() {
    // A POST without key answered 303: inside the same step the JDK follows it with a GET (on
    // another client), which it may send again; the step's rule, asked when the POST's response
    // is read and again for the GET's, now judges the GET.
    boolean[] sendingAGet = {false};
    transport.beforeStep(() -> sendingAGet[0]);
    assertThat(parsing(client, false)).as("the POST's response: no resend").isTrue();
    sendingAGet[0] = true;
    Object getsClient = new Object();
    assertThat(parsing(getsClient, false)).as("the GET's: the JDK may resend it").isFalse();
    assertThat(parsing(getsClient, true)).as("the JDK resends it").isTrue();

    assertThat(transport.afterStep()).isEqualTo(1);
  }

  @Test
  void aResendAllowedOnAClientSwitchedOffEarlierInTheStepIsCounted() {
    boolean[] allowed = {false};
    transport.beforeStep(() -> allowed[0]);
    assertThat(parsing(client, false)).isTrue();
    allowed[0] = true;
    assertThat(parsing(client, false)).isFalse();
    assertThat(parsing(client, true)).as("the JDK resends on that client").isTrue();

    assertThat(transport.afterStep()).isEqualTo(1);
  }

  @Test
  void aStepOverHoldsNothingOfItsExchange() {
    // The rule is the exchange's (its call and request): the thread's step, kept for its next one,
    // must let it go when the step ends, or a thread would hold its last exchange.
    UrlTransport.JdkResend rule =
        new UrlTransport.JdkResend() {
          @Override
          public boolean mayResend() {
            return true;
          }
        };
    java.lang.ref.WeakReference<UrlTransport.JdkResend> held =
        new java.lang.ref.WeakReference<>(rule);
    transport.beforeStep(rule);
    transport.afterStep();
    rule = null;

    org.awaitility.Awaitility.await()
        .atMost(java.time.Duration.ofSeconds(10))
        .until(
            () -> {
              System.gc();
              return held.get() == null;
            });
  }
}
