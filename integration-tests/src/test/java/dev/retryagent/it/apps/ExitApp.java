package dev.retryagent.it.apps;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.TreeMap;
import okhttp3.Call;
import okhttp3.Callback;
import okhttp3.OkHttpClient;
import okhttp3.Request;
import okhttp3.Response;

/**
 * Ends while calls wait for their retries, as an application's {@code main} does.
 *
 * <p>Arguments: {@code return|exit:CODE WAITING_URL FAILING_URL [okhttp]}. Starts a {@code
 * sendAsync} and a {@code send} (on a daemon thread) of {@code WAITING_URL} (whose server asks for
 * a retry much later), then a {@code send} of {@code FAILING_URL} to its end ({@code
 * failing.status=}); with {@code okhttp}, also an OkHttp {@code enqueue} of {@code WAITING_URL}.
 * Prints {@code started=1} and waits for a line on stdin; then prints one {@code thread.NAME=} line
 * per thread named {@code retry-agent-*} ({@code daemon|loader|handler|group}: whether it is a
 * daemon, its context class loader is the system loader, its uncaught-exception handler is not its
 * thread group, it is outside the application's thread group) and {@code ending=1}, then returns
 * from {@code main} or calls {@code System.exit(CODE)}.
 */
public final class ExitApp {
  private ExitApp() {}

  /** In the application's group, or one under it. */
  private static boolean inMainGroup(Thread t) {
    ThreadGroup main = Thread.currentThread().getThreadGroup();
    for (ThreadGroup g = t.getThreadGroup(); g != null; g = g.getParent()) {
      if (g == main) {
        return true;
      }
    }
    return false;
  }

  public static void main(String[] args) throws Exception {
    String end = args[0];
    URI waiting = URI.create(args[1]);
    HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
    HttpRequest request = HttpRequest.newBuilder(waiting).build();
    client.sendAsync(request, HttpResponse.BodyHandlers.ofString());
    Thread sender =
        new Thread(
            () -> {
              try {
                client.send(request, HttpResponse.BodyHandlers.ofString());
              } catch (IOException | InterruptedException e) {
                // the JVM ends before
              }
            },
            "sender");
    sender.setDaemon(true);
    sender.start();
    if (args.length > 3 && args[3].equals("okhttp")) {
      OkHttpCall.enqueue(args[1]);
    }
    HttpResponse<String> failing =
        client.send(
            HttpRequest.newBuilder(URI.create(args[2])).build(),
            HttpResponse.BodyHandlers.ofString());
    System.out.println("failing.status=" + failing.statusCode());
    System.out.println("started=1");
    new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8)).readLine();

    Map<String, String> ours = new TreeMap<>();
    for (Thread t : Thread.getAllStackTraces().keySet()) {
      if (t.getName().startsWith("retry-agent-")) {
        ours.put(
            t.getName(),
            t.isDaemon()
                + "|"
                + (t.getContextClassLoader() == ClassLoader.getSystemClassLoader())
                + "|"
                + (t.getUncaughtExceptionHandler() != t.getThreadGroup())
                + "|"
                + !inMainGroup(t));
      }
    }
    ours.forEach((name, what) -> System.out.println("thread." + name + "=" + what));
    System.out.println("threads=" + ours.keySet());
    System.out.println("ending=1");
    System.out.flush();
    if (end.startsWith("exit:")) {
      System.exit(Integer.parseInt(end.substring("exit:".length())));
    }
  }

  /** In a class of its own: without OkHttp on the class path, nothing loads OkHttp's classes. */
  private static final class OkHttpCall {
    static void enqueue(String url) {
      new OkHttpClient()
          .newCall(new Request.Builder().url(url).build())
          .enqueue(
              new Callback() {
                @Override
                public void onFailure(Call call, IOException e) {}

                @Override
                public void onResponse(Call call, Response response) {
                  response.close();
                }
              });
    }
  }
}
