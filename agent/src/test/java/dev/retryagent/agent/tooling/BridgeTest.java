package dev.retryagent.agent.tooling;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.retryagent.agent.CapturedStderr;
import java.io.IOException;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import net.bytebuddy.jar.asm.MethodVisitor;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The real {@code java.lang.RetryAgentBridge}, defined into {@code java.base} as at start-up, with
 * handlers registered under a hook number no client uses.
 */
class BridgeTest {
  private static final int HOOK = Bridge.HOOKS - 1;

  @RegisterExtension final CapturedStderr stderr = new CapturedStderr();
  private final List<List<Object>> calls = new CopyOnWriteArrayList<>();

  @BeforeAll
  static void defineTheBridge() {
    TestBridge.define();
  }

  @AfterEach
  void unregister() {
    Bridge.unregister(HOOK);
  }

  /** Records its arguments and answers {@code answer}, or throws it if it is a RuntimeException. */
  private void handle(Object answer) {
    Bridge.register(
        HOOK,
        "a test call",
        new BridgeHandler() {
          @Override
          public Object enter(Object a, Object b, Object c, Object d, Object e, Object f) {
            calls.add(java.util.Arrays.asList(a, b, c, d, e, f));
            if (answer instanceof RuntimeException) {
              throw (RuntimeException) answer;
            }
            return answer;
          }
        });
  }

  @Test
  void theBridgeIsInJavaBaseAndTheBootstrapLoader() throws Exception {
    Class<?> bridge = TestBridge.define();

    assertThat(bridge.getName()).isEqualTo(BridgeInstaller.NAME);
    assertThat(bridge.getClassLoader()).isNull();
    assertThat(bridge.getModule()).isSameAs(Object.class.getModule());
    assertThat(bridge.getField("HOOKS").getInt(null)).isEqualTo(Bridge.HOOKS);
    // once per JVM
    assertThat(BridgeInstaller.install(null)).isSameAs(bridge);
    // visible from a loader that delegates nothing but to the bootstrap loader
    try (java.net.URLClassLoader isolated =
        new java.net.URLClassLoader(new java.net.URL[0], null)) {
      assertThat(Class.forName(BridgeInstaller.NAME, false, isolated)).isSameAs(bridge);
    }
  }

  @Test
  void theApplicationCannotReplaceTheDispatcher() throws Throwable {
    Class<?> bridge = TestBridge.define();
    java.lang.reflect.Method install = bridge.getDeclaredMethod("install", bridge, Object.class);
    install.setAccessible(true); // the tests have java.lang open; an application has not

    // the agent's dispatcher came first, so any later one (a subclass of the public bridge) is
    // refused
    assertThatThrownBy(() -> install.invoke(null, null, new Object()))
        .hasRootCauseInstanceOf(IllegalStateException.class);
    handle(Bridge.TAKEN);
    assertThat(TestBridge.enter(HOOK, "still ours", null, null)).isSameAs(Bridge.TAKEN);
  }

  @Test
  void withoutAHandlerTheOriginalBodyRuns() throws Throwable {
    assertThat(TestBridge.enter(HOOK, "a", "b", "c")).isNull();
    assertThat(Bridge.dispatch(-1, null, null, null, null, null, null)).isNull();
    assertThat(Bridge.dispatch(Bridge.HOOKS, null, null, null, null, null, null)).isNull();
  }

  @Test
  void theHandlerGetsTheArgumentsAndTheMissingOnesAsNull() throws Throwable {
    handle(Bridge.TAKEN);

    assertThat(TestBridge.enter(HOOK, "a", "b", "c")).isSameAs(Bridge.TAKEN);

    assertThat(calls).containsExactly(java.util.Arrays.asList("a", "b", "c", null, null, null));
  }

  @Test
  void outcomesAreDeliveredAsTheConventionSays() throws Throwable {
    IOException failure = new IOException("gave up");

    assertThat(TestBridge.deliver("value")).isEqualTo("value");
    assertThat(TestBridge.deliver(Bridge.returned(null))).isNull();
    assertThat(Bridge.returned("value")).isEqualTo("value");
    assertThatThrownBy(() -> TestBridge.deliver(failure)).isSameAs(failure);
  }

  @Test
  void aFailingHandlerRunsTheOriginalBodyAndIsSaidOnce() throws Throwable {
    handle(new IllegalStateException("bug"));

    assertThat(TestBridge.enter(HOOK, "a", null, null)).isNull();
    assertThat(TestBridge.enter(HOOK, "a", null, null)).isNull();

    assertThat(calls).hasSize(2);
    assertThat(stderr.text().lines())
        .singleElement()
        .asString()
        .isEqualTo(
            "retry-agent: internal error, a test call passed through without retries:"
                + " java.lang.IllegalStateException: bug");
  }

  @Test
  void theLineOfAFailingHandlerCarriesNoQueryUserInfoCredentialOrLineBreak() throws Throwable {
    // issue 14, Security: a bug's message may hold what the request held.
    handle(
        new IllegalStateException(
            "bug on http://alice:secret-password@h.example/x?token=secret-query\r\n"
                + "Authorization: Bearer secret-bearer\u001b[2J"));

    assertThat(TestBridge.enter(HOOK, "a", null, null)).isNull();

    assertThat(stderr.text().lines())
        .singleElement()
        .asString()
        .isEqualTo(
            "retry-agent: internal error, a test call passed through without retries:"
                + " java.lang.IllegalStateException: bug on http://h.example/x Authorization:"
                + " <redacted>");
  }

  @Test
  void aTellNeverThrows() throws Throwable {
    handle(new IllegalStateException("bug"));

    TestBridge.tell(HOOK, "built");

    assertThat(calls)
        .containsExactly(java.util.Arrays.asList("built", null, null, null, null, null));
  }

  @Test
  void callsTheAgentTookAreCountedPerHook() throws Throwable {
    long before = TestBridge.handled(HOOK);
    handle(null);
    TestBridge.enter(HOOK, "declined", null, null);
    handle(Bridge.TAKEN);
    TestBridge.enter(HOOK, "taken", null, null);

    assertThat(TestBridge.handled(HOOK) - before).isEqualTo(1);
    assertThat(TestBridge.handled(-1)).isZero();
  }

  @Test
  void hookNumbersAndArgumentCountsOutsideTheBridgesAreRefused() {
    assertThatThrownBy(() -> Bridge.register(Bridge.HOOKS, "x", null))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> new Prologue(0)).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> new Prologue(BridgePrologue.MAX_ARGUMENTS + 1))
        .isInstanceOf(IllegalArgumentException.class);
  }

  private static final class Prologue extends BridgePrologue {
    Prologue(int arguments) {
      super(null, HOOK, arguments, null);
    }

    @Override
    protected void pushArguments(MethodVisitor mv) {}
  }
}
