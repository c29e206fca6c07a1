package dev.retryagent.internal.jdk;

import dev.retryagent.engine.AsyncRetryLoop;
import dev.retryagent.engine.ResponseAccess;
import dev.retryagent.engine.RetryEngine;
import dev.retryagent.engine.SyncRetryLoop;
import dev.retryagent.jdk.RetryingHttpClient;
import java.io.IOException;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpResponse.BodyHandler;
import java.net.http.HttpResponse.PushPromiseHandler;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Executor;

/**
 * Runs {@code java.net.http} calls through a {@link RetryEngine}. Used by {@link
 * RetryingHttpClient} (a decorator, for code that wires retries by hand) and by the agent (which
 * intercepts the JDK's own client). Thread-safe; holds no per-call state.
 */
public final class JdkRetrying {
  /**
   * Where the JDK completes {@code sendAsync}'s future, so where the caller's dependent stages run:
   * {@code HttpClientImpl} completes it with {@code whenCompleteAsync} on this executor.
   */
  static final Executor JDK_ASYNC_POOL = new CompletableFuture<Void>().defaultExecutor();

  /**
   * Since JDK 16, cancelling any stage that depends on {@code sendAsync}'s future cancels the
   * exchange ({@code MinimalFuture}'s cancelable): the caller's future then does the same. And
   * {@code cancel(true)} cancels the exchange before the future, whose failure often completes the
   * future first (on 25, nearly always before the response's head): {@code get()} then throws an
   * {@code ExecutionException} around {@code CancellationException("Request cancelled")}, {@code
   * isCancelled()} is false; the caller's future ends as its attempt's did, to match.
   */
  private static final boolean CANCELLABLE_EXCHANGE = Runtime.version().feature() >= 16;

  private static final AsyncRetryLoop.Style JDK_FUTURE =
      AsyncRetryLoop.Style.of(CANCELLABLE_EXCHANGE, JDK_ASYNC_POOL, CANCELLABLE_EXCHANGE)
          .refusingObtrude();

  /** The class of the JDK's own requests: what it sends itself, e.g. a WebSocket handshake. */
  private static final String JDK_INTERNAL_REQUEST = "jdk.internal.net.http.HttpRequestImpl";

  /** The message of the JDK's refusal of a call to a client that was shut down (Java 21+). */
  private static final String CLOSED = "closed";

  /** The message of the JDK's abort of the exchanges in progress at {@code shutdownNow()}. */
  private static final String SHUTDOWN_NOW = "shutdownNow";

  /** The header the JDK's WebSocket opening handshake always carries among its headers. */
  private static final String WEBSOCKET_KEY = "Sec-WebSocket-Key";

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
   * interrupt while waiting to retry ends the call with an {@link InterruptedException}, the flag
   * cleared, as {@code send} leaves it. A request the JDK sends itself (a WebSocket opening
   * handshake) passes through untouched. A client the application shut down (Java 21+) refuses the
   * call as the JDK does; one shut down during the call lets it finish, retries included ({@link
   * ClientCalls}, through {@code transport}). A response released for a retry whose wait ends past
   * the deadline reaches the handler then, from what was kept of it ({@link GivenBack}).
   */
  public <T> HttpResponse<T> send(
      JdkTransport transport, HttpRequest request, BodyHandler<T> handler)
      throws IOException, InterruptedException {
    // As the JDK's send: an interrupted thread first (the flag cleared), then the arguments, with
    // no message (HttpClientImpl). With both given, the interrupted send is left to go on as it
    // did: a call the engine tells (its event, its metrics), refused by the JDK's send, which
    // throws the same InterruptedException.
    if ((request == null || handler == null) && Thread.interrupted()) {
      throw new InterruptedException();
    }
    Objects.requireNonNull(request);
    Objects.requireNonNull(handler);
    if (!transport.callStarts()) {
      return refuseSend();
    }
    JdkRequest<T> call = begin(transport, request);
    if (call == null) {
      try {
        return transport.send(request, handler);
      } finally {
        transport.callEnded();
      }
    }
    // From here the call's end (JdkRequest.loopEnded) tells the transport.
    HttpResponse<T> response;
    try {
      response =
          SyncRetryLoop.execute(
              call, engine.sleeper(), call.sending(transport, handler, null), access());
    } catch (InterruptedException e) {
      throw asSendThrowsIt(e);
    }
    if (response instanceof GivenBack) {
      // Released for a retry whose wait ended past the deadline: the caller's handler gets it now.
      return ((GivenBack<T>) response).deliver();
    }
    return response;
  }

