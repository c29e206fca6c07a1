package dev.retryagent.it.apps;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.concurrent.CompletionException;

/**
 * Makes {@code java.net.http} calls as an ordinary application would.
 *
 * <p>Arguments: {@code send|async BASE_URL CALL...}, each call {@code METHOD:PATH[:BODY]}. For call
 * number {@code i} (from 1) it prints {@code i.status=} and {@code i.body=}, or {@code i.error=}
 * (the exception class) and {@code i.io=} (whether it is an IOException); then {@code intercepted=}
 * (the agent's counter, or {@code absent}). Exit code 0 unless the arguments are wrong.
 */
public final class JdkHttpApp {
  private JdkHttpApp() {}

  public static void main(String[] args) throws Exception {
    if (args.length < 3 || !(args[0].equals("send") || args[0].equals("async"))) {
      System.err.println("usage: send|async BASE_URL METHOD:PATH[:BODY]...");
      System.exit(2);
    }
    boolean async = args[0].equals("async");
    String base = args[1];
    HttpClient client =
        HttpClient.newBuilder()
            .connectTimeout(Duration.ofSeconds(10))
            .version(HttpClient.Version.HTTP_1_1)
            .build();
    for (int i = 2; i < args.length; i++) {
      String[] call = args[i].split(":", 3);
      HttpRequest.BodyPublisher body =
          call.length > 2
              ? HttpRequest.BodyPublishers.ofString(call[2])
              : HttpRequest.BodyPublishers.noBody();
      HttpRequest request =
          HttpRequest.newBuilder(URI.create(base + call[1]))
              .timeout(Duration.ofSeconds(20))
              .method(call[0], body)
              .build();
      String n = String.valueOf(i - 1);
      try {
        HttpResponse<String> response =
            async
                ? client.sendAsync(request, HttpResponse.BodyHandlers.ofString()).join()
                : client.send(request, HttpResponse.BodyHandlers.ofString());
        System.out.println(n + ".status=" + response.statusCode());
        System.out.println(n + ".body=" + response.body());
      } catch (IOException | CompletionException e) {
        Throwable t = e instanceof CompletionException ? e.getCause() : e;
        System.out.println(n + ".error=" + t.getClass().getName());
        System.out.println(n + ".io=" + (t instanceof IOException));
      }
    }
    System.out.println("intercepted=" + AgentProbe.interceptedCalls());
  }
}
