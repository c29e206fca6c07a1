package dev.retryagent.jdk;

import java.io.IOException;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;

/** An application's own client around the JDK's {@code real}: a test's subclass changes a part. */
abstract class DelegatingHttpClient extends HttpClient {
  final HttpClient real;

  DelegatingHttpClient(HttpClient real) {
    this.real = real;
  }

  @Override
  public java.util.Optional<java.net.CookieHandler> cookieHandler() {
    return real.cookieHandler();
  }

  @Override
  public java.util.Optional<Duration> connectTimeout() {
    return real.connectTimeout();
  }

  @Override
  public Redirect followRedirects() {
    return real.followRedirects();
  }

  @Override
  public java.util.Optional<java.net.ProxySelector> proxy() {
    return real.proxy();
  }

  @Override
  public javax.net.ssl.SSLContext sslContext() {
    return real.sslContext();
  }

  @Override
  public javax.net.ssl.SSLParameters sslParameters() {
    return real.sslParameters();
  }

  @Override
  public java.util.Optional<java.net.Authenticator> authenticator() {
    return real.authenticator();
  }

  @Override
  public Version version() {
    return real.version();
  }

  @Override
  public java.util.Optional<java.util.concurrent.Executor> executor() {
    return real.executor();
  }

  @Override
  public <T> HttpResponse<T> send(HttpRequest r, HttpResponse.BodyHandler<T> h)
      throws IOException, InterruptedException {
    return real.send(r, h);
  }

  @Override
  public <T> java.util.concurrent.CompletableFuture<HttpResponse<T>> sendAsync(
      HttpRequest r, HttpResponse.BodyHandler<T> h) {
    return real.sendAsync(r, h);
  }

  @Override
  public <T> java.util.concurrent.CompletableFuture<HttpResponse<T>> sendAsync(
      HttpRequest r, HttpResponse.BodyHandler<T> h, HttpResponse.PushPromiseHandler<T> p) {
    return real.sendAsync(r, h, p);
  }
}
