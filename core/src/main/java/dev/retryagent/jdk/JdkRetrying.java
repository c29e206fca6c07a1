package dev.retryagent.jdk;

import dev.retryagent.engine.AsyncRetryLoop;
import dev.retryagent.engine.ResponseAccess;
import dev.retryagent.engine.RetryCall;
import dev.retryagent.engine.RetryEngine;
import dev.retryagent.engine.SyncRetryLoop;
import java.io.IOException;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpResponse.BodyHandler;
import java.net.http.HttpResponse.PushPromiseHandler;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;

/**
 * Runs {@code java.net.http} calls through a {@link RetryEngine}. Used by {@link
 * RetryingHttpClient} (a decorator, for code that wires retries by hand) and by the agent (which
 * intercepts the JDK's own client). Thread-safe; holds no per-call state.
 */
public final class JdkRetrying {
  private final RetryEngine engine;

  public JdkRetrying(RetryEngine engine) {
    this.engine = Objects.requireNonNull(engine, "engine");
  }

  public RetryEngine engine() {
    return engine;
  }

  /**
   * Sends {@code request} with retries; each attempt goes through {@code transport}. Behaves like
   * {@link java.net.http.HttpClient#send}: the caller's handler sees only the final response; an
   * interrupt while waiting to retry ends the call with the interrupt flag set.
   */
  public <T> HttpResponse<T> send(
      JdkTransport transport, HttpRequest request, BodyHandler<T> handler)
      throws IOException, InterruptedException {
    Objects.requireNonNull(request, "request");
    Objects.requireNonNull(handler, "handler");
    JdkRequest info = new JdkRequest(request);
    RetryCall call = engine.newCall(info);
    if (call.passThrough()) {
      return transport.send(request, handler);
    }
    info.prepare(call.policy().retry().replayBodyLimit(), call.policy().retry().attemptHeader());
    BodyHandler<T> deciding = new DecidingBodyHandler<>(handler, call);
    return SyncRetryLoop.execute(
        call,
        engine.sleeper(),
        (n, timeoutNanos) -> transport.send(info.forAttempt(n, timeoutNanos), deciding),
        access());
  }

  /**
   * Sends {@code request} asynchronously with retries. Never blocks a thread while waiting; the
   * future completes with the final response or failure; cancelling it cancels the attempt in
   * flight and any pending retry.
   */
  public <T> CompletableFuture<HttpResponse<T>> sendAsync(
      JdkTransport transport,
      HttpRequest request,
      BodyHandler<T> handler,
      PushPromiseHandler<T> pushPromiseHandler) {
    Objects.requireNonNull(request, "request");
    Objects.requireNonNull(handler, "handler");
    JdkRequest info = new JdkRequest(request);
    RetryCall call = engine.newCall(info);
    if (call.passThrough()) {
      return transport.sendAsync(request, handler, pushPromiseHandler);
    }
    info.prepare(call.policy().retry().replayBodyLimit(), call.policy().retry().attemptHeader());
    BodyHandler<T> deciding = new DecidingBodyHandler<>(handler, call);
    return AsyncRetryLoop.execute(
        engine,
        call,
        (n, timeoutNanos) ->
            transport.sendAsync(info.forAttempt(n, timeoutNanos), deciding, pushPromiseHandler),
        access());
  }

  @SuppressWarnings("unchecked")
  private static <T> ResponseAccess<HttpResponse<T>> access() {
    return (ResponseAccess<HttpResponse<T>>) (ResponseAccess<?>) Access.INSTANCE;
  }

  /** Reads statuses and headers; the body of a retried response was already dropped. */
  private enum Access implements ResponseAccess<HttpResponse<Object>> {
    INSTANCE;

    @Override
    public int status(HttpResponse<Object> response) {
      return response.statusCode();
    }

    @Override
    public String header(HttpResponse<Object> response, String name) {
      return response.headers().firstValue(name).orElse(null);
    }

    @Override
    public void discard(HttpResponse<Object> response) {
      Object body = response.body();
      if (body instanceof AutoCloseable) {
        try {
          ((AutoCloseable) body).close();
        } catch (Exception ignored) {
          // nothing more we can release
        }
      }
    }
  }
}
