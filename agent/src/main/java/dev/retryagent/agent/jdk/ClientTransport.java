package dev.retryagent.agent.jdk;

import dev.retryagent.engine.RetryCall;
import dev.retryagent.internal.jdk.ClientCalls;
import dev.retryagent.internal.jdk.ClientExecutor;
import dev.retryagent.internal.jdk.JdkTransport;
import java.io.IOException;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;

/**
 * One attempt of an intercepted call, made on the very client the application called, with a
 * pass-through token so that the hook lets this attempt run the original JDK method. The method
 * signatures are those of the engine's {@code dev.retryagent.internal.jdk.JdkTransport}.
 *
 * <p>The client is the facade the application holds (the hook passes {@code this.facade()}):
 * holding it keeps the JDK from shutting the client down while an asynchronous retry waits, even
 * when the application dropped its reference right after {@code sendAsync}.
 *
 * <p>On Java 21+ it also counts the call among the client's calls in progress ({@link
 * ClientCalls}), so that the application's shutdown of the client waits for it.
 */
final class ClientTransport implements JdkTransport {
  private final HttpClient client;
  private final ClientCalls calls; // null before Java 21

  ClientTransport(HttpClient client, ClientCalls calls) {
    this.client = client;
    this.calls = calls;
  }

  /** The intercepted client. */
  HttpClient client() {
    return client;
  }

  @Override
  public <T> HttpResponse<T> send(HttpRequest request, HttpResponse.BodyHandler<T> handler)
      throws IOException, InterruptedException {
    JdkHttpEntry.PASS_THROUGH.next();
    try {
      return client.send(request, handler);
    } finally {
      JdkHttpEntry.PASS_THROUGH.clear();
    }
  }

  @Override
  public <T> CompletableFuture<HttpResponse<T>> sendAsync(
      HttpRequest request,
      HttpResponse.BodyHandler<T> handler,
      HttpResponse.PushPromiseHandler<T> pushPromiseHandler) {
    JdkHttpEntry.PASS_THROUGH.next();
    try {
      return client.sendAsync(request, handler, pushPromiseHandler);
    } finally {
      JdkHttpEntry.PASS_THROUGH.clear();
    }
  }

  /**
   * The client's executor, the JDK's own pool included: the package it is in opened to the agent
   * first ({@link JdkInternals}). Asked only when a response is given back after a late wait.
   */
  @Override
  public Executor executor() {
    if (client.executor().isEmpty()) {
      JdkInternals.open();
    }
    return ClientExecutor.of(client);
  }

  @Override
  public boolean followsRedirects() {
    return client.followRedirects() != HttpClient.Redirect.NEVER;
  }

  @Override
  public boolean callStarts() {
    return calls == null || calls.enter();
  }

  @Override
  public void callEnded() {
    if (calls != null && calls.exit()) {
      FacadeCalls.shutdown(client); // the shutdown the application asked for, deferred until now
    }
  }

  @Override
  public boolean shutDownNow() {
    return calls != null && calls.shutDownNow();
  }

  @Override
  public boolean waitStarts(RetryCall.Wait wait) {
    return calls != null && calls.waitStarts(wait);
  }

  @Override
  public void waitEnds(RetryCall.Wait wait) {
    if (calls != null) {
      calls.waitEnds(wait);
    }
  }
}
