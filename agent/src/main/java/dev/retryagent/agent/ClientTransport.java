package dev.retryagent.agent;

import dev.retryagent.bootstrap.JdkHttpBridge;
import java.io.IOException;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.concurrent.CompletableFuture;

/**
 * One attempt of an intercepted call, made on the very client the application called, with a
 * pass-through token so that the hook lets this attempt run the original JDK method. The method
 * signatures are those of the engine's {@code dev.retryagent.jdk.JdkTransport}.
 *
 * <p>The client is the {@code HttpClientImpl} itself (the hook's {@code this}), not the facade the
 * application holds; the application's reference keeps the facade alive for a synchronous call.
 */
final class ClientTransport {
  private final HttpClient client;

  ClientTransport(HttpClient client) {
    this.client = client;
  }

  /** The intercepted client. */
  HttpClient client() {
    return client;
  }

  public <T> HttpResponse<T> send(HttpRequest request, HttpResponse.BodyHandler<T> handler)
      throws IOException, InterruptedException {
    JdkHttpBridge.passThroughNextCall();
    try {
      return client.send(request, handler);
    } finally {
      JdkHttpBridge.clearPassThrough();
    }
  }

  public <T> CompletableFuture<HttpResponse<T>> sendAsync(
      HttpRequest request,
      HttpResponse.BodyHandler<T> handler,
      HttpResponse.PushPromiseHandler<T> pushPromiseHandler) {
    JdkHttpBridge.passThroughNextCall();
    try {
      return client.sendAsync(request, handler, pushPromiseHandler);
    } finally {
      JdkHttpBridge.clearPassThrough();
    }
  }
}
