package dev.retryagent.agent.jdk;

import java.io.IOException;
import java.net.Authenticator;
import java.net.CookieHandler;
import java.net.ProxySelector;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.atomic.AtomicInteger;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLParameters;

/**
 * Stands in for {@code HttpClientFacade} in hook tests: same {@code send}/{@code sendAsync}
 * signatures, bodies that count their runs. Loaded instrumented by {@link HookedClassLoader}.
 */
public class FakeHttpClient extends HttpClient {
  /**
   * State shared by the plain and the instrumented copy of the class (each copy has its own static
   * fields, so the state lives in this nested class, which only the parent loader defines).
   */
  public static final class Bodies {
    /** Runs of the original {@code send} body. */
    public static final AtomicInteger SEND_RUNS = new AtomicInteger();

    /** Runs of the original {@code sendAsync} bodies (either overload). */
    public static final AtomicInteger SEND_ASYNC_RUNS = new AtomicInteger();

    /** Runs of the original {@code shutdown}, {@code shutdownNow} and {@code close} bodies. */
    public static final AtomicInteger SHUTDOWN_RUNS = new AtomicInteger();

    /** What the original {@code send} body returns or throws. */
    public static volatile Object sendResult;

    private Bodies() {}
  }

  @Override
  @SuppressWarnings("unchecked")
  public <T> HttpResponse<T> send(HttpRequest request, HttpResponse.BodyHandler<T> handler)
      throws IOException, InterruptedException {
    Bodies.SEND_RUNS.incrementAndGet();
    // a loop at the very start gives the original code a stack map frame at its first instruction
    for (int i = 0; i < 2; i++) {
      if (Bodies.sendResult instanceof IOException) {
        throw (IOException) Bodies.sendResult;
      }
    }
    return (HttpResponse<T>) Bodies.sendResult;
  }

  @Override
  public <T> CompletableFuture<HttpResponse<T>> sendAsync(
      HttpRequest request, HttpResponse.BodyHandler<T> handler) {
    // HttpClientFacade hands this one to HttpClientImpl, not to its own 3-argument sendAsync
    Bodies.SEND_ASYNC_RUNS.incrementAndGet();
    return new CompletableFuture<>();
  }

  @Override
  public <T> CompletableFuture<HttpResponse<T>> sendAsync(
      HttpRequest request,
      HttpResponse.BodyHandler<T> handler,
      HttpResponse.PushPromiseHandler<T> pushPromiseHandler) {
    Bodies.SEND_ASYNC_RUNS.incrementAndGet();
    return new CompletableFuture<>();
  }

  @Override
  public Optional<CookieHandler> cookieHandler() {
    return Optional.empty();
  }

  @Override
  public Optional<Duration> connectTimeout() {
    return Optional.empty();
  }

  @Override
  public Redirect followRedirects() {
    return Redirect.NEVER;
  }

  @Override
  public Optional<ProxySelector> proxy() {
    return Optional.empty();
  }

  @Override
  public SSLContext sslContext() {
    return null;
  }

  @Override
  public SSLParameters sslParameters() {
    return null;
  }

  @Override
  public Optional<Authenticator> authenticator() {
    return Optional.empty();
  }

  @Override
  public Version version() {
    return Version.HTTP_1_1;
  }

  @Override
  public Optional<Executor> executor() {
    return Optional.empty();
  }

  // The facade's Java 21+ methods (hooked there on 21+); plain methods before 21.

  public void shutdown() {
    Bodies.SHUTDOWN_RUNS.incrementAndGet();
  }

  public void shutdownNow() {
    Bodies.SHUTDOWN_RUNS.incrementAndGet();
  }

  public void close() {
    Bodies.SHUTDOWN_RUNS.incrementAndGet();
  }
}
