package dev.retryagent.internal.jdk;

import dev.retryagent.engine.RetryCall;
import java.io.IOException;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;

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

  /**
   * Whether the client follows redirects ({@code followRedirects()} other than {@code NEVER}): an
   * attempt may then send more than one request, and a connect failure no longer proves that the
   * first was never sent. True when unknown.
   */
  default boolean followsRedirects() {
    return true;
  }

  /**
   * A call through this transport starts: false when the application has shut the client down (Java
   * 21+), and the call is refused as the JDK refuses it; true, and the call is in progress until
   * {@link #callEnded}. See {@link ClientCalls}; the defaults are for a client that is never shut
   * down under the engine.
   */
  default boolean callStarts() {
    return true;
  }

  /** A call that {@link #callStarts started} has ended: its caller has, or is about to have, it. */
  default void callEnded() {}

  /** True once the application called the client's {@code shutdownNow()}: retry no more. */
  default boolean shutDownNow() {
    return false;
  }

  /**
   * A call through this transport starts to wait: true when the transport keeps {@code wait}, until
   * {@link #waitEnds}, to end it when the application calls the client's {@code shutdownNow()}.
   */
  default boolean waitStarts(RetryCall.Wait wait) {
    return false;
  }

  /** The wait {@link #waitStarts} kept is over. */
  default void waitEnds(RetryCall.Wait wait) {}

  /**
   * Where the JDK runs the application's {@code BodyHandler} and its subscriber on this client
   * ({@link ClientExecutor}), for a response given back after a late wait ({@link GivenBack}) to
   * run there too; null when out of reach (it then runs where the call ends). Asked only then.
   */
  default Executor executor() {
    return null;
  }
}
