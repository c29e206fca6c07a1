package java.lang;

import java.util.concurrent.atomic.AtomicLong;

/**
 * retry-agent's one bridge between rewritten library classes and the agent: the only agent class
 * that hooked code links to. The agent defines it at start-up into the bootstrap class loader and
 * {@code java.base} (with {@code MethodHandles.privateLookupIn(Object.class, ...).defineClass},
 * after opening {@code java.lang} to itself), so every class in every loader and module sees it:
 * {@code java.lang} is exported to all and every loader delegates {@code java.*}. Nothing is
 * appended to the bootstrap class path.
 *
 * <p>It speaks {@code java.base} types only and knows no hook: a hook is a number ({@code hook}),
 * written into the rewritten class by the agent, and every call goes to {@link #dispatch} of the
 * one subclass instance the agent installs, with the hook's number and up to six arguments
 * (missing ones {@code null}). A plain virtual call: no method handle to create at start-up, and
 * one the JIT inlines. The outcome convention:
 *
 * <ul>
 *   <li>{@code null}: the agent does not take the call, the original method body runs;
 *   <li>a {@link Throwable}: thrown to the caller, unchanged, by {@link #deliver};
 *   <li>the agent's {@code null}-result marker: the method returns {@code null};
 *   <li>anything else: the method's result ({@code void} methods ignore it).
 * </ul>
 *
 * <p>Rules of this file: no lambda, no string concatenation, no nested class, no type outside
 * {@code java.base} (the agent's build and its jar-layout test check them).
 *
 * <p>Thread safety: the dispatcher and the marker are published through volatile fields; the
 * counters are atomic.
 */
public abstract class RetryAgentBridge {
  /** How many hook numbers exist: {@code 0 <= hook < HOOKS}. */
  public static final int HOOKS = 32;

  private static volatile RetryAgentBridge dispatcher;
  private static volatile Object nullResult;
  private static final AtomicLong[] HANDLED = new AtomicLong[HOOKS];

  static {
    for (int i = 0; i < HOOKS; i++) {
      HANDLED[i] = new AtomicLong();
    }
  }

  /** For the agent's one subclass. */
  protected RetryAgentBridge() {}

  /**
   * Makes {@code agent} the dispatcher of every hook, once per JVM: the agent calls it right after
   * it defined this class, so nothing else can have come first, and a later call (an application
   * subclassing this public class) is refused.
   *
   * @param agent the agent's instance; its {@link #dispatch} must be thread-safe
   * @param nullMarker the outcome that {@link #deliver} turns into a {@code null} result
   * @throws IllegalStateException if a dispatcher is installed already
   */
  protected static synchronized void install(RetryAgentBridge agent, Object nullMarker) {
    if (dispatcher != null) {
      throw new IllegalStateException("retry-agent's bridge has its dispatcher already");
    }
    nullResult = nullMarker;
    dispatcher = agent;
  }

  /**
   * Where every hooked call goes: the agent's handler of {@code hook}.
   *
   * @return {@code null} to run the original body, or the outcome for {@link #deliver}
   */
  protected abstract Object dispatch(
      int hook, Object a, Object b, Object c, Object d, Object e, Object f) throws Throwable;

  /**
   * Hands a call to the agent.
   *
   * @return {@code null} to run the original body, or the outcome for {@link #deliver}
   * @throws Throwable only when the agent fails before taking the call: the prologue that calls
   *     this catches it and runs the original body
   */
  public static Object enter(int hook, Object a) throws Throwable {
    return call(hook, a, null, null, null, null, null);
  }

  /** As {@link #enter(int, Object)}, with two arguments. */
  public static Object enter(int hook, Object a, Object b) throws Throwable {
    return call(hook, a, b, null, null, null, null);
  }

  /** As {@link #enter(int, Object)}, with three arguments. */
  public static Object enter(int hook, Object a, Object b, Object c) throws Throwable {
    return call(hook, a, b, c, null, null, null);
  }

  /** As {@link #enter(int, Object)}, with four arguments. */
  public static Object enter(int hook, Object a, Object b, Object c, Object d) throws Throwable {
    return call(hook, a, b, c, d, null, null);
  }

  /** As {@link #enter(int, Object)}, with five arguments. */
  public static Object enter(int hook, Object a, Object b, Object c, Object d, Object e)
      throws Throwable {
    return call(hook, a, b, c, d, e, null);
  }

  /** As {@link #enter(int, Object)}, with six arguments. */
  public static Object enter(int hook, Object a, Object b, Object c, Object d, Object e, Object f)
      throws Throwable {
    return call(hook, a, b, c, d, e, f);
  }

  private static Object call(int hook, Object a, Object b, Object c, Object d, Object e, Object f)
      throws Throwable {
    RetryAgentBridge agent = dispatcher;
    if (agent == null) {
      return null;
    }
    Object outcome = agent.dispatch(hook, a, b, c, d, e, f);
    // nothing after the agent took the call may throw: the prologue would run the original too
    if (outcome != null && hook >= 0 && hook < HOOKS) {
      HANDLED[hook].incrementAndGet();
    }
    return outcome;
  }

  /**
   * Tells the agent about an event the original code goes on with (an object was built, a call is
   * being cancelled). Never throws: it runs where the rewritten code has no handler.
   */
  public static void tell(int hook, Object a) {
    try {
      call(hook, a, null, null, null, null, null);
    } catch (Throwable bug) {
      // the agent reports its own failures; the application's code runs on
    }
  }

  /**
   * The result of a call the agent took: throws a throwable outcome unchanged (the caller's own
   * {@code IOException}, say), or returns the value.
   */
  public static Object deliver(Object outcome) throws Throwable {
    if (outcome instanceof Throwable) {
      throw (Throwable) outcome;
    }
    return outcome == nullResult ? null : outcome;
  }

  /**
   * How many calls of {@code hook} the agent took since start-up (non-null outcomes): a self-test
   * that the hook fires, for diagnostics and tests; 0 for an unknown number.
   */
  public static long handled(int hook) {
    return hook >= 0 && hook < HOOKS ? HANDLED[hook].get() : 0;
  }
}
