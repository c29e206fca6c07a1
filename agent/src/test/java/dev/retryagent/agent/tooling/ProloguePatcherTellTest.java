package dev.retryagent.agent.tooling;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.lang.reflect.InvocationTargetException;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * {@link ProloguePatcher}'s simpler hooks, the ones OkHttp's classes get: a {@code tell} first in a
 * method, a {@code tell} before every constructor returns, and a handler that tells of an {@code
 * IOException} leaving a method. Each patched class is defined by a loader of its own (verified),
 * and what ran, in which order, is recorded in one list: the bodies' steps and the hooks' calls.
 */
class ProloguePatcherTellTest {
  private static final int TOLD = 30; // not real hooks' numbers
  private static final int FAILED = 29;

  /** The bodies' steps and the hooks' calls, in order. */
  public static final class Steps {
    public static final List<String> LIST = new CopyOnWriteArrayList<>();

    private Steps() {}
  }

  /** The class patched: its constructor, a tell-first method and one with the handler. */
  public static class Told {
    private static final List<String> STEPS = Steps.LIST;

    public Told() {
      STEPS.add("constructed");
    }

    public Told(String name) {
      this();
      STEPS.add(name.isEmpty() ? "unnamed" : "named " + name);
    }

    public void cancel() {
      STEPS.add("cancel");
    }

    public String send(Object chain) throws IOException {
      STEPS.add("send " + chain);
      try {
        if (chain.equals("own")) {
          throw new IllegalStateException("caught inside");
        }
      } catch (IllegalStateException e) {
        return "recovered";
      }
      if (chain.equals("fail")) {
        throw new IOException("boom");
      }
      if (chain.equals("bug")) {
        throw new IllegalArgumentException("not an IOException");
      }
      return "sent " + chain;
    }

    public String storesIntoItsParameter(Object chain) throws IOException {
      chain = "replaced";
      return (String) chain;
    }

    @Override
    public String toString() {
      return "told";
    }
  }

  /** A constructor with two {@code return}s: left to ASM. */
  public static class TwoReturns {
    public TwoReturns(String s) {
      if (s == null) {
        return;
      }
      Steps.LIST.add(s);
    }
  }

  @BeforeAll
  static void defineTheBridge() {
    TestBridge.define();
  }

  @BeforeEach
  void register() {
    Steps.LIST.clear();
    Bridge.register(TOLD, "a test hook", (a, b, c, d, e, f) -> tell("told", a));
    // told {the argument, the exception}
    Bridge.register(
        FAILED,
        "a test hook",
        (a, b, c, d, e, f) -> tell("failed", java.util.Arrays.asList((Object[]) a)));
  }

  private static Object tell(String what, Object a) {
    Steps.LIST.add(what + " " + a);
    return null;
  }

  @AfterEach
  void unregister() {
    Bridge.unregister(TOLD);
    Bridge.unregister(FAILED);
  }

  private static final String SEND = "(Ljava/lang/Object;)Ljava/lang/String;";

  private static final List<ProloguePatcher.Target> TARGETS =
      List.of(
          ProloguePatcher.Target.tell("cancel", "()V", TOLD, 0),
          ProloguePatcher.Target.tellBeforeReturn(TOLD),
          ProloguePatcher.Target.tellAndOnIoException("send", SEND, TOLD, 1, FAILED));

  private static Class<?> patched() throws Exception {
    byte[] patched = ProloguePatcher.patch(DefiningLoader.bytesOf(Told.class), TARGETS);
    assertThat(patched).as("patched").isNotNull();
    ClassLoader own =
        new DefiningLoader(
            ProloguePatcherTellTest.class.getClassLoader(), Map.of(Told.class.getName(), patched));
    Class<?> c = Class.forName(Told.class.getName(), true, own); // linked: verified
    assertThat(c).isNotSameAs(Told.class);
    return c;
  }

  private static Object send(Object told, Object chain) throws Throwable {
    try {
      return told.getClass().getMethod("send", Object.class).invoke(told, chain);
    } catch (InvocationTargetException e) {
      throw e.getCause();
    }
  }

  @Test
  void everyConstructorTellsAsItReturnsOnceThisIsMade() throws Exception {
    Class<?> c = patched();
    c.getConstructor().newInstance();
    assertThat(Steps.LIST).containsExactly("constructed", "told told");

    Steps.LIST.clear();
    c.getConstructor(String.class).newInstance("x");
    // this() tells as it returns, then the outer constructor as it does
    assertThat(Steps.LIST).containsExactly("constructed", "told told", "named x", "told told");
  }

  @Test
  void aTellComesFirst() throws Exception {
    Object told = patched().getConstructor().newInstance();
    Steps.LIST.clear();
    told.getClass().getMethod("cancel").invoke(told);
    assertThat(Steps.LIST).containsExactly("told told", "cancel");
  }

  @Test
  void anIoExceptionLeavingTheMethodIsToldAndThrownOnAsItWas() throws Throwable {
    Object told = patched().getConstructor().newInstance();
    Steps.LIST.clear();
    assertThat(send(told, "a")).isEqualTo("sent a");
    assertThat(Steps.LIST).containsExactly("told a", "send a");

    Steps.LIST.clear();
    assertThatThrownBy(() -> send(told, "fail")).isInstanceOf(IOException.class).hasMessage("boom");
    // the handler is told the argument and the exception, which it throws on
    assertThat(Steps.LIST)
        .containsExactly("told fail", "send fail", "failed [fail, java.io.IOException: boom]");
  }

  @Test
  void whatTheMethodCatchesItselfAndOtherThrowablesAreNotTold() throws Throwable {
    Object told = patched().getConstructor().newInstance();
    Steps.LIST.clear();
    assertThat(send(told, "own")).isEqualTo("recovered");
    assertThatThrownBy(() -> send(told, "bug")).isInstanceOf(IllegalArgumentException.class);
    assertThat(Steps.LIST).containsExactly("told own", "send own", "told bug", "send bug");
  }

  @Test
  void whatItCannotWriteSafelyItLeavesToAsm() {
    byte[] told = DefiningLoader.bytesOf(Told.class);
    assertThat(
            ProloguePatcher.patch(
                DefiningLoader.bytesOf(TwoReturns.class),
                List.of(ProloguePatcher.Target.tellBeforeReturn(TOLD))))
        .as("a constructor with two returns")
        .isNull();
    assertThat(
            ProloguePatcher.patch(
                told,
                List.of(
                    ProloguePatcher.Target.tellAndOnIoException(
                        "storesIntoItsParameter", SEND, TOLD, 1, FAILED))))
        .as("a method that stores into the local its handler's frame holds")
        .isNull();
    assertThat(
            ProloguePatcher.patch(
                told,
                List.of(ProloguePatcher.Target.tellAndOnIoException("cancel", "()V", TOLD, 1, 1))))
        .as("a handler whose frame would hold a parameter the method does not have")
        .isNull();
  }
}
