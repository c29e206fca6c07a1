package dev.retryagent.agent.tooling;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;

/**
 * The real {@code java.lang.RetryAgentBridge}, defined in the test JVM by {@link BridgeInstaller}
 * as the agent does (the build opens {@code java.lang} to the tests instead of {@code
 * Instrumentation.redefineModule}), and its public methods, called by reflection since no test
 * compiles against a class of {@code java.lang} that the JDK does not have.
 */
public final class TestBridge {
  private TestBridge() {}

  /** Defines the bridge once in this JVM; returns it. */
  public static Class<?> define() {
    try {
      return BridgeInstaller.install(null);
    } catch (Exception e) {
      throw new IllegalStateException("cannot define the bridge", e);
    }
  }

  /** {@code RetryAgentBridge.handled(hook)}. */
  public static long handled(int hook) {
    return (Long) call("handled", new Class<?>[] {int.class}, hook);
  }

  /** {@code RetryAgentBridge.deliver(outcome)}: the value, or the outcome's throwable thrown. */
  public static Object deliver(Object outcome) throws Throwable {
    try {
      Method m = define().getMethod("deliver", Object.class);
      return m.invoke(null, outcome);
    } catch (InvocationTargetException e) {
      throw e.getCause();
    }
  }

  /** {@code RetryAgentBridge.enter(hook, a, b, c)}. */
  public static Object enter(int hook, Object a, Object b, Object c) throws Throwable {
    try {
      Method m = define().getMethod("enter", int.class, Object.class, Object.class, Object.class);
      return m.invoke(null, hook, a, b, c);
    } catch (InvocationTargetException e) {
      throw e.getCause();
    }
  }

  /** {@code RetryAgentBridge.tell(hook, a)}. */
  public static void tell(int hook, Object a) throws Throwable {
    try {
      define().getMethod("tell", int.class, Object.class).invoke(null, hook, a);
    } catch (InvocationTargetException e) {
      throw e.getCause();
    }
  }

  private static Object call(String name, Class<?>[] types, Object... args) {
    try {
      return define().getMethod(name, types).invoke(null, args);
    } catch (ReflectiveOperationException e) {
      throw new IllegalStateException(e);
    }
  }
}
