package dev.retryagent.apache5;

import dev.retryagent.engine.RetryEngine;
import java.io.Closeable;
import java.io.IOException;
import java.lang.reflect.Method;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.hc.client5.http.async.AsyncExecCallback;
import org.apache.hc.client5.http.async.AsyncExecChain;
import org.apache.hc.client5.http.async.AsyncExecChainHandler;
import org.apache.hc.client5.http.impl.ChainElement;
import org.apache.hc.client5.http.impl.DefaultHttpRequestRetryStrategy;
import org.apache.hc.client5.http.impl.async.H2AsyncClientBuilder;
import org.apache.hc.client5.http.impl.async.HttpAsyncClientBuilder;
import org.apache.hc.core5.http.HttpException;
import org.apache.hc.core5.http.HttpRequest;
import org.apache.hc.core5.http.nio.AsyncEntityProducer;

/**
 * Runs each request of an Apache HttpClient 5.x async client ({@code CloseableHttpAsyncClient}
 * built by {@code HttpAsyncClientBuilder}) through a {@link RetryEngine}: an {@code
 * AsyncExecChainHandler} first in the client's execution chain, so that each attempt runs the whole
 * chain below it (redirects, HttpClient's own retry, protocol, connection). By hand:
 *
 * <pre>{@code
 * CloseableHttpAsyncClient client =
 *     AsyncRetryExecHandler.addTo(HttpAsyncClients.custom(), engine).build();
 * }</pre>
 *
 * <p>The HTTP/2-only client of {@code H2AsyncClientBuilder} ({@code
 * HttpAsyncClients.customHttp2()}) has the same chain and takes the same handler ({@link
 * #addTo(H2AsyncClientBuilder, RetryEngine)}). {@code HttpAsyncClients.createMinimal()} has no
 * execution chain: it cannot take one.
 *
 * <p>No thread is held while a retry waits: the wait runs on the engine's scheduler ({@code
 * AsyncRetryLoop}), and the retry is then handed to the client's own scheduler ({@code
 * scope.scheduler}, where HttpClient's own resends run), which runs the chain from its head again:
 * this handler knows the call by its scope's execution counter (one per {@code execute}, shared by
 * its redirects' scopes) and lets it through. HttpClient 5.1 and 5.2 send their own resends the
 * same way, so they pass through too.
 *
 * <p>The response the call ends with goes to the application's consumer and callback on the
 * client's I/O thread, as without this handler. A response it retries has its body read and thrown
 * away (at most 64 KiB; more closes the connection) and its connection goes back to the pool before
 * the next attempt: the connection is not held through the wait. A request whose {@code
 * AsyncEntityProducer} is not repeatable is never sent twice. The application's {@code
 * Future.cancel} ends a wait for a retry at once, and nothing is sent after it; so does the
 * client's close, the call then ending with the attempt before the wait, and an attempt the close
 * leaves unanswered is answered ({@link AsyncCall#clientClosed}). HttpClient's own retry strategy
 * is governed as for the classic client ({@link GovernedRetryStrategy}), and what it resends counts
 * as attempts ({@link AsyncResendCounter}).
 *
 * <p>A wait that ends past the deadline gives the application's consumer the response released for
 * the retry (its head and a body of at most 8 KiB, kept as it was read), as without this handler; a
 * longer body cannot be given back, and the call fails with an {@code IOException} that says so.
 * Limits: a call that ends after a wait without another attempt (that give-back, the breaker open,
 * no rate-limit permit) is heard on the thread the wait ended on, one of the engine's scheduler
 * threads, not the client's: HttpClient has no public way to run a task on its I/O dispatch
 * threads, and a hand-over through its execution chain would show interceptors before this one an
 * execution that is not a request; an attempt under the policy's bound ({@code perAttemptTimeout},
 * and for a retry the time left before the deadline) runs under a shortened copy of the call's
 * {@code RequestConfig} ({@link AttemptTimeouts}), which the application's code inside the attempt
 * (an interceptor, its consumer's {@code informationResponse}) reads instead of its own.
 * Thread-safe; one instance serves one or many clients.
 */
public final class AsyncRetryExecHandler implements AsyncExecChainHandler {
  /** The name of this handler in the execution chain. */
  public static final String NAME = RetryExecHandler.NAME;

  /** The name of the resend counter, right after HttpClient's {@code RETRY} element. */
  public static final String COUNTER_NAME = RetryExecHandler.COUNTER_NAME;

  /**
   * The exchange of a call that HttpClient's retry element is judging on this thread (the resend
   * counter's callback: the call, and the request the element would resend), for {@link
   * GovernedRetryStrategy}; null outside such a callback.
   */
  static final ThreadLocal<AsyncResendCounter.Counted> CURRENT = new ThreadLocal<>();

