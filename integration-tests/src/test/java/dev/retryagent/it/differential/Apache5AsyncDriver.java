package dev.retryagent.it.differential;

import dev.retryagent.it.harness.ApacheVersions;
import dev.retryagent.it.harness.CountingServer;
import java.io.IOException;
import java.net.URI;
import java.nio.ByteBuffer;
import java.util.EnumSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CancellationException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.apache.hc.client5.http.async.methods.SimpleHttpRequest;
import org.apache.hc.client5.http.async.methods.SimpleHttpResponse;
import org.apache.hc.client5.http.async.methods.SimpleRequestProducer;
import org.apache.hc.client5.http.async.methods.SimpleResponseConsumer;
import org.apache.hc.client5.http.impl.async.CloseableHttpAsyncClient;
import org.apache.hc.client5.http.impl.async.HttpAsyncClientBuilder;
import org.apache.hc.client5.http.impl.async.HttpAsyncClients;
import org.apache.hc.client5.http.impl.nio.PoolingAsyncClientConnectionManager;
import org.apache.hc.client5.http.impl.nio.PoolingAsyncClientConnectionManagerBuilder;
import org.apache.hc.core5.concurrent.FutureCallback;
import org.apache.hc.core5.http.ContentType;
import org.apache.hc.core5.http.EntityDetails;
import org.apache.hc.core5.http.Header;
import org.apache.hc.core5.http.HttpException;
import org.apache.hc.core5.http.HttpResponse;
import org.apache.hc.core5.http.nio.AsyncResponseConsumer;
import org.apache.hc.core5.http.nio.CapacityChannel;
import org.apache.hc.core5.http.protocol.HttpContext;
import org.apache.hc.core5.io.CloseMode;

/**
 * Apache HttpClient 5.x async ({@code CloseableHttpAsyncClient} from {@code
 * HttpAsyncClients.custom()}), 5.1 and 5.6, one JVM each: {@code execute(producer, consumer,
 * FutureCallback)}, which reports from the callback (HttpClient's {@code httpclient-dispatch-N}
 * threads), a new started client per call with the application's connect and response timeouts;
 * cancelled with {@code Future.cancel(true)} on the future {@code execute} returned (before the
 * call: at once when {@code execute} returns it), every call with {@code client.close(IMMEDIATE)},
 * or {@code close(GRACEFUL)} ({@code close()}); the interrupted thread is the caller waiting in
 * {@code Future.get()} (it reports the {@code InterruptedException}; the callback reports the
 * rest). The application's code throws where an async HttpClient application has its code: {@code
 * io}, its response consumer once it has the head ({@code consumeResponse}); {@code runtime}, its
 * {@code FutureCallback.completed}. Its variants are named {@code apache-5.N.N-async}, so that
 * markers of HttpClient 5 ({@code apache-5*}) cover them too.
 */
public final class Apache5AsyncDriver implements Driver {
  @Override
  public List<Variant> variants() {
    return List.of(
        new Variant(
            "apache-" + ApacheVersions.V5_1.version() + "-async",
            List.of(ApacheVersions.V5_1.jars())),
        new Variant(
            "apache-" + ApacheVersions.V5_6.version() + "-async",
            List.of(ApacheVersions.V5_6.jars())));
  }

  @Override
  public List<String> apis() {
    return List.of("callback");
  }

  @Override
  public Set<Feature> features(String api) {
    return EnumSet.of(
        Feature.CONNECT_TIMEOUT,
        Feature.READ_TIMEOUT,
        Feature.CANCEL_BEFORE,
        Feature.CANCEL,
        Feature.CANCEL_ALL,
        Feature.CLOSE,
        Feature.INTERRUPT,
        Feature.CALLBACK_THROWS,
        Feature.PATCH,
        Feature.FAULT_MATRIX);
  }

