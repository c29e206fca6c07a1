package dev.retryagent.agent.tooling;

/**
 * A per-thread token that lets the agent's own call of a hooked method run the original body: the
 * handler consumes it ({@link #consume}) and answers {@code null}. The agent's attempts go through
 * the very client the application called, so without it each attempt would be taken over again.
 *
 * <pre>{@code
 * PASS_THROUGH.next();
 * try {
 *   client.send(request, handler);   // the hook's handler consumes the token: original body
 * } finally {
 *   PASS_THROUGH.clear();            // in case the call never reached the hook
 * }
 * }</pre>
 */
public final class PassThrough {
  // Never removed, only set to null: a ThreadLocal's entry is an object, and removing it after each
  // attempt made every hooked call make a new one (issue 13: 32 B per call). A thread that made a
  // hooked call keeps one entry, holding null or TRUE: JDK values, so it pins no class loader.
  private final ThreadLocal<Boolean> token = new ThreadLocal<>();

  /** Lets the next hooked call on this thread run the original method. */
  public void next() {
    token.set(Boolean.TRUE);
  }

  /** Removes a token that was not consumed. */
  public void clear() {
    if (token.get() != null) {
      token.set(null);
    }
  }

  /** True, once, when this thread holds a token; the handler then returns {@code null}. */
  public boolean consume() {
    if (token.get() == null) {
      return false;
    }
    token.set(null);
    return true;
  }
}