  /**
   * The calls in progress, by their scope's execution counter: an object of its own per {@code
   * execute}, which every scope of the call shares (its redirects' too), compared by identity. A
   * scheduled execution (our retry, HttpClient 5.1/5.2's resend) runs the chain from its head again
   * with it, and is let through ({@link #rerun}). One map for every handler of this copy of the
   * library, as {@link #CURRENT} is: a call is retried by the handler that took it first, whichever
   * chain it runs in.
   */
  static final ConcurrentHashMap<AtomicInteger, AsyncCall> RUNNING = new ConcurrentHashMap<>();

  private final RetryEngine engine;

  public AsyncRetryExecHandler(RetryEngine engine) {
    this.engine = Objects.requireNonNull(engine, "engine");
  }

  /**
   * Adds a new handler on {@code engine} to {@code builder}, as {@link #install} does, and governs
   * the retry strategy the builder has now (the application's own when it set one before, else
   * HttpClient's default). A handler of ours the builder holds already (the agent's) steps aside.
   */
  public static HttpAsyncClientBuilder addTo(HttpAsyncClientBuilder builder, RetryEngine engine) {
    // As RetryExecHandler.addTo: the agent's handler (another copy of the library) or an earlier
    // addTo's is replaced in place when the client is built, so that calls are not retried twice.
    builder.replaceExecInterceptor(NAME, SteppedAside.INSTANCE);
    builder.replaceExecInterceptor(COUNTER_NAME, SteppedAside.INSTANCE);
    add(builder, new AsyncRetryExecHandler(engine));
    GovernedRetryStrategy.govern(builder);
    return builder;
  }

  /**
   * For a builder just made (the agent's hook): puts {@code retries} (an {@link
   * AsyncRetryExecHandler}, or what hands each call to one) first in the chain of every client
   * {@code builder} builds, its resend counter after HttpClient's own retry element, and
   * HttpClient's default retry strategy, governed. A strategy the application sets afterwards
   * replaces the governed one; its resends are still counted.
   */
  public static HttpAsyncClientBuilder install(
      HttpAsyncClientBuilder builder, AsyncExecChainHandler retries) {
    add(builder, retries);
    builder.setRetryStrategy(
        GovernedRetryStrategy.around(DefaultHttpRequestRetryStrategy.INSTANCE));
    return builder;
  }

  private static void add(HttpAsyncClientBuilder builder, AsyncExecChainHandler retries) {
    ClientClose close = ClientClose.addTo(builder);
    builder.addExecInterceptorFirst(NAME, close == null ? retries : new Owned(retries, close));
    builder.addExecInterceptorAfter(
        ChainElement.RETRY.name(), COUNTER_NAME, AsyncResendCounter.INSTANCE);
  }

  /**
   * {@link #addTo(HttpAsyncClientBuilder, RetryEngine)} for the HTTP/2-only client's builder
   * ({@code HttpAsyncClients.customHttp2()}), whose chain has the same elements.
   */
  public static H2AsyncClientBuilder addTo(H2AsyncClientBuilder builder, RetryEngine engine) {
    builder.replaceExecInterceptor(NAME, SteppedAside.INSTANCE);
    builder.replaceExecInterceptor(COUNTER_NAME, SteppedAside.INSTANCE);
    add(builder, new AsyncRetryExecHandler(engine));
    GovernedRetryStrategy.govern(builder);
    return builder;
  }

  /** {@link #install(HttpAsyncClientBuilder, AsyncExecChainHandler)} for the HTTP/2-only client. */
  public static H2AsyncClientBuilder install(
      H2AsyncClientBuilder builder, AsyncExecChainHandler retries) {
    add(builder, retries);
    builder.setRetryStrategy(
        GovernedRetryStrategy.around(DefaultHttpRequestRetryStrategy.INSTANCE));
    return builder;
  }

  // The two builders share no type: the same three calls on each.
  private static void add(H2AsyncClientBuilder builder, AsyncExecChainHandler retries) {
    ClientClose close = ClientClose.addTo(builder);
    builder.addExecInterceptorFirst(NAME, close == null ? retries : new Owned(retries, close));
    builder.addExecInterceptorAfter(
        ChainElement.RETRY.name(), COUNTER_NAME, AsyncResendCounter.INSTANCE);
  }

  /**
   * The close of the clients a builder builds, told to their calls in progress ({@link
   * AsyncCall#clientClosed}): HttpClient closes what {@code addCloseable} gave it in {@code close},
   * after its I/O reactor's close and before its pool's and its scheduler's (5.1 to 5.6). One per
   * builder: the clients it builds share it, so the close of one ends the waits of its siblings'
   * calls too (they then get the earlier attempt's outcome, as without the agent).
   */
  static final class ClientClose implements Closeable {
    /** {@code HttpAsyncClientBuilder.addCloseable}, protected in every 5.x; null: unreachable. */
    private static final Method ADD_CLOSEABLE = addCloseable(HttpAsyncClientBuilder.class);

