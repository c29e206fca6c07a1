package dev.retryagent.agent;

import java.io.IOException;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.concurrent.CompletableFuture;

/**
 * How the agent runs an intercepted {@code java.net.http} call; the same shape as the engine's
 * {@code dev.retryagent.jdk.JdkRetrying}, with the intercepted client as the transport of each
 * attempt. Implementations are thread-safe.
 */
interface JdkCalls {
  <T> HttpResponse<T> send(
      ClientTransport transport, HttpRequest request, HttpResponse.BodyHandler<T> handler)
      throws IOException, InterruptedException;

  <T> CompletableFuture<HttpResponse<T>> sendAsync(
      ClientTransport transport,
      HttpRequest request,
      HttpResponse.BodyHandler<T> handler,
      HttpResponse.PushPromiseHandler<T> pushPromiseHandler);
}
