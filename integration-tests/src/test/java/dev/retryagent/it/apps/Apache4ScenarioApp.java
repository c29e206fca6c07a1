package dev.retryagent.it.apps;

import dev.retryagent.apache4.RetryingCloseableHttpClient;
import java.io.ByteArrayInputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.apache.http.client.config.RequestConfig;
import org.apache.http.client.methods.CloseableHttpResponse;
import org.apache.http.client.methods.HttpUriRequest;
import org.apache.http.client.methods.RequestBuilder;
import org.apache.http.entity.ContentType;
import org.apache.http.entity.InputStreamEntity;
import org.apache.http.entity.StringEntity;
import org.apache.http.impl.client.CloseableHttpClient;
import org.apache.http.impl.client.HttpClientBuilder;
import org.apache.http.impl.client.HttpClients;
import org.apache.http.impl.conn.PoolingHttpClientConnectionManager;
import org.apache.http.util.EntityUtils;

/**
 * An application with no retry code that makes the calls it is told to with Apache HttpClient 4.5,
 * through {@code execute(request)} or {@code execute(request, ResponseHandler)}, on one client
 * whose pool holds one connection per route (a response left open would make the next call to its
 * server wait, then fail). Run with the agent, or with {@code --by-hand CONFIG} to have the
 * library's {@code RetryingCloseableHttpClient} build and wrap the client from its builder (which
 * governs HttpClient's own retry handler), from the same configuration file.
 *
 * <p>Arguments: {@code [--by-hand CONFIG] [--mode MODE] [--stdin] CALL...} ({@code --stdin}: the
 * calls are read from stdin instead, {@code ScenarioCalls.runFromStdin}), each call {@code
 * SCENARIO.NAME|API|METHOD|URL|HEADERS|BODY} with API {@code execute} or {@code handler}; a body
 * {@code oneshot:TEXT} is an {@code InputStreamEntity} (not repeatable), {@code oneshot-reset:TEXT}
 * one whose stream fails with a reset after {@code TEXT}. Prints {@code NAME.status=} and {@code
 * NAME.body=}, or {@code NAME.error=}, {@code NAME.message=} and {@code NAME.cause=}, then {@code
 * NAME.millis=}; at the end {@code apache.version=}, {@code pool.leased=} and {@code
 * pool.available=}.
 */
public final class Apache4ScenarioApp {
  private Apache4ScenarioApp() {}

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
    PoolingHttpClientConnectionManager pool = new PoolingHttpClientConnectionManager();
    pool.setDefaultMaxPerRoute(1);
    pool.setMaxTotal(100);
    RequestConfig config =
        RequestConfig.custom()
            .setConnectionRequestTimeout(5_000)
            .setConnectTimeout(5_000)
            .setSocketTimeout(20_000)
            .build();
    HttpClientBuilder b =
        HttpClients.custom().setConnectionManager(pool).setDefaultRequestConfig(config);
    CloseableHttpClient client =
        byHand == null
            ? b.build()
            : RetryingCloseableHttpClient.wrap(b, ApacheByHandWiring.engine(byHand, mode));
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

  private static void call(CloseableHttpClient client, String[] spec, StringBuilder out)
      throws Exception {
    String name = spec[0];
    RequestBuilder b = RequestBuilder.create(spec[2]).setUri(spec[3]);
    for (String[] h : ScenarioCalls.headers(spec[4])) {
      b.addHeader(h[0], h[1]);
    }
    if (spec[5].startsWith("oneshot-reset:")) {
      b.setEntity(
          new InputStreamEntity(
              ScenarioCalls.resetAfter(spec[5].substring("oneshot-reset:".length())),
              -1,
              ContentType.TEXT_PLAIN));
    } else if (spec[5].startsWith("oneshot:")) {
      byte[] bytes = spec[5].substring("oneshot:".length()).getBytes(StandardCharsets.UTF_8);
      b.setEntity(
          new InputStreamEntity(
              new ByteArrayInputStream(bytes), bytes.length, ContentType.TEXT_PLAIN));
    } else if (!spec[5].isEmpty() || spec[2].equals("POST") || spec[2].equals("PUT")) {
      b.setEntity(new StringEntity(spec[5], ContentType.TEXT_PLAIN));
    }
    HttpUriRequest request = b.build();
    if (spec[1].equals("handler")) {
      String[] got =
          client.execute(
              request,
              r ->
                  new String[] {
                    String.valueOf(r.getStatusLine().getStatusCode()),
                    r.getEntity() == null ? "" : EntityUtils.toString(r.getEntity())
                  });
      ScenarioCalls.line(out, name + ".status", got[0]);
      ScenarioCalls.line(out, name + ".body", got[1]);
      return;
    }
    try (CloseableHttpResponse r = client.execute(request)) {
      ScenarioCalls.line(out, name + ".status", r.getStatusLine().getStatusCode());
      ScenarioCalls.line(
          out, name + ".body", r.getEntity() == null ? "" : EntityUtils.toString(r.getEntity()));
    }
  }
}
