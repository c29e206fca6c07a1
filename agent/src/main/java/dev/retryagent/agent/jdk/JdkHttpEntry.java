package dev.retryagent.agent.jdk;

import dev.retryagent.agent.tooling.Bridge;
import dev.retryagent.agent.tooling.BridgeHandler;
import dev.retryagent.agent.tooling.PassThrough;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;

/**
 * Where the {@code java.net.http} hooks enter the agent ({@link Bridge#JDK_SEND}, {@link
 * Bridge#JDK_SEND_ASYNC}): lets the agent's own attempts through (the pass-through token of {@link
 * ClientTransport}), then hands the call to the {@link JdkHttpHandler}; and where the application's
 * own copy of the library sends one of its attempts ({@link Bridge#JDK_LIBRARY_SEND}), sends it
 * unretried.
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
    // The library's attempts: a JdkHttpEntry without a handler, not a class of its own, which
    // would be one more class loaded in premain for what few applications have.
    Bridge.register(
        Bridge.JDK_LIBRARY_SEND, "the library's java.net.http send", new JdkHttpEntry(null, false));
    Bridge.register(
        Bridge.JDK_LIBRARY_SEND_ASYNC,
        "the library's java.net.http sendAsync",
        new JdkHttpEntry(null, true));
    ShutdownEntry.register();
  }

  /** Removes both hooks' handler: calls run the original methods. */
  static void unregister() {
    Bridge.unregister(Bridge.JDK_SEND);
    Bridge.unregister(Bridge.JDK_SEND_ASYNC);
    Bridge.unregister(Bridge.JDK_LIBRARY_SEND);
    Bridge.unregister(Bridge.JDK_LIBRARY_SEND_ASYNC);
    ShutdownEntry.unregister();
  }

  /**
   * One attempt of the application's own copy of the library ({@code RetryingHttpClient}), made on
   * its real client {@code client} with a pass-through token: the facade's hook lets it run
   * unretried, as {@link ClientTransport} does for the agent's own attempts. Its outcome, a failure
   * included, is the library's, as without the agent. Null (the library's own code runs) when the
   * field is not a client.
   */
  private Object libraryAttempt(Object client, Object request, Object bodyHandler, Object push) {
    if (!(client instanceof HttpClient)) {
      return null;
    }
    HttpClient c = (HttpClient) client;
    HttpRequest r = (HttpRequest) request;
    @SuppressWarnings("unchecked")
    HttpResponse.BodyHandler<Object> h = (HttpResponse.BodyHandler<Object>) bodyHandler;
    @SuppressWarnings("unchecked")
    HttpResponse.PushPromiseHandler<Object> p = (HttpResponse.PushPromiseHandler<Object>) push;
    PASS_THROUGH.next();
    try {
      return Bridge.returned(async ? c.sendAsync(r, h, p) : c.send(r, h));
    } catch (Throwable t) {
      return t; // the prologue throws it: the real client's own failure, for the library to judge
    } finally {
      PASS_THROUGH.clear();
    }
  }

  @Override
  public Object enter(
      Object client, Object request, Object bodyHandler, Object push, Object e, Object f) {
    if (handler == null) {
      return libraryAttempt(client, request, bodyHandler, push);
    }
    if (PASS_THROUGH.consume() || client == null) {
      return null;
    }
    return async
        ? handler.sendAsync(client, request, bodyHandler, push)
        : handler.send(client, request, bodyHandler);
  }
}
