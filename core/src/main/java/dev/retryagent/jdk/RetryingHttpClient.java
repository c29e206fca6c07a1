package dev.retryagent.jdk;

import dev.retryagent.engine.RetryCall;
import dev.retryagent.engine.RetryEngine;
import dev.retryagent.internal.jdk.ClientCalls;
import dev.retryagent.internal.jdk.ClientExecutor;
import dev.retryagent.internal.jdk.JdkRetrying;
import dev.retryagent.internal.jdk.JdkTransport;
import java.io.IOException;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.net.Authenticator;
import java.net.CookieHandler;
import java.net.ProxySelector;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpResponse.BodyHandler;
import java.net.http.HttpResponse.PushPromiseHandler;
import java.net.http.WebSocket;
import java.time.Duration;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLParameters;

/**
 * An {@link HttpClient} that retries through a {@link RetryEngine}, decorating a real client: the
 * library way to get what the agent gives, for code you can change.
 *
 * <pre>{@code
 * HttpClient client = RetryingHttpClient.wrap(HttpClient.newHttpClient(), engine);
 * }</pre>
 *
 * Every other method delegates, including (on Java 21+) {@code shutdown}, {@code close} and
 * friends, so closing the decorator closes the real client. As the JDK's client lets the requests
 * in progress finish, the decorator lets its calls in progress finish, retries included: the real
 * client's shutdown waits for the last of them, and {@code close()} waits for them; meanwhile new
 * calls are refused as the JDK refuses them ({@code ClientCalls}). Thread-safe, as the client it
 * wraps.
 */
public final class RetryingHttpClient extends HttpClient {
  private final HttpClient delegate;
  private final JdkRetrying retrying;
  private final JdkTransport transport;
  private final ClientCalls calls = new ClientCalls();

  /** Java 21 gave {@link HttpClient} its {@code shutdown} and {@code close}. */
  private static final boolean SHUTS_DOWN = Runtime.version().feature() >= 21;

  private RetryingHttpClient(HttpClient delegate, RetryEngine engine) {
    this.delegate = Objects.requireNonNull(delegate, "delegate");
    this.retrying = new JdkRetrying(engine);
    this.transport = new DirectTransport(this.delegate);
  }

  /** Decorates {@code client}; wrapping an already wrapped client returns it unchanged. */
  public static HttpClient wrap(HttpClient client, RetryEngine engine) {
    if (client instanceof RetryingHttpClient) {
      return client;
    }
    return new RetryingHttpClient(client, engine);
  }

  /** The real client. */
  public HttpClient delegate() {
    return delegate;
  }

  @Override
  public <T> HttpResponse<T> send(HttpRequest request, BodyHandler<T> handler)
      throws IOException, InterruptedException {
    return retrying.send(transport, request, handler);
  }

  @Override
  public <T> CompletableFuture<HttpResponse<T>> sendAsync(
      HttpRequest request, BodyHandler<T> handler) {
    return retrying.sendAsync(transport, request, handler, null);
  }

  @Override
  public <T> CompletableFuture<HttpResponse<T>> sendAsync(
      HttpRequest request, BodyHandler<T> handler, PushPromiseHandler<T> pushPromiseHandler) {
    return retrying.sendAsync(transport, request, handler, pushPromiseHandler);
  }

  @Override
  public Optional<CookieHandler> cookieHandler() {
    return delegate.cookieHandler();
  }

  @Override
  public Optional<Duration> connectTimeout() {
    return delegate.connectTimeout();
  }

  @Override
  public Redirect followRedirects() {
    return delegate.followRedirects();
  }

  @Override
  public Optional<ProxySelector> proxy() {
    return delegate.proxy();
  }

  @Override
  public SSLContext sslContext() {
    return delegate.sslContext();
  }

  @Override
  public SSLParameters sslParameters() {
    return delegate.sslParameters();
  }

  @Override
  public Optional<Authenticator> authenticator() {
    return delegate.authenticator();
  }

  @Override
  public Version version() {
    return delegate.version();
  }

  @Override
  public Optional<Executor> executor() {
    return delegate.executor();
  }

  /**
   * The real client's builder; on Java 21+ its {@code buildAsync} is refused as the JDK refuses it
   * once this decorator was shut down, even while the real client's shutdown waits for the calls in
   * progress (the real client, not yet shut down, would open the WebSocket).
   */
  @Override
  public WebSocket.Builder newWebSocketBuilder() {
    WebSocket.Builder real = delegate.newWebSocketBuilder();
    return SHUTS_DOWN ? new WebSocketBuilder(real) : real;
  }

  /**
   * The real client's WebSocket builder, refused after a shutdown ({@link #newWebSocketBuilder}).
   */
  private final class WebSocketBuilder implements WebSocket.Builder {
    private final WebSocket.Builder real;

    WebSocketBuilder(WebSocket.Builder real) {
      this.real = real;
    }

    @Override
    public WebSocket.Builder header(String name, String value) {
      real.header(name, value);
      return this;
    }

    @Override
    public WebSocket.Builder connectTimeout(Duration timeout) {
      real.connectTimeout(timeout);
      return this;
    }