  /**
   * {@code send} on a client the application shut down (Java 21+): the JDK's own refusal, as its
   * {@code send()} reports it (an interrupt first, as it looks at that first).
   */
  public static <T> HttpResponse<T> refuseSend() throws IOException, InterruptedException {
    if (Thread.interrupted()) {
      throw new InterruptedException();
    }
    throw new IOException(CLOSED, new IOException(CLOSED));
  }

  /**
   * The failure of a call whose retry the application's {@code shutdownNow()} stopped (its wait
   * ended, or the retry not yet sent), as {@code send} fails a call in progress at {@code
   * shutdownNow()} (JDK 21-25: the selector manager aborts its exchanges with {@code
   * IOException("shutdownNow")}, which {@code send} throws as a new IOException with that message
   * and that cause). Not the refusal of a new call ({@code "closed"}): the application called
   * before the shutdown, and without the agent its call had either ended already (with the outcome
   * retried, which the agent released for the retry and may no longer hold) or was in progress. Of
   * those the agent can give only the second consistently; "closed" is neither.
   */
  static IOException abortedByShutdownNow() {
    return new IOException(SHUTDOWN_NOW, abortedByShutdownNowAsync());
  }

  /** {@link #abortedByShutdownNow}, as {@code sendAsync}'s future fails with it (unwrapped). */
  static IOException abortedByShutdownNowAsync() {
    return new IOException(SHUTDOWN_NOW);
  }

  /**
   * {@code sendAsync} on a client the application shut down: the JDK's own refusal, a future that
   * refuses {@code obtrudeValue} and {@code obtrudeException}, as its stages do ({@code
   * MinimalFuture.failedFuture}).
   */
  public static <R> CompletableFuture<R> refuseSendAsync() {
    Refused<R> refused = new Refused<>();
    refused.completeExceptionally(new IOException(CLOSED));
    return refused;
  }

  /**
   * A future as the JDK's {@code MinimalFuture} to its caller: {@code obtrudeValue} and {@code
   * obtrudeException} throw, on it and on the stages that depend on it.
   */
  private static final class Refused<R> extends CompletableFuture<R> {
    @Override
    public void obtrudeValue(R value) {
      throw new UnsupportedOperationException();
    }

    @Override
    public void obtrudeException(Throwable ex) {
      throw new UnsupportedOperationException();
    }

    @Override
    public <U> CompletableFuture<U> newIncompleteFuture() {
      return new Refused<>();
    }
  }

  /**
   * The engine's call for {@code request}, prepared; or null for a request that passes through
   * untouched: one the JDK sends itself (a WebSocket opening handshake), or one the engine leaves
   * alone. A call {@code transport} counts as started ends there if this fails.
   */
  private <T> JdkRequest<T> begin(JdkTransport transport, HttpRequest request) {
    try {
      if (isJdkInternal(request)) {
        return null;
      }
      // The engine's call is also the request view, the attempt and the deciding body handler.
      JdkRequest<T> call = engine.begin(new JdkRequest<>(request));
      if (call.passThrough()) {
        return null;
      }
      call.prepare();
      return call;
    } catch (RuntimeException | Error e) {
      transport.callEnded();
      throw e;
    }
  }

