package dev.retryagent.agent.apache;

import dev.retryagent.agent.tooling.Bridge;
import dev.retryagent.agent.tooling.BridgeHandler;
import dev.retryagent.agent.tooling.PassThrough;

/**
 * Where the Apache HttpClient hooks enter the agent ({@link Bridge#APACHE_BUILDER}, {@link
 * Bridge#APACHE_EXECUTE}): lets the agent's own attempts through (the pass-through token the 4.5
 * glue sets around each one), then hands each hook to the {@link ApacheHandler}; and where the
 * application's own copy of the library's 4.5 adapter makes one of its attempts ({@link
 * Bridge#APACHE_LIBRARY_EXECUTE}), which the handler makes unretried. Public for the glue, which
 * lives next to each HttpClient copy in another class loader.
 */
public final class ApacheEntry implements BridgeHandler {
  /**
   * Set by the 4.5 glue around each attempt it runs through the client's own {@code doExecute} (the
   * library's own attempts: its public {@code execute}).
   */
  public static final PassThrough PASS_THROUGH = new PassThrough();

  private static final int BUILDER = 0;
  private static final int EXECUTE = 1;
  private static final int LIBRARY_EXECUTE = 2;

  private final ApacheHandler handler;
  private final int hook;

  private ApacheEntry(ApacheHandler handler, int hook) {
    this.handler = handler;
    this.hook = hook;
  }

  /** Sends the three hooks' calls to {@code handler}. */
  static void register(ApacheHandler handler) {
    // One name per hook: a failing hook is said once, in a line that names it.
    Bridge.register(
        Bridge.APACHE_BUILDER,
        "an Apache HttpClient being built",
        new ApacheEntry(handler, BUILDER));
    Bridge.register(
        Bridge.APACHE_EXECUTE,
        "an Apache HttpClient 4.5 execute",
        new ApacheEntry(handler, EXECUTE));
    Bridge.register(
        Bridge.APACHE_LIBRARY_EXECUTE,
        "the library's Apache HttpClient 4.5 execute",
        new ApacheEntry(handler, LIBRARY_EXECUTE));
  }

  /** Removes the three hooks' handler: HttpClient runs unchanged. */
  static void unregister() {
    Bridge.unregister(Bridge.APACHE_BUILDER);
    Bridge.unregister(Bridge.APACHE_EXECUTE);
    Bridge.unregister(Bridge.APACHE_LIBRARY_EXECUTE);
  }

  @Override
  public Object enter(Object a, Object b, Object c, Object d, Object e, Object f) {
    if (hook == EXECUTE) {
      // the client, the target host, the request, the context
      return PASS_THROUGH.consume() || a == null ? null : handler.execute(a, b, c, d);
    }
    if (hook == LIBRARY_EXECUTE) {
      // the library's real client, the target host, the request, the attempt's context
      return a == null ? null : handler.libraryExecute(a, b, c, d);
    }
    if (a != null) {
      handler.builderCreated(a);
    }
    return null;
  }
}
