package dev.retryagent.it.differential;

import dev.retryagent.it.harness.ApacheVersions;
import java.net.URI;
import java.util.EnumSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.apache.hc.client5.http.classic.methods.HttpUriRequestBase;
import org.apache.hc.client5.http.config.RequestConfig;
import org.apache.hc.client5.http.impl.classic.CloseableHttpClient;
import org.apache.hc.client5.http.impl.classic.CloseableHttpResponse;
import org.apache.hc.client5.http.impl.classic.HttpClientBuilder;
import org.apache.hc.client5.http.impl.classic.HttpClients;
import org.apache.hc.client5.http.impl.io.PoolingHttpClientConnectionManager;
import org.apache.hc.client5.http.impl.io.PoolingHttpClientConnectionManagerBuilder;
import org.apache.hc.core5.http.ContentType;
import org.apache.hc.core5.http.io.entity.EntityUtils;
import org.apache.hc.core5.http.io.entity.StringEntity;

/**
 * Apache HttpClient 5.x classic, the oldest supported (5.1) and the newest tested (5.6), one JVM
 * each: {@code execute(request)} and {@code execute(request, HttpClientResponseHandler)}, a new
 * client per call from {@code HttpClients.custom()}, with the application's connect and response
 * timeouts; cancelled with {@code HttpUriRequestBase.cancel()}.
 */
public final class Apache5Driver implements Driver {
  @Override
  public List<Variant> variants() {
    return List.of(
        new Variant("apache-" + ApacheVersions.V5_1.version(), List.of(ApacheVersions.V5_1.jars())),
        new Variant(
            "apache-" + ApacheVersions.V5_6.version(), List.of(ApacheVersions.V5_6.jars())));
  }

  @Override
  public List<String> apis() {
    return List.of("execute", "handler");
  }

  @Override
  public Set<Feature> features(String api) {
    return EnumSet.of(
        Feature.CONNECT_TIMEOUT,
        Feature.READ_TIMEOUT,
        Feature.CANCEL_BEFORE,
        Feature.CANCEL,
        Feature.INTERRUPT,
        Feature.PATCH,
        Feature.FAULT_MATRIX);
  }

  /**
   * The request configuration of HttpClient 5 (classic and async) for {@code a}: its connect and
   * response timeouts, and where it follows up (a pool of one connection) a wait of 1 s for it.
   */
  @SuppressWarnings("deprecation") // setConnectTimeout: still what 5.x apps use
  static RequestConfig config(Action a) {
    RequestConfig.Builder config = RequestConfig.custom();
    if (a.connectTimeout() > 0) {
      config.setConnectTimeout(a.connectTimeout(), TimeUnit.MILLISECONDS);
    }
    if (a.readTimeout() > 0) {
      config.setResponseTimeout(a.readTimeout(), TimeUnit.MILLISECONDS);
    }
    if (a.followsUp()) {
      config.setConnectionRequestTimeout(1_000, TimeUnit.MILLISECONDS);
    }
    return config.build();
  }

  @Override
  @SuppressWarnings("deprecation") // execute(request): still what 5.x apps use
  public Exchange prepare(String api, Action a, URI server) {
    PoolingHttpClientConnectionManager pool = null;
    if (a.followsUp()) {
      // One connection: a call that kept it leased makes the follow-up wait for it, and fail.
      pool =
          PoolingHttpClientConnectionManagerBuilder.create()
              .setMaxConnTotal(1)
              .setMaxConnPerRoute(1)
              .build();
    }
    HttpClientBuilder b = HttpClients.custom().setDefaultRequestConfig(config(a));
    if (pool != null) {
      b.setConnectionManager(pool);
    }
    if (!a.followsRedirects()) {
      b.disableRedirectHandling();
    }
    CloseableHttpClient client = b.build();
    PoolingHttpClientConnectionManager onePool = pool;
    HttpUriRequestBase request = new HttpUriRequestBase(a.method(), server.resolve(a.path()));
    for (String h : a.headers()) {
      String[] nv = h.split(": ", 2);
      request.addHeader(nv[0], nv[1]);
    }
    if (a.bodyBytes() > 0) {
      request.setEntity(new StringEntity("x".repeat(a.bodyBytes()), ContentType.TEXT_PLAIN));
    } else if (!a.body().isEmpty() || !a.method().equals("GET")) {
      request.setEntity(new StringEntity(a.body(), ContentType.TEXT_PLAIN));
    }
    boolean handler = api.equals("handler");
    return new Exchange() {
      @Override
      public void start(Delivery delivery) throws Exception {
        if (handler) {
          delivery.status(
              client.execute(
                  request,
                  response -> {
                    EntityUtils.consume(response.getEntity());
                    return response.getCode();
                  }));
          return;
        }
        try (CloseableHttpResponse response = client.execute(request)) {
          EntityUtils.consume(response.getEntity());
          delivery.status(response.getCode());
        }
      }

      @Override
      public void cancel(Action.Cancel how) {
        request.cancel();
      }

      @Override
      public String followUp() throws Exception {
        HttpUriRequestBase f =
            new HttpUriRequestBase(
                "GET", server.resolve(dev.retryagent.it.harness.CountingServer.FOLLOW_UP_PATH));
        for (String h : a.headers()) {
          String[] nv = h.split(": ", 2);
          f.addHeader(nv[0], nv[1]);
        }
        int code;
        try (CloseableHttpResponse response = client.execute(f)) {
          EntityUtils.consume(response.getEntity());
          code = response.getCode();
        }
        int leased = onePool == null ? 0 : onePool.getTotalStats().getLeased();
        return "status " + code + (leased == 0 ? "" : ", " + leased + " connection(s) leased");
      }
    };
  }
}