  @Override
  public Exchange prepare(String api, Action a, URI server) {
    PoolingAsyncClientConnectionManager pool = null;
    if (a.followsUp()) {
      // One connection: a call that kept it leased makes the follow-up wait for it, and fail.
      pool =
          PoolingAsyncClientConnectionManagerBuilder.create()
              .setMaxConnTotal(1)
              .setMaxConnPerRoute(1)
              .build();
    }
    HttpAsyncClientBuilder b =
        HttpAsyncClients.custom().setDefaultRequestConfig(Apache5Driver.config(a));
    if (pool != null) {
      b.setConnectionManager(pool);
    }
    if (!a.followsRedirects()) {
      b.disableRedirectHandling();
    }
    CloseableHttpAsyncClient client = b.build();
    client.start();
    PoolingAsyncClientConnectionManager onePool = pool;
    SimpleHttpRequest request = request(a.method(), server.resolve(a.path()), a.headers());
    if (a.bodyBytes() > 0) {
      request.setBody("x".repeat(a.bodyBytes()), ContentType.TEXT_PLAIN);
    } else if (!a.body().isEmpty() || !a.method().equals("GET")) {
      request.setBody(a.body(), ContentType.TEXT_PLAIN);
    }
    Future<?>[] call = new Future<?>[1];
    boolean[] cancelFirst = new boolean[1];
    return new Exchange() {
      @Override
      public void start(Delivery delivery) {
        AsyncResponseConsumer<SimpleHttpResponse> consumer = SimpleResponseConsumer.create();
        if (a.callbackThrows().equals("io")) {
          consumer = new ThrowingConsumer(consumer, delivery, server);
        }
        Future<SimpleHttpResponse> f =
            client.execute(
                SimpleRequestProducer.create(request),
                consumer,
                new FutureCallback<SimpleHttpResponse>() {
                  @Override
                  public void completed(SimpleHttpResponse response) {
                    delivery.status(response.getCode());
                    if (a.callbackThrows().equals("runtime")) {
                      throw new IllegalStateException("the callback failed for " + server);
                    }
                  }

                  @Override
                  public void failed(Exception e) {
                    delivery.failed(e);
                  }

                  @Override
                  public void cancelled() {
                    delivery.succeeded("cancelled");
                  }
                });
        boolean cancelNow;
        synchronized (call) {
          call[0] = f;
          cancelNow = cancelFirst[0];
        }
        if (cancelNow) {
          f.cancel(true);
        }
        if (a.cancel() == Action.Cancel.INTERRUPT) {
          try {
            f.get();
          } catch (InterruptedException e) {
            delivery.failed(e);
          } catch (ExecutionException | CancellationException e) {
            // the callback reports it
          }
        }
      }

      @Override
      public void cancel(Action.Cancel how) {
        if (how == Action.Cancel.ALL) {
          client.close(CloseMode.IMMEDIATE);
          return;
        }
        if (how == Action.Cancel.CLOSE) {
          client.close(CloseMode.GRACEFUL); // what close() does
          return;
        }
        Future<?> f;
        synchronized (call) {
          f = call[0];
          cancelFirst[0] = f == null;
        }
        if (f != null) {
          f.cancel(true);
        }
      }

      @Override
      public String followUp() throws Exception {
        SimpleHttpResponse response;
        try {
          response =
              client
                  .execute(
                      SimpleRequestProducer.create(
                          request(
                              "GET", server.resolve(CountingServer.FOLLOW_UP_PATH), a.headers())),
                      SimpleResponseConsumer.create(),
                      null)
                  .get(5, TimeUnit.SECONDS);
        } catch (ExecutionException e) {
          // what the application's blocking wait would rethrow: the call's own failure
          throw e.getCause() instanceof Exception ? (Exception) e.getCause() : e;
        }
        // The client completes a call's future before it releases the call's connection: given a
        // moment to let go, as OkHttpDriver's dispatcher is.
        long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(1);
        while (true) {
          int leased = onePool == null ? 0 : onePool.getTotalStats().getLeased();
          if (leased == 0) {
            return "status " + response.getCode();
          }
          if (System.nanoTime() - until > 0) {
            return "status " + response.getCode() + ", " + leased + " connection(s) leased";
          }
          Thread.sleep(20); // polling HttpClient's own bookkeeping, not waiting for the test
        }
      }
    };
  }

  private static SimpleHttpRequest request(String method, URI uri, List<String> headers) {
    SimpleHttpRequest r = new SimpleHttpRequest(method, uri);
    for (String h : headers) {
      String[] nv = h.split(": ", 2);
      r.addHeader(nv[0], nv[1]);
    }
    return r;
  }

  /**
   * The application's response consumer that fails with an IOException once it has the response's
   * head, having reported its status (as OkHttp's {@code onResponse} that throws).
   */
  private static final class ThrowingConsumer implements AsyncResponseConsumer<SimpleHttpResponse> {
    private final AsyncResponseConsumer<SimpleHttpResponse> delegate;
    private final Delivery delivery;
    private final URI server;

    ThrowingConsumer(
        AsyncResponseConsumer<SimpleHttpResponse> delegate, Delivery delivery, URI server) {
      this.delegate = delegate;
      this.delivery = delivery;
      this.server = server;
    }

    @Override
    public void consumeResponse(
        HttpResponse response,
        EntityDetails entity,
        HttpContext context,
        FutureCallback<SimpleHttpResponse> callback)
        throws HttpException, IOException {
      delivery.status(response.getCode());
      throw new IOException("the consumer failed for " + server);
    }

    @Override
    public void informationResponse(HttpResponse response, HttpContext context)
        throws HttpException, IOException {
      delegate.informationResponse(response, context);
    }

    @Override
    public void failed(Exception cause) {
      delegate.failed(cause);
    }

    @Override
    public void updateCapacity(CapacityChannel channel) throws IOException {
      delegate.updateCapacity(channel);
    }

    @Override
    public void consume(ByteBuffer src) throws IOException {
      delegate.consume(src);
    }

    @Override
    public void streamEnd(List<? extends Header> trailers) throws HttpException, IOException {
      delegate.streamEnd(trailers);
    }

    @Override
    public void releaseResources() {
      delegate.releaseResources();
    }
  }
}
