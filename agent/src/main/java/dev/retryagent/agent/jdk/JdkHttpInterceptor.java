package dev.retryagent.agent.jdk;

import dev.retryagent.agent.runtime.AgentRuntime;
import dev.retryagent.agent.tooling.Bridge;
import dev.retryagent.internal.jdk.JdkRetrying;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;

/**
 * Receives intercepted {@code java.net.http} calls from the hook and runs them through the engine's
 * {@link JdkRetrying}, each attempt made on the very client the application called.
 *
 * <p>Exception contract (see {@link JdkHttpHandler}): anything thrown before the call is handed to
 * the engine escapes, and the bridge then lets the original method run; from that point on every
 * throwable, the retry engine's {@code IOException} or {@code InterruptedException} as much as a
 * bug, becomes the outcome and reaches the caller unchanged, so a request is never repeated behind
 * the engine's back.
 */
final class JdkHttpInterceptor implements JdkHttpHandler {
  private final AgentRuntime runtime;

  JdkHttpInterceptor(AgentRuntime runtime) {
    this.runtime = runtime;
  }

  @Override
  public Object send(Object client, Object request, Object bodyHandler) {
    JdkRetrying retrying = runtime.jdk();
    HttpClient c = (HttpClient) client;
    if (retrying == null) {
      // agent.clients.jdk-http turned off by a reload: the original method runs, but not on a
      // client whose shutdown waits for its calls still in the engine's hands (ClientCalls): the
      // JDK, not yet shut down, would take the call.
      if (!FacadeCalls.refuses(c)) {
        return null;
      }
      try {
        return JdkRetrying.refuseSend();
      } catch (Throwable t) {
        return t;
      }
    }
    ClientTransport transport = new ClientTransport(c, FacadeCalls.of(c));
    HttpRequest r = (HttpRequest) request;
    HttpResponse.BodyHandler<?> h = (HttpResponse.BodyHandler<?>) bodyHandler;
    try {
      return Bridge.returned(retrying.send(transport, r, h));
    } catch (Throwable t) {
      return t;
    }
  }

  @Override
  public Object sendAsync(
      Object client, Object request, Object bodyHandler, Object pushPromiseHandler) {
    JdkRetrying retrying = runtime.jdk();
    HttpClient c = (HttpClient) client;
    if (retrying == null) {
      return FacadeCalls.refuses(c) ? JdkRetrying.refuseSendAsync() : null; // as send
    }
    ClientTransport transport = new ClientTransport(c, FacadeCalls.of(c));
    HttpRequest r = (HttpRequest) request;
    @SuppressWarnings("unchecked")
    HttpResponse.BodyHandler<Object> h = (HttpResponse.BodyHandler<Object>) bodyHandler;
    @SuppressWarnings("unchecked")
    HttpResponse.PushPromiseHandler<Object> p =
        (HttpResponse.PushPromiseHandler<Object>) pushPromiseHandler;
    try {
      return Bridge.returned(retrying.sendAsync(transport, r, h, p));
    } catch (Throwable t) {
      return t;
    }
  }
}
