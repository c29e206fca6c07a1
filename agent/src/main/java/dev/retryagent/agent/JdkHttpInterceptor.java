package dev.retryagent.agent;

import dev.retryagent.bootstrap.JdkHttpBridge.Outcome;
import dev.retryagent.bootstrap.JdkHttpHandler;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.function.Supplier;

/**
 * Receives intercepted {@code java.net.http} calls from the bridge and runs them through {@link
 * JdkCalls}.
 *
 * <p>Exception contract (see {@link JdkHttpHandler}): anything thrown before the call is handed to
 * {@link JdkCalls} escapes, and the bridge then lets the original method run; from that point on
 * every throwable, the retry engine's {@code IOException} or {@code InterruptedException} as much
 * as a bug, becomes an {@link Outcome} and reaches the caller unchanged, so a request is never
 * repeated behind the engine's back.
 */
final class JdkHttpInterceptor implements JdkHttpHandler {
  private final Supplier<JdkCalls> factory;
  private volatile JdkCalls calls;

  JdkHttpInterceptor(Supplier<JdkCalls> factory) {
    this.factory = factory;
  }

  @Override
  public Object send(Object client, Object request, Object bodyHandler) {
    JdkCalls c = calls();
    ClientTransport transport = new ClientTransport((HttpClient) client);
    HttpRequest r = (HttpRequest) request;
    HttpResponse.BodyHandler<?> h = (HttpResponse.BodyHandler<?>) bodyHandler;
    try {
      return Outcome.returned(c.send(transport, r, h));
    } catch (Throwable t) {
      return Outcome.thrown(t);
    }
  }

  @Override
  public Object sendAsync(
      Object client, Object request, Object bodyHandler, Object pushPromiseHandler) {
    JdkCalls c = calls();
    ClientTransport transport = new ClientTransport((HttpClient) client);
    HttpRequest r = (HttpRequest) request;
    @SuppressWarnings("unchecked")
    HttpResponse.BodyHandler<Object> h = (HttpResponse.BodyHandler<Object>) bodyHandler;
    @SuppressWarnings("unchecked")
    HttpResponse.PushPromiseHandler<Object> p =
        (HttpResponse.PushPromiseHandler<Object>) pushPromiseHandler;
    try {
      return Outcome.returned(c.sendAsync(transport, r, h, p));
    } catch (Throwable t) {
      return Outcome.thrown(t);
    }
  }

  private JdkCalls calls() {
    JdkCalls c = calls;
    if (c == null) {
      synchronized (this) {
        c = calls;
        if (c == null) {
          c = factory.get();
          calls = c;
        }
      }
    }
    return c;
  }
}
