package dev.retryagent.agent.jdk;

import dev.retryagent.agent.tooling.Bridge;
import dev.retryagent.agent.tooling.BridgeHandler;
import dev.retryagent.agent.tooling.PassThrough;

/**
 * Where the {@code java.net.http} hooks enter the agent ({@link Bridge#JDK_SEND}, {@link
 * Bridge#JDK_SEND_ASYNC}): lets the agent's own attempts through (the pass-through token of {@link
 * ClientTransport}), then hands the call to the {@link JdkHttpHandler}.
 */
final class JdkHttpEntry implements BridgeHandler {
  /** Set by {@link ClientTransport} around each of the agent's own attempts. */
  static final PassThrough PASS_THROUGH = new PassThrough();

  private final JdkHttpHandler handler;
  private final boolean async;

  private JdkHttpEntry(JdkHttpHandler handler, boolean async) {
    this.handler = handler;
    this.async = async;
  }

  /** Sends both hooks' calls to {@code handler}. */
  static void register(JdkHttpHandler handler) {
    // One name per hook: a failing hook is said once, in a line that names it.
    Bridge.register(Bridge.JDK_SEND, "a java.net.http send", new JdkHttpEntry(handler, false));
    Bridge.register(
        Bridge.JDK_SEND_ASYNC, "a java.net.http sendAsync", new JdkHttpEntry(handler, true));
    ShutdownEntry.register();
  }

  /** Removes both hooks' handler: calls run the original methods. */
  static void unregister() {
    Bridge.unregister(Bridge.JDK_SEND);
    Bridge.unregister(Bridge.JDK_SEND_ASYNC);
    ShutdownEntry.unregister();
  }

  @Override
  public Object enter(
      Object client, Object request, Object bodyHandler, Object push, Object e, Object f) {
    if (PASS_THROUGH.consume() || client == null) {
      return null;
    }
    return async
        ? handler.sendAsync(client, request, bodyHandler, push)
        : handler.send(client, request, bodyHandler);
  }
}