  /**
   * An interrupt as {@code HttpClient.send} reports it: an {@link InterruptedException} without
   * message (the one the wait threw says "sleep interrupted").
   */
  private static InterruptedException asSendThrowsIt(InterruptedException e) {
    if (e.getMessage() == null) {
      return e; // the JDK's own, from an attempt
    }
    InterruptedException jdk = new InterruptedException();
    jdk.setStackTrace(e.getStackTrace());
    return jdk;
  }

  /**
   * Sends {@code request} asynchronously with retries. Never blocks a thread while waiting; the
   * future completes with the final response or failure; cancelling it cancels the attempt in
   * flight and any pending retry. Like the JDK's own future, it fails with a {@code
   * CompletionException} around the cause, delivers on the JDK's executor, and (JDK 16+) is
   * cancelled by cancelling any stage that depends on it. The JDK's WebSocket opening handshake (an
   * internal {@code sendAsync}) passes through untouched. Shutdown: as {@link #send}.
   */
  public <T> CompletableFuture<HttpResponse<T>> sendAsync(
      JdkTransport transport,
      HttpRequest request,
      BodyHandler<T> handler,
      PushPromiseHandler<T> pushPromiseHandler) {
    Objects.requireNonNull(request); // no message, as the JDK's
    Objects.requireNonNull(handler);
    if (!transport.callStarts()) {
      return refuseSendAsync();
    }
    JdkRequest<T> call = begin(transport, request);
    if (call == null) {
      try {
        return transport.sendAsync(request, handler, pushPromiseHandler);
      } finally {
        transport.callEnded(); // the JDK counts the request itself from here
      }
    }
    // From here the call's end (JdkRequest.loopEnded) tells the transport.
    return AsyncRetryLoop.execute(
        engine, call, call.sending(transport, handler, pushPromiseHandler), access(), JDK_FUTURE);
  }

  /**
   * True for the client calling itself: its WebSocket opening handshake, whose retry the JDK cannot
   * carry (it fails with "RawChannel is only supported for WebSocket creation"). That request is of
   * the JDK's own internal class and carries the handshake's key. The class alone does not tell:
   * {@code response.request()} is of that class too, and an application may send it again.
   */
  static boolean isJdkInternal(HttpRequest request) {
    return JDK_INTERNAL_REQUEST.equals(request.getClass().getName())
        && JdkRequest.firstValue(request.headers(), WEBSOCKET_KEY) != null;
  }

  @SuppressWarnings("unchecked")
  static <T> ResponseAccess<HttpResponse<T>> access() {
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
      return JdkRequest.lines(response.headers(), name);
    }

    @Override
    public void discard(HttpResponse<Object> response) {
      JdkRetrying.discard(response);
    }

    @Override
    public boolean whole(HttpResponse<Object> response) {
      // Decided on its head, a retried response's body was dropped: it cannot go to the caller. A
      // thread interrupted during an attempt rarely gets here: send() itself throws at once then.
      return false;
    }

    /**
     * The response with the body its {@link DiscardedBody} kept (at most 8 KiB, read whole), for
     * {@link #send} to give to the caller's handler should the wait end past the deadline; null for
     * a longer body. Nothing is read or allocated here but the marker.
     */
    @Override
    @SuppressWarnings("unchecked")
    public HttpResponse<Object> copyToGiveBack(HttpResponse<Object> response) {
      Object body = response.body();
      return body instanceof DiscardedBody
          ? ((DiscardedBody<Object>) body).giveBack(response)
          : null;
    }

    /** {@code sendAsync}'s give-back: the caller's handler applied to the kept body. */
    @Override
    public CompletionStage<HttpResponse<Object>> giveBack(HttpResponse<Object> copy) {
      return ((GivenBack<Object>) copy).deliverAsync();
    }

    /** Runs the give-back once the caller's future holds it: a cancel from then on reaches it. */
    @Override
    public void startGiveBack(CompletionStage<HttpResponse<Object>> given) {
      GivenBack.start(given);
    }
  }

  /** Releases a response that will not reach the caller: closes a body that can be closed. */
  static void discard(HttpResponse<?> response) {
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
