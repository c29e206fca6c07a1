package dev.retryagent.agent.tooling;

/**
 * What one hook's calls reach in the agent: registered under the hook's number with {@link
 * Bridge#register}, called by {@code java.lang.RetryAgentBridge} through {@link Bridge#dispatch}.
 *
 * <p>The arguments are the ones the hook's bytecode pushes, in order ({@link
 * BridgePrologue#pushArguments}); those the hook does not pass are {@code null}. The result follows
 * the bridge's outcome convention:
 *
 * <ul>
 *   <li>{@code null}: not taken, the original method body runs (no handler work to undo: a
 *       pass-through token, a client switched off by a reload, an object the agent leaves alone);
 *   <li>a {@link Throwable}: the call was taken and ends by throwing it, unchanged, to the caller;
 *   <li>{@link Bridge#returned returned(value)}: the call was taken and returns {@code value}
 *       ({@link Bridge#TAKEN} for a {@code void} method).
 * </ul>
 *
 * <p>A handler must not throw once it has started the call (made the first attempt): a throwable
 * that escapes is taken as "not handled" and the original body runs as well, which would repeat the
 * request. Before that point a throwable is safe: {@link Bridge#dispatch} reports it once and the
 * original body runs. Called on the application's threads, concurrently.
 */
public interface BridgeHandler {
  /** One call of the hook; see the class comment for the arguments and the result. */
  Object enter(Object a, Object b, Object c, Object d, Object e, Object f);
}
