package dev.retryagent.it.apps;

import com.sun.tools.attach.VirtualMachine;
import java.io.IOException;
import java.io.InputStream;
import java.net.HttpURLConnection;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import okhttp3.Call;
import okhttp3.Callback;
import okhttp3.OkHttpClient;
import okhttp3.Request;
import okhttp3.Response;

/**
 * Uses every client the agent hooks, one call each, in this order: {@code java.net.http} ({@code
 * send}), OkHttp ({@code execute}, then {@code enqueue}), Apache HttpClient 4.5, Apache HttpClient
 * 5.x and {@code HttpURLConnection}. Needs OkHttp and both HttpClients on the class path.
 *
 * <p>Arguments: {@code URL} (with {@code -javaagent}), or {@code --attach AGENT_JAR URL}: one round
 * of calls first (every hooked class is loaded), then the agent attaches itself, then a second
 * round with the clients of the first where the agent rewrites a loaded class in place ({@code
 * java.net.http}, Apache 4.5) and new ones where only a new client is hooked (OkHttp and Apache 5
 * builders, a new {@code HttpURLConnection}); needs {@code -Djdk.attach.allowAttachSelf=true}.
 * Prints {@code ROUND.CLIENT=STATUS} for each call ({@code ROUND} {@code first} or {@code calls}),
 * then {@code handled.jdk=}, {@code handled.okhttp=}, {@code handled.apache4=} and {@code
 * handled.url=}: the calls each hook handed to the agent and the agent took.
 */
public final class AllClientsApp {
  private AllClientsApp() {}

  public static void main(String[] args) throws Exception {
    boolean attach = args[0].equals("--attach");
    String url = attach ? args[2] : args[0];
    HttpClient jdk =
        HttpClient.newBuilder()
            .version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(Duration.ofSeconds(10))
            .build();
    org.apache.http.impl.client.CloseableHttpClient apache4 =
        org.apache.http.impl.client.HttpClients.createDefault();
    if (attach) {
      calls("first", url, jdk, new OkHttpClient(), apache4);
      VirtualMachine vm = VirtualMachine.attach(String.valueOf(ProcessHandle.current().pid()));
      try {
        vm.loadAgent(args[1]);
      } finally {
        vm.detach();
      }
    }
    calls("calls", url, jdk, new OkHttpClient(), apache4);
    System.out.println("handled.jdk=" + AgentProbe.handled(AgentProbe.JDK_SEND));
    System.out.println("handled.okhttp=" + AgentProbe.handled(AgentProbe.OKHTTP_ENQUEUE));
    System.out.println("handled.apache4=" + AgentProbe.handled(AgentProbe.APACHE_EXECUTE));
    System.out.println("handled.url=" + AgentProbe.handled(AgentProbe.URL_OPENED));
    apache4.close();
    System.exit(0); // OkHttp's and HttpClient's threads
  }

  private static void calls(
      String round,
      String url,
      HttpClient jdk,
      OkHttpClient okhttp,
      org.apache.http.impl.client.CloseableHttpClient apache4)
      throws Exception {
    HttpResponse<String> j =
        jdk.send(
            HttpRequest.newBuilder(URI.create(url + "/jdk"))
                .timeout(Duration.ofSeconds(20))
                .build(),
            HttpResponse.BodyHandlers.ofString());
    print(round, "jdk", j.statusCode());

    try (Response r = okhttp.newCall(new Request.Builder().url(url + "/ok").build()).execute()) {
      print(round, "okhttpExecute", r.code());
    }
    print(round, "okhttpEnqueue", enqueue(okhttp, url + "/ok-async"));

    try (org.apache.http.client.methods.CloseableHttpResponse r =
        apache4.execute(new org.apache.http.client.methods.HttpGet(url + "/apache4"))) {
      org.apache.http.util.EntityUtils.consume(r.getEntity());
      print(round, "apache4", r.getStatusLine().getStatusCode());
    }

    // built now: a 5.x client is hooked at its builder
    try (org.apache.hc.client5.http.impl.classic.CloseableHttpClient apache5 =
        org.apache.hc.client5.http.impl.classic.HttpClients.createDefault()) {
      int status =
          apache5.execute(
              new org.apache.hc.client5.http.classic.methods.HttpGet(url + "/apache5"),
              response -> {
                org.apache.hc.core5.http.io.entity.EntityUtils.consume(response.getEntity());
                return response.getCode();
              });
      print(round, "apache5", status);
    }

    HttpURLConnection c = (HttpURLConnection) URI.create(url + "/url").toURL().openConnection();
    c.setConnectTimeout(10_000);
    c.setReadTimeout(20_000);
    int status = c.getResponseCode();
    try (InputStream in = status >= 400 ? c.getErrorStream() : c.getInputStream()) {
      if (in != null) {
        in.readAllBytes();
      }
    }
    print(round, "url", status);
  }

  private static int enqueue(OkHttpClient client, String url) throws Exception {
    CompletableFuture<Integer> done = new CompletableFuture<>();
    Call call = client.newCall(new Request.Builder().url(url).build());
    call.enqueue(
        new Callback() {
          @Override
          public void onFailure(Call c, IOException e) {
            done.completeExceptionally(e);
          }

          @Override
          public void onResponse(Call c, Response response) {
            try (Response r = response) {
              done.complete(r.code());
            }
          }
        });
    return done.get(30, TimeUnit.SECONDS);
  }

  private static void print(String round, String client, int status) {
    System.out.println(round + "." + client + "=" + status);
  }
}
