package dev.retryagent.it.apps;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.CompletionException;

/**
 * An application with no retry code that makes the calls it is told to, with {@code java.net.http}.
 * Run with the agent, or with {@code --by-hand CONFIG} to wire the library's decorating client
 * itself (the same configuration file, loaded by the library).
 *
 * <p>Arguments: {@code [--by-hand CONFIG] [--mode MODE] send|async CALL...}; each call is {@code
 * NAME|METHOD|URL|HEADERS|BODY}, headers as {@code Name=value;Name2=value2} (may be empty), body
 * may be empty. For each call it prints {@code NAME.status=} and {@code NAME.body=}, or {@code
 * NAME.error=} (exception class) and {@code NAME.message=}, then {@code NAME.millis=}.
 */
public final class JdkScenarioApp {
  private JdkScenarioApp() {}

  public static void main(String[] args) throws Exception {
    int i = 0;
    Path byHand = null;
    String mode = null;
    while (args[i].startsWith("--")) {
      if (args[i].equals("--by-hand")) {
        byHand = Path.of(args[++i]);
      } else if (args[i].equals("--mode")) {
        mode = args[++i];
      }
      i++;
    }
    boolean async = args[i++].equals("async");
    HttpClient client =
        HttpClient.newBuilder()
            .connectTimeout(Duration.ofSeconds(10))
            .version(HttpClient.Version.HTTP_1_1)
            .build();
    if (byHand != null) {
      // In its own class: with the agent, the library is not on the class path at all.
      client = ByHandWiring.wrap(client, byHand, mode);
    }
    for (; i < args.length; i++) {
      call(client, async, args[i].split("\\|", -1));
    }
  }

  private static void call(HttpClient client, boolean async, String[] spec) {
    String name = spec[0];
    HttpRequest.BodyPublisher body =
        spec[4].isEmpty()
            ? HttpRequest.BodyPublishers.noBody()
            : HttpRequest.BodyPublishers.ofString(spec[4]);
    HttpRequest.Builder b =
        HttpRequest.newBuilder(URI.create(spec[2]))
            .timeout(Duration.ofSeconds(20))
            .method(spec[1], body);
    if (!spec[3].isEmpty()) {
      for (String header : spec[3].split(";")) {
        String[] kv = header.split("=", 2);
        b.header(kv[0], kv[1]);
      }
    }
    long start = System.nanoTime();
    try {
      HttpResponse<String> response =
          async
              ? client.sendAsync(b.build(), HttpResponse.BodyHandlers.ofString()).join()
              : client.send(b.build(), HttpResponse.BodyHandlers.ofString());
      System.out.println(name + ".status=" + response.statusCode());
      System.out.println(name + ".body=" + response.body());
    } catch (IOException | InterruptedException | CompletionException e) {
      Throwable t = e instanceof CompletionException ? e.getCause() : e;
      System.out.println(name + ".error=" + t.getClass().getName());
      System.out.println(name + ".message=" + String.valueOf(t.getMessage()).replace('\n', ' '));
    }
    System.out.println(name + ".millis=" + (System.nanoTime() - start) / 1_000_000);
  }
}
