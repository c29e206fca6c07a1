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
        Feature.INTERRUPT);
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
    HttpClientBuilder b = HttpClients.custom().setDefaultRequestConfig(config.build());
    if (!a.followsRedirects()) {
      b.disableRedirectHandling();
    }
    CloseableHttpClient client = b.build();
    RequestBuilder r = RequestBuilder.create(a.method()).setUri(server.resolve(a.path()));
    for (String h : a.headers()) {
      String[] nv = h.split(": ", 2);
      r.addHeader(nv[0], nv[1]);
    }
    if (a.bodyBytes() > 0) {
      r.setEntity(new StringEntity("x".repeat(a.bodyBytes()), ContentType.TEXT_PLAIN));
    } else if (!a.body().isEmpty() || a.method().equals("POST") || a.method().equals("PUT")) {
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
    };
  }
}
