package dev.retryagent.internal.jdk;

import java.io.IOException;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.concurrent.CompletableFuture;

/**
 * How one attempt is made: usually a real {@code HttpClient}'s own {@code send}/{@code sendAsync}.
 * The agent supplies one that calls the intercepted client without being intercepted again.
 */
public interface JdkTransport {
  <T> HttpResponse<T> send(HttpRequest request, HttpResponse.BodyHandler<T> handler)
      throws IOException, InterruptedException;

  <T> CompletableFuture<HttpResponse<T>> sendAsync(
      HttpRequest request,
      HttpResponse.BodyHandler<T> handler,
      HttpResponse.PushPromiseHandler<T> pushPromiseHandler);
}
