package dev.retryagent.it.apps;

import dev.retryagent.apache5.RetryExecHandler;
import java.io.ByteArrayInputStream;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
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
import org.apache.hc.core5.http.io.entity.InputStreamEntity;
import org.apache.hc.core5.http.io.entity.StringEntity;
import org.apache.hc.core5.util.Timeout;

/**
 * {@link Apache4ScenarioApp}'s twin for Apache HttpClient 5.x classic (whichever 5.x is on its
 * class path): {@code execute(request)} or {@code execute(request, HttpClientResponseHandler)}, one
 * connection per route; {@code --by-hand CONFIG} adds the library's {@code RetryExecHandler} to the
 * builder.
 */
public final class Apache5ScenarioApp {
  private Apache5ScenarioApp() {}

  public static void main(String[] args) throws Exception {
    int i = 0;
    Path byHand = null;
    String mode = null;
    boolean stdin = false;
    while (i < args.length && args[i].startsWith("--")) {
      if (args[i].equals("--by-hand")) {
        byHand = Path.of(args[++i]);
      } else if (args[i].equals("--mode")) {
        mode = args[++i];
      } else if (args[i].equals("--stdin")) {
        stdin = true;
      }
      i++;
    }
    PoolingHttpClientConnectionManager pool =
        PoolingHttpClientConnectionManagerBuilder.create()
            .setMaxConnPerRoute(1)
            .setMaxConnTotal(100)
            .build();
    RequestConfig config =
        RequestConfig.custom()
            .setConnectionRequestTimeout(Timeout.ofSeconds(5))
            .setResponseTimeout(Timeout.ofSeconds(20))
            .build();
    HttpClientBuilder b =
        HttpClients.custom().setConnectionManager(pool).setDefaultRequestConfig(config);
    if (byHand != null) {
      RetryExecHandler.addTo(b, ApacheByHandWiring.engine(byHand, mode));
    }
    CloseableHttpClient client = b.build();
    List<String> calls = new ArrayList<>(List.of(args).subList(i, args.length));
    if (stdin) {
      ScenarioCalls.runFromStdin((spec, out) -> call(client, spec, out));
    } else {
      ScenarioCalls.run(calls, (spec, out) -> call(client, spec, out));
    }
    System.out.println(
        "apache.version=" + CloseableHttpClient.class.getPackage().getImplementationVersion());
    System.out.println("pool.leased=" + pool.getTotalStats().getLeased());
    System.out.println("pool.available=" + pool.getTotalStats().getAvailable());
    client.close();
  }

  @SuppressWarnings("deprecation") // execute(request) is what most 5.x code still calls
  private static void call(CloseableHttpClient client, String[] spec, StringBuilder out)
      throws Exception {
    String name = spec[0];
    HttpUriRequestBase request = new HttpUriRequestBase(spec[2], URI.create(spec[3]));
    for (String[] h : ScenarioCalls.headers(spec[4])) {
      request.addHeader(h[0], h[1]);
    }
    if (spec[5].startsWith("oneshot-reset:")) {
      request.setEntity(
          new InputStreamEntity(
              ScenarioCalls.resetAfter(spec[5].substring("oneshot-reset:".length())),
              -1,
              ContentType.TEXT_PLAIN));
    } else if (spec[5].startsWith("oneshot:")) {
      byte[] bytes = spec[5].substring("oneshot:".length()).getBytes(StandardCharsets.UTF_8);
      request.setEntity(
          new InputStreamEntity(
              new ByteArrayInputStream(bytes), bytes.length, ContentType.TEXT_PLAIN));
    } else if (!spec[5].isEmpty() || spec[2].equals("POST") || spec[2].equals("PUT")) {
      request.setEntity(new StringEntity(spec[5], ContentType.TEXT_PLAIN));
    }
    if (spec[1].equals("handler")) {
      String[] got =
          client.execute(
              request,
              r ->
                  new String[] {
                    String.valueOf(r.getCode()),
                    r.getEntity() == null ? "" : EntityUtils.toString(r.getEntity())
                  });
      ScenarioCalls.line(out, name + ".status", got[0]);
      ScenarioCalls.line(out, name + ".body", got[1]);
      return;
    }
    try (CloseableHttpResponse r = client.execute(request)) {
      ScenarioCalls.line(out, name + ".status", r.getCode());
      ScenarioCalls.line(
          out, name + ".body", r.getEntity() == null ? "" : EntityUtils.toString(r.getEntity()));
    }
  }
}
