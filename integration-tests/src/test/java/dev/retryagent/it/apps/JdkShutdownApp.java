package dev.retryagent.it.apps;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.lang.reflect.InvocationTargetException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * Shuts a {@code java.net.http} client down (Java 21+) while one of its calls is in progress, as an
 * application would, and prints what it saw.
 *
 * <p>Arguments: {@code send|sendAsync close|shutdown|shutdownNow URL}. Starts the call (a GET of
 * {@code URL}; {@code send} on a thread of its own), prints {@code started=1}, waits for a line on
 * stdin, then calls the method on the client and prints {@code doneWhenItReturned=} (whether the
 * call had ended by then); then a second call, refused ({@code after.error=}, {@code
 * after.message=}); then the first call's {@code result.status=} and {@code result.body=}, or
 * {@code result.error=} and {@code result.message=} ({@code TimeoutException} when it has not ended
 * 15 s after the method returned); then {@code terminated=}. Methods of Java 21 are called by
 * reflection, so the class compiles for 17.
 */
public final class JdkShutdownApp {
  private JdkShutdownApp() {}

  public static void main(String[] args) throws Exception {
    boolean async = args[0].equals("sendAsync");
    String method = args[1];
    HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
    HttpRequest request = HttpRequest.newBuilder(URI.create(args[2])).build();
    CompletableFuture<HttpResponse<String>> call;
    if (async) {
      call = client.sendAsync(request, HttpResponse.BodyHandlers.ofString());
    } else {
      call = new CompletableFuture<>();
      Thread sender =
          new Thread(
              () -> {
                try {
                  call.complete(client.send(request, HttpResponse.BodyHandlers.ofString()));
                } catch (Exception e) {
                  call.completeExceptionally(e);
                }
              },
              "sender");
      sender.start();
    }
    System.out.println("started=1");
    new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8)).readLine();

    invoke(client, method);
    System.out.println("doneWhenItReturned=" + call.isDone());

    try {
      client.sendAsync(request, HttpResponse.BodyHandlers.ofString()).join();
      System.out.println("after.error=none");
    } catch (CompletionException e) {
      System.out.println("after.error=" + e.getCause().getClass().getName());
      System.out.println("after.message=" + e.getCause().getMessage());
    }

    try {
      HttpResponse<String> response = call.get(15, TimeUnit.SECONDS);
      System.out.println("result.status=" + response.statusCode());
      System.out.println("result.body=" + response.body());
    } catch (ExecutionException e) {
      System.out.println("result.error=" + e.getCause().getClass().getName());
      System.out.println("result.message=" + e.getCause().getMessage());
    } catch (TimeoutException e) {
      System.out.println("result.error=" + e.getClass().getName()); // not over 15 s later
    }
    if (!method.equals("shutdownNow")) {
      invoke(client, "close"); // the JDK terminates once its last request ended
    }
    System.out.println("terminated=" + HttpClient.class.getMethod("isTerminated").invoke(client));
  }

  private static void invoke(HttpClient client, String method) throws Exception {
    try {
      HttpClient.class.getMethod(method).invoke(client);
    } catch (InvocationTargetException e) {
      throw e.getCause() instanceof Exception ? (Exception) e.getCause() : e;
    }
  }
}
