package dev.retryagent.it.apps;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.TreeSet;
import java.util.concurrent.CompletionException;

/**
 * A service that stays up and does what it is told on stdin, one command a line, for tests that act
 * on a running JVM (reload, attach, JMX, Prometheus). It has no retry code. It creates its {@code
 * java.net.http} client first, then prints {@code ready=PID}.
 *
 * <ul>
 *   <li>{@code call NAME|METHOD|URL|HEADERS|BODY}: {@code send}; headers as {@code
 *       Name=value;Name2=value2} (may be empty), body may be empty. Prints {@code NAME.status=} and
 *       {@code NAME.body=}, or {@code NAME.error=} (exception class) and {@code NAME.message=},
 *       then {@code NAME.done=MILLIS}.
 *   <li>{@code async NAME|...}: the same with {@code sendAsync}.
 *   <li>{@code threads NAME}: prints {@code NAME.threads=} the names of the live threads, sorted.
 *   <li>{@code exit}, or the end of input: returns from {@code main}, so the JVM exits normally
 *       (shutdown hooks run) once no other non-daemon thread is left.
 * </ul>
 */
public final class OpsApp {
  private OpsApp() {}

  public static void main(String[] args) throws IOException {
    HttpClient client =
        HttpClient.newBuilder()
            .connectTimeout(Duration.ofSeconds(10))
            .version(HttpClient.Version.HTTP_1_1)
            .build();
    System.out.println("ready=" + ProcessHandle.current().pid());
    BufferedReader in =
        new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    for (String line = in.readLine(); line != null; line = in.readLine()) {
      String[] parts = line.split(" ", 2);
      switch (parts[0]) {
        case "call":
          call(client, false, parts[1].split("\\|", -1));
          break;
        case "async":
          call(client, true, parts[1].split("\\|", -1));
          break;
        case "threads":
          TreeSet<String> names = new TreeSet<>();
          for (Thread t : Thread.getAllStackTraces().keySet()) {
            names.add(t.getName());
          }
          System.out.println(parts[1] + ".threads=" + String.join(",", names));
          break;
        case "exit":
          return;
        default:
          System.out.println("unknown=" + parts[0]);
      }
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
    System.out.println(name + ".done=" + (System.nanoTime() - start) / 1_000_000);
  }
}
