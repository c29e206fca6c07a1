package dev.retryagent.agent.okhttp;

import dev.retryagent.agent.tooling.Bridge;
import dev.retryagent.agent.tooling.BridgeHandler;
import dev.retryagent.agent.tooling.PassThrough;

/**
 * Where the OkHttp hooks enter the agent ({@link Bridge#OKHTTP_BUILDER}, {@link
 * Bridge#OKHTTP_ENQUEUE}, {@link Bridge#OKHTTP_CANCEL}, {@link Bridge#OKHTTP_SENDING}, {@link
 * Bridge#OKHTTP_SEND_FAILED}): lets the agent's own {@code enqueue} through (the pass-through token
 * of the glue's enqueuer), then hands each hook to the {@link OkHttpHandler}. Public for the glue,
 * which lives next to each OkHttp copy in another class loader.
 */
public final class OkHttpEntry implements BridgeHandler {
  /** Set by the glue around each attempt it enqueues itself. */
  public static final PassThrough PASS_THROUGH = new PassThrough();

  private final OkHttpHandler handler;
  private final int hook;

  private OkHttpEntry(OkHttpHandler handler, int hook) {
    this.handler = handler;
    this.hook = hook;
  }

  /** Sends the five hooks' calls to {@code handler}. */
  static void register(OkHttpHandler handler) {
    // One name per hook: a failing hook is said once, in a line that names it.
    Bridge.register(
        Bridge.OKHTTP_BUILDER,
        "an OkHttpClient being built",
        new OkHttpEntry(handler, Bridge.OKHTTP_BUILDER));
    Bridge.register(
        Bridge.OKHTTP_ENQUEUE,
        "an OkHttp enqueue",
        new OkHttpEntry(handler, Bridge.OKHTTP_ENQUEUE));
    Bridge.register(
        Bridge.OKHTTP_CANCEL, "an OkHttp cancel", new OkHttpEntry(handler, Bridge.OKHTTP_CANCEL));
    Bridge.register(
        Bridge.OKHTTP_SENDING,
        "an OkHttp request being sent",
        new OkHttpEntry(handler, Bridge.OKHTTP_SENDING));
    Bridge.register(
        Bridge.OKHTTP_SEND_FAILED,
        "an OkHttp request that failed",
        new OkHttpEntry(handler, Bridge.OKHTTP_SEND_FAILED));
  }

  /** Removes the handler of the five hooks: OkHttp runs unchanged. */
  static void unregister() {
    Bridge.unregister(Bridge.OKHTTP_BUILDER);
    Bridge.unregister(Bridge.OKHTTP_ENQUEUE);
    Bridge.unregister(Bridge.OKHTTP_CANCEL);
    Bridge.unregister(Bridge.OKHTTP_SENDING);
    Bridge.unregister(Bridge.OKHTTP_SEND_FAILED);
  }

  @Override
  public Object enter(Object a, Object b, Object c, Object d, Object e, Object f) {
    if (hook == Bridge.OKHTTP_ENQUEUE) {
      // the call, its client, the callback
      return PASS_THROUGH.consume() || a == null ? null : handler.enqueue(a, b, c);
    }
    if (a != null) {
      if (hook == Bridge.OKHTTP_SENDING) {
        handler.sending(a);
      } else if (hook == Bridge.OKHTTP_SEND_FAILED) {
        // {chain, the IOException} (OkHttpHook)
        Object[] told = (Object[]) a;
        handler.sendFailed(told[0], told[1]);
      } else if (hook == Bridge.OKHTTP_BUILDER) {
        handler.builderCreated(a);
      } else {
        handler.cancel(a);
      }
    }
    return null;
  }
}
