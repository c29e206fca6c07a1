package dev.retryagent.agent;

import java.io.IOException;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.concurrent.CompletableFuture;

/** Makes exactly one attempt: the call as the application made it. */
final class PassThroughJdkCalls implements JdkCalls {
  @Override
  public <T> HttpResponse<T> send(
      ClientTransport transport, HttpRequest request, HttpResponse.BodyHandler<T> handler)
      throws IOException, InterruptedException {
    return transport.send(request, handler);
  }

  @Override
  public <T> CompletableFuture<HttpResponse<T>> sendAsync(
      ClientTransport transport,
      HttpRequest request,
      HttpResponse.BodyHandler<T> handler,
      HttpResponse.PushPromiseHandler<T> pushPromiseHandler) {
    return transport.sendAsync(request, handler, pushPromiseHandler);
  }
}