    @Override
    public WebSocket.Builder subprotocols(String mostPreferred, String... lesserPreferred) {
      real.subprotocols(mostPreferred, lesserPreferred);
      return this;
    }

    @Override
    public CompletableFuture<WebSocket> buildAsync(URI uri, WebSocket.Listener listener) {
      if (calls.refuses()) {
        // What the JDK's own buildAsync does on a client shut down, after its null checks (a
        // URI it would refuse for its scheme is refused here for the shutdown).
        Objects.requireNonNull(uri, "uri");
        Objects.requireNonNull(listener, "listener");
        return JdkRetrying.refuseSendAsync();
      }
      return real.buildAsync(uri, listener);
    }
  }

  // Java 21 added these to HttpClient with defaults that do nothing useful for a decorator. We
  // compile for Java 11, so they cannot carry @Override, but on 21+ they do override.

  /**
   * Java 21+: shuts the real client down, once no call of this decorator is in progress (new calls
   * are refused from now on).
   */
  public void shutdown() {
    if (!SHUTS_DOWN || !calls.deferShutdown()) {
      invoke("shutdown");
    }
  }

  /**
   * Java 21+: shuts the real client down now; no call retries after it, nor waits for its retry.
   */
  public void shutdownNow() {
    if (SHUTS_DOWN) {
      calls.shutDownNowCalled();
    }
    invoke("shutdownNow");
  }

  /** Java 21+: waits for the calls in progress, as the JDK's does, then closes the real client. */
  public void close() {
    if (SHUTS_DOWN && calls.deferShutdown()) {
      calls.awaitCalls(this::shutdownNow);
    }
    invoke("close");
  }

  /** Java 21+: whether the real client terminated. */
  public boolean isTerminated() {
    Object r = invoke("isTerminated");
    return r instanceof Boolean && (Boolean) r;
  }

  /** Java 21+: waits for the real client to terminate. */
  public boolean awaitTermination(Duration duration) throws InterruptedException {
    try {
      MethodHandle h =
          MethodHandles.publicLookup()
              .findVirtual(
                  HttpClient.class,
                  "awaitTermination",
                  MethodType.methodType(boolean.class, Duration.class));
      return (boolean) h.invoke(delegate, duration);
    } catch (NoSuchMethodException | IllegalAccessException e) {
      return false;
    } catch (InterruptedException | RuntimeException | Error e) {
      throw e;
    } catch (Throwable t) {
      throw new IllegalStateException(t);
    }
  }

  private Object invoke(String method) {
    try {
      return HttpClient.class.getMethod(method).invoke(delegate);
    } catch (NoSuchMethodException e) {
      return null; // before Java 21 there is nothing to delegate
    } catch (ReflectiveOperationException e) {
      Throwable cause = e.getCause();
      if (cause instanceof RuntimeException) {
        throw (RuntimeException) cause;
      }
      throw new IllegalStateException(cause == null ? e : cause);
    }
  }

  @Override
  public String toString() {
    return "RetryingHttpClient[" + delegate + "]";
  }

  /**
   * Each attempt is the real client's own call; the calls in progress are this decorator's.
   *
   * <p>The real client is a field of this class as well as of the decorator: the retry agent, when
   * it runs in the same JVM, recognises this class in the application's copy of the library and
   * sends {@link #send} and {@link #sendAsync} straight to {@code delegate} past its own {@code
   * java.net.http} hook, so that a call is retried by the library alone, not by both (each of the
   * library's attempts would otherwise be retried by the agent too). Keep the field's name and
   * type.
   */
  private final class DirectTransport implements JdkTransport {
    private final HttpClient delegate;

    DirectTransport(HttpClient delegate) {
      this.delegate = delegate;
    }

    @Override
    public <T> HttpResponse<T> send(HttpRequest request, BodyHandler<T> handler)
        throws IOException, InterruptedException {
      return delegate.send(request, handler);
    }

    @Override
    public <T> CompletableFuture<HttpResponse<T>> sendAsync(
        HttpRequest request, BodyHandler<T> handler, PushPromiseHandler<T> pushPromiseHandler) {
      return delegate.sendAsync(request, handler, pushPromiseHandler);
    }

    @Override
    public boolean followsRedirects() {
      return delegate.followRedirects() != Redirect.NEVER;
    }

    @Override
    public Executor executor() {
      return ClientExecutor.of(delegate);
    }

    @Override
    public boolean callStarts() {
      return !SHUTS_DOWN || calls.enter();
    }

    @Override
    public void callEnded() {
      if (SHUTS_DOWN && calls.exit()) {
        invoke("shutdown"); // the shutdown the application asked for, deferred until now
      }
    }

    @Override
    public boolean shutDownNow() {
      return SHUTS_DOWN && calls.shutDownNow();
    }

    @Override
    public boolean waitStarts(RetryCall.Wait wait) {
      return SHUTS_DOWN && calls.waitStarts(wait);
    }

    @Override
    public void waitEnds(RetryCall.Wait wait) {
      if (SHUTS_DOWN) {
        calls.waitEnds(wait);
      }
    }
  }
}