    /** The HTTP/2-only builder's, the same method on an unrelated class. */
    private static final Method ADD_CLOSEABLE_H2 = addCloseable(H2AsyncClientBuilder.class);

    private static Method addCloseable(Class<?> builder) {
      try {
        Method m = builder.getDeclaredMethod("addCloseable", Closeable.class);
        m.setAccessible(true);
        return m;
      } catch (ReflectiveOperationException | RuntimeException e) {
        return null; // a module that does not open it: closes are heard as before, when a wait ends
      }
    }

    /** A new one on {@code builder}, or null when the builder takes none. */
    static ClientClose addTo(HttpAsyncClientBuilder builder) {
      return addTo(ADD_CLOSEABLE, builder);
    }

    /** A new one on the HTTP/2-only {@code builder}, or null when it takes none. */
    static ClientClose addTo(H2AsyncClientBuilder builder) {
      return addTo(ADD_CLOSEABLE_H2, builder);
    }

    private static ClientClose addTo(Method addCloseable, Object builder) {
      if (addCloseable == null) {
        return null;
      }
      ClientClose close = new ClientClose();
      try {
        addCloseable.invoke(builder, close);
        return close;
      } catch (ReflectiveOperationException | RuntimeException e) {
        return null;
      }
    }

    @Override
    public void close() {
      for (AsyncCall call : RUNNING.values()) {
        call.clientClosed(this);
      }
    }
  }

  /**
   * The call the thread is making now in a chain of {@link ClientClose}'s builder: hands it to the
   * {@link AsyncCall} made under it. Set, never removed, so that no entry is made per call.
   */
  static final ThreadLocal<ClientClose> OWNER = new ThreadLocal<>();

  /** The first element of a builder's chain that hears its clients' close. */
  private static final class Owned implements AsyncExecChainHandler {
    private final AsyncExecChainHandler retries;
    private final ClientClose close;

    Owned(AsyncExecChainHandler retries, ClientClose close) {
      this.retries = retries;
      this.close = close;
    }

    @Override
    public void execute(
        HttpRequest request,
        AsyncEntityProducer producer,
        AsyncExecChain.Scope scope,
        AsyncExecChain chain,
        AsyncExecCallback callback)
        throws HttpException, IOException {
      ClientClose outer = OWNER.get(); // a chain run from inside another's callback
      OWNER.set(close);
      try {
        retries.execute(request, producer, scope, chain, callback);
      } finally {
        OWNER.set(outer);
      }
    }

    @Override
    public String toString() {
      return retries.toString();
    }
  }

  @Override
  public void execute(
      HttpRequest request,
      AsyncEntityProducer producer,
      AsyncExecChain.Scope scope,
      AsyncExecChain chain,
      AsyncExecCallback callback)
      throws HttpException, IOException {
    if (scope.execCount != null && rerun(scope.execCount)) {
      chain.proceed(request, producer, scope, callback);
      return;
    }
    AsyncCall call = engine.begin(new AsyncCall(engine, request, producer, scope, chain, callback));
    if (call.passThrough() || scope.execCount == null) {
      chain.proceed(request, producer, scope, callback);
      return;
    }
    call.start();
  }

  /**
   * Whether the execution counted by {@code execCount} is run again from the chain's head, not
   * begun: an attempt of ours handed to the client's scheduler, or (5.1, 5.2, which schedule from
   * the head) HttpClient's own resend, whether inside a call of ours or after it (the response's
   * head went up to the application, then its body failed: the call is over, and was taken for a
   * new one that retried the resend's failure up to {@code maxAttempts}, where HttpClient alone
   * resends once). Each {@code execute} starts its counter at 1, and every scheduled execution,
   * HttpClient's and ours ({@link AsyncCall}), counts itself there before it runs (5.1 to 5.6):
   * above 1, the execution is one of those.
   */
  private static boolean rerun(AtomicInteger execCount) {
    return execCount.get() > 1 || RUNNING.containsKey(execCount);
  }

  /**
   * What an earlier handler of ours becomes in the chain of a builder {@link #addTo} was given
   * after it: the request goes on down the chain untouched.
   */
  private static final class SteppedAside implements AsyncExecChainHandler {
    static final SteppedAside INSTANCE = new SteppedAside();

    @Override
    public void execute(
        HttpRequest request,
        AsyncEntityProducer producer,
        AsyncExecChain.Scope scope,
        AsyncExecChain chain,
        AsyncExecCallback callback)
        throws HttpException, IOException {
      chain.proceed(request, producer, scope, callback);
    }

    @Override
    public String toString() {
      return "retry-agent (stepped aside)";
    }
  }
}
