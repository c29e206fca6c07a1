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
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * A legacy-shaped service that needs only {@code java.base} and {@code java.net.http} (so it runs
 * on a runtime limited to those and {@code java.instrument}), for unusual deployments of the agent
 * jar. It installs a default uncaught-exception handler that prints {@code uncaught=THREAD
 * EXCEPTION} (an application's handler must never see the agent's failures), and, with argument
 * {@code security-manager}, a {@code SecurityManager} (JDK 17 with {@code
 * -Djava.security.manager=allow} and a policy that grants the application's code). Then it makes a
 * GET with {@code send} and prints {@code status=} or {@code error=}, the same GET with {@code
 * sendAsync} ({@code async.status=} or {@code async.error=}, after at most 15 s), prints {@code
 * called=} and waits for the end of input.
 *
 * <p>Arguments: the URL, then optionally {@code security-manager}.
 */
public final class DeploymentShapeApp {
  private DeploymentShapeApp() {}

  @SuppressWarnings("removal")
  public static void main(String[] args) throws IOException, InterruptedException {
    Thread.setDefaultUncaughtExceptionHandler(
        new Thread.UncaughtExceptionHandler() {
          @Override
          public void uncaughtException(Thread t, Throwable e) {
            System.out.println("uncaught=" + t.getName() + " " + e);
          }
        });
    if (args.length > 1 && args[1].equals("security-manager")) {
      System.setSecurityManager(new SecurityManager());
    }
    HttpClient client =
        HttpClient.newBuilder()
            .connectTimeout(Duration.ofSeconds(10))
            .version(HttpClient.Version.HTTP_1_1)
            .build();
    try {
      HttpResponse<String> r =
          client.send(
              HttpRequest.newBuilder(URI.create(args[0])).timeout(Duration.ofSeconds(20)).build(),
              HttpResponse.BodyHandlers.ofString());
      System.out.println("status=" + r.statusCode());
    } catch (IOException | RuntimeException e) {
      System.out.println("error=" + e);
    }
    try {
      // bounded: a retry the agent failed to schedule would leave the future waiting forever
      HttpResponse<String> r =
          client
              .sendAsync(
                  HttpRequest.newBuilder(URI.create(args[0]))
                      .timeout(Duration.ofSeconds(20))
                      .build(),
                  HttpResponse.BodyHandlers.ofString())
              .get(15, TimeUnit.SECONDS);
      System.out.println("async.status=" + r.statusCode());
    } catch (ExecutionException | TimeoutException | RuntimeException e) {
      System.out.println("async.error=" + e);
    }
    System.out.println("called=true");
    BufferedReader in =
        new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    while (in.readLine() != null) {
      // the test ends the application by closing its input
    }
  }
}
