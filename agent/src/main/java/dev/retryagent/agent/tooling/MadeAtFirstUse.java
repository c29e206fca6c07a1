package dev.retryagent.agent.tooling;

/**
 * Something made the first time it is needed, once, by whichever thread needs it first: a hook's
 * handler that an application without the hooked library never needs, so that its classes are not
 * loaded before {@code main} (issue 13). Thread-safe.
 *
 * @param <T> what is made
 */
public abstract class MadeAtFirstUse<T> {
  private volatile T made;

  /** Makes it; called once. */
  protected abstract T make();

  /** What {@link #make} made, made now if this is the first use. */
  protected final T get() {
    T t = made;
    if (t == null) {
      synchronized (this) {
        t = made;
        if (t == null) {
          t = make();
          made = t;
        }
      }
    }
    return t;
  }
}
