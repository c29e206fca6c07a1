package dev.retryagent.it.differential;

import dev.retryagent.it.harness.ApacheVersions;
import java.util.EnumSet;
import java.util.List;
import java.util.Set;
import org.apache.http.client.config.RequestConfig;
import org.apache.http.client.methods.CloseableHttpResponse;
import org.apache.http.client.methods.HttpRequestBase;
import org.apache.http.client.methods.RequestBuilder;
import org.apache.http.entity.ContentType;
import org.apache.http.entity.StringEntity;
import org.apache.http.impl.client.CloseableHttpClient;
import org.apache.http.impl.client.HttpClientBuilder;
import org.apache.http.impl.client.HttpClients;
import org.apache.http.impl.conn.PoolingHttpClientConnectionManager;
import org.apache.http.util.EntityUtils;

/**
 * Apache HttpClient 4.5: {@code execute(request)} and {@code execute(request, ResponseHandler)}, a
 * new client per call from {@code HttpClients.custom()}, with the application's connect and socket
 * timeouts; cancelled with {@code HttpRequestBase.abort()}.
 */
public final class Apache4Driver implements Driver {
  @Override
  public List<Variant> variants() {
    return List.of(
        new Variant(
            "apache-" + ApacheVersions.V4_5.version(), List.of(ApacheVersions.V4_5.jars())));
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

  /** What {@code RetryExec} logs (through commons-logging, to java.util.logging) as it resends. */
  @Override
  public String ownResendLog() {
    return "INFO org\\.apache\\.http\\.impl\\.execchain\\.RetryExec: .*";
  }

  @Override
  public Exchange prepare(String api, Action a, java.net.URI server) {
    RequestConfig.Builder config = RequestConfig.custom();
    if (a.connectTimeout() > 0) {
      config.setConnectTimeout(a.connectTimeout());
    }
    if (a.readTimeout() > 0) {
      config.setSocketTimeout(a.readTimeout());
    }
    PoolingHttpClientConnectionManager pool = null;
    if (a.followsUp()) {
      // One connection: a call that kept it leased makes the follow-up wait for it, and fail.
      pool = new PoolingHttpClientConnectionManager();
      pool.setMaxTotal(1);
      pool.setDefaultMaxPerRoute(1);
      config.setConnectionRequestTimeout(1_000);
    }
    HttpClientBuilder b = HttpClients.custom().setDefaultRequestConfig(config.build());
    if (pool != null) {
      b.setConnectionManager(pool);
    }
    if (!a.followsRedirects()) {
      b.disableRedirectHandling();
    }
    CloseableHttpClient client = b.build();
    PoolingHttpClientConnectionManager onePool = pool;
    RequestBuilder r = RequestBuilder.create(a.method()).setUri(server.resolve(a.path()));
    for (String h : a.headers()) {
      String[] nv = h.split(": ", 2);
      r.addHeader(nv[0], nv[1]);
    }
    if (a.bodyBytes() > 0) {
      r.setEntity(new StringEntity("x".repeat(a.bodyBytes()), ContentType.TEXT_PLAIN));
    } else if (!a.body().isEmpty() || !a.method().equals("GET")) {
      r.setEntity(new StringEntity(a.body(), ContentType.TEXT_PLAIN));
    }
    HttpRequestBase request = (HttpRequestBase) r.build();
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
                    return response.getStatusLine().getStatusCode();
                  }));
          return;
        }
        try (CloseableHttpResponse response = client.execute(request)) {
          EntityUtils.consume(response.getEntity());
          delivery.status(response.getStatusLine().getStatusCode());
        }
      }

      @Override
      public void cancel(Action.Cancel how) {
        request.abort();
      }

      @Override
      public String followUp() throws Exception {
        RequestBuilder f =
            RequestBuilder.get(
                server.resolve(dev.retryagent.it.harness.CountingServer.FOLLOW_UP_PATH));
        for (String h : a.headers()) {
          String[] nv = h.split(": ", 2);
          f.addHeader(nv[0], nv[1]);
        }
        int code;
        try (CloseableHttpResponse response = client.execute(f.build())) {
          EntityUtils.consume(response.getEntity());
          code = response.getStatusLine().getStatusCode();
        }
        int leased = onePool == null ? 0 : onePool.getTotalStats().getLeased();
        return "status " + code + (leased == 0 ? "" : ", " + leased + " connection(s) leased");
      }
    };
  }
}
