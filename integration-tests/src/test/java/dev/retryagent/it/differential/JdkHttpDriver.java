package dev.retryagent.it.differential;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.WebSocket;
import java.time.Duration;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;

/**
 * {@code java.net.http.HttpClient}: {@code send} (blocking; cancelled by interrupting the caller,
 * which is how the JDK cancels it since 16) and {@code sendAsync} (the result observed in a stage
 * {@code whenComplete} on the returned future; WebSocket handshakes go here too). HTTP/1.1, a new
 * client per call.
 */
public final class JdkHttpDriver implements Driver {
  @Override
  public List<Variant> variants() {
    return List.of(new Variant("java.net.http", List.of()));
  }

  @Override
  public List<String> apis() {
    return List.of("send", "sendAsync");
  }

  @Override
  public Set<Feature> features(String api) {
    Set<Feature> f =
        EnumSet.of(
            Feature.REQUEST_TIMEOUT, Feature.CONNECT_TIMEOUT, Feature.PATCH, Feature.FAULT_MATRIX);
    if (api.equals("send")) {
      f.add(Feature.INTERRUPT);
    } else {
      f.addAll(EnumSet.of(Feature.CANCEL, Feature.CANCEL_DEPENDENT, Feature.WEBSOCKET));
    }
    return f;
  }

  /**
   * {@code sendAsync}'s future, cancelled, completes either at once inside {@code cancel} (a bare
   * CancellationException) or, when the JDK's own cancel of the exchange wins, on its executor
   * (wrapped in a CompletionException, "Request cancelled").
   */
  @Override
  public Map<String, String> racyOutcomes(String api) {
    return api.equals("sendAsync")
        ? Map.of(
            "exception java\\.util\\.concurrent\\.(CompletionException: "
                + "java\\.util\\.concurrent\\.)?CancellationException.*",
            "exception java.util.concurrent.CancellationException (either way)")
        : Map.of();
  }

  @Override
  public Exchange prepare(String api, Action a, URI server) {
    HttpClient.Builder b = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1);
    if (a.connectTimeout() > 0) {
      b.connectTimeout(Duration.ofMillis(a.connectTimeout()));
    }
    if (a.followsRedirects()) {
      b.followRedirects(HttpClient.Redirect.NORMAL);
    }
    HttpClient client = b.build();
    if (a.isWebSocket()) {
      return webSocket(client, a, server);
    }
    HttpRequest.Builder r = HttpRequest.newBuilder(server.resolve(a.path()));
    HttpRequest.BodyPublisher body =
        a.bodyBytes() > 0
            ? HttpRequest.BodyPublishers.ofByteArray(new byte[a.bodyBytes()])
            : a.body().isEmpty()
                ? HttpRequest.BodyPublishers.noBody()
                : HttpRequest.BodyPublishers.ofString(a.body());
    r.method(a.method(), body);
    for (String h : a.headers()) {
      String[] nv = h.split(": ", 2);
      r.header(nv[0], nv[1]);
    }
    if (a.requestTimeout() > 0) {
      r.timeout(Duration.ofMillis(a.requestTimeout()));
    }
    HttpRequest request = r.build();
    if (api.equals("send")) {
      return new Exchange() {
        @Override
        public void start(Delivery delivery) throws Exception {
          delivery.status(client.send(request, HttpResponse.BodyHandlers.ofString()).statusCode());
        }

        @Override
        public void cancel(Action.Cancel how) {
          throw new UnsupportedOperationException("send is cancelled by an interrupt");
        }

        @Override
        public String followUp() throws Exception {
          return JdkHttpDriver.followUp(client, a, server);
        }
      };
    }
    return new Async<HttpResponse<String>>() {
      @Override
      CompletableFuture<HttpResponse<String>> call() {
        return client.sendAsync(request, HttpResponse.BodyHandlers.ofString());
      }

      @Override
      void deliver(HttpResponse<String> response, Delivery delivery) {
        delivery.status(response.statusCode());
      }

      @Override
      public String followUp() throws Exception {
        return JdkHttpDriver.followUp(client, a, server);
      }
    };
  }

  /**
   * A keep-alive {@code GET} of the follow-up path on the same client (the JDK client has no pool
   * size to bound: it must simply answer), bounded by a request timeout.
   */
  static String followUp(HttpClient client, Action a, URI server) throws Exception {
    HttpRequest.Builder r =
        HttpRequest.newBuilder(
                server.resolve(dev.retryagent.it.harness.CountingServer.FOLLOW_UP_PATH))
            .timeout(Duration.ofSeconds(2));
    for (String h : a.headers()) {
      String[] nv = h.split(": ", 2);
      r.header(nv[0], nv[1]);
    }
    return "status " + client.send(r.build(), HttpResponse.BodyHandlers.ofString()).statusCode();
  }

  private static Exchange webSocket(HttpClient client, Action a, URI server) {
    URI ws = URI.create("ws://" + server.getAuthority() + a.path());
    return new Async<WebSocket>() {
      @Override
      CompletableFuture<WebSocket> call() {
        WebSocket.Builder b = client.newWebSocketBuilder();
        for (String h : a.headers()) {
          String[] nv = h.split(": ", 2);
          b.header(nv[0], nv[1]);
        }
        if (a.requestTimeout() > 0) {
          b.connectTimeout(Duration.ofMillis(a.requestTimeout()));
        }
        return b.buildAsync(ws, new WebSocket.Listener() {});
      }

      @Override
      void deliver(WebSocket socket, Delivery delivery) {
        delivery.succeeded("websocket open");
        socket.abort();
      }
    };
  }

  /** A call through a future; the application observes it in {@code whenComplete}. */
  private abstract static class Async<T> implements Exchange {
    private volatile CompletableFuture<T> future;

    abstract CompletableFuture<T> call();

    abstract void deliver(T value, Delivery delivery);

    @Override
    public void start(Delivery delivery) {
      future = call();
      future.whenComplete(
          (value, failure) -> {
            if (failure != null) {
              delivery.failed(failure);
            } else {
              deliver(value, delivery);
            }
          });
    }

    @Override
    public void cancel(Action.Cancel how) {
      if (how == Action.Cancel.DEPENDENT) {
        future.thenApply(value -> value).cancel(true);
      } else {
        future.cancel(true);
      }
    }
  }
}
