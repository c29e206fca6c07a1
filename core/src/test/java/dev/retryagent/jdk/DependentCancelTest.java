package dev.retryagent.jdk;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.retryagent.engine.RetryEngine;
import dev.retryagent.policy.Mode;
import dev.retryagent.policy.Policy;
import dev.retryagent.testing.FakeTime;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * Cancelling, with {@code cancel(true)}, a stage that depends on {@code sendAsync}'s future after
 * the response arrived, while that stage reads a streaming body: since JDK 16 the dependent shares
 * the exchange's cancel hook, so the body's reader fails and the connection closes. Ours the same
 * (before: the caller's future was complete, the cancel reached nothing, the body streamed on).
 */
class DependentCancelTest {
  @Test
  void cancellingADependentThatReadsAStreamingBodyStopsTheBodyAsWithoutTheAgent() throws Exception {
    assumeTrue(Runtime.version().feature() >= 16, "the JDK's dependents cancel since 16");
    assertThat(readThenCancel(HttpClient.newHttpClient())).isEqualTo("closed, reader failed");

    FakeTime time = new FakeTime();
    RetryEngine engine =
        RetryEngine.builder()
            .clock(time)
            .sleeper(time)
            .scheduler(time)
            .mode(Mode.ENFORCE)
            .policy(Policy.defaults())
            .build();
    HttpClient ours = RetryingHttpClient.wrap(HttpClient.newHttpClient(), engine);
    assertThat(readThenCancel(ours)).isEqualTo("closed, reader failed");
  }

  /**
   * A loopback server answers with a chunked body whose first line it sends, then waits for the
   * client to close the connection; the dependent reads the lines and is cancelled once it has the
   * first. Says whether the server saw the connection close and the reader failed.
   */
  private static String readThenCancel(HttpClient client) throws Exception {
    CountDownLatch closed = new CountDownLatch(1);
    try (ServerSocket server = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      Thread serving =
          new Thread(
              () -> {
                try (Socket c = server.accept()) {
                  BufferedReader in =
                      new BufferedReader(
                          new InputStreamReader(c.getInputStream(), StandardCharsets.US_ASCII));
                  String line;
                  while ((line = in.readLine()) != null && !line.isEmpty()) {
                    // the request's head
                  }
                  OutputStream out = c.getOutputStream();
                  out.write(
                      ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n6\r\nline!\n\r\n")
                          .getBytes(StandardCharsets.US_ASCII));
                  out.flush();
                  c.setSoTimeout(10_000); // bounded: a client that never closes fails the test
                  if (in.read() < 0) {
                    closed.countDown();
                  }
                } catch (IOException e) {
                  if (!(e instanceof java.net.SocketTimeoutException)) {
                    closed.countDown(); // reset by the client's close
                  }
                }
              },
              "streaming-server");
      serving.setDaemon(true);
      serving.start();

      HttpRequest request =
          HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + server.getLocalPort() + "/"))
              .build();
      CompletableFuture<HttpResponse<Stream<String>>> f =
          client.sendAsync(request, HttpResponse.BodyHandlers.ofLines());
      CountDownLatch reading = new CountDownLatch(1);
      CompletableFuture<String> reader = new CompletableFuture<>();
      CompletableFuture<Void> dependent =
          f.thenAccept(
              r -> {
                try (Stream<String> lines = r.body()) {
                  lines.forEach(l -> reading.countDown());
                  reader.complete("reader ended");
                } catch (RuntimeException e) {
                  reader.complete("reader failed");
                }
              });
      assertThat(reading.await(10, TimeUnit.SECONDS)).isTrue();
      dependent.cancel(true);
      boolean sawClose = closed.await(10, TimeUnit.SECONDS);
      String read = reader.get(10, TimeUnit.SECONDS);
      serving.join(10_000);
      return (sawClose ? "closed" : "open") + ", " + read;
    }
  }
}
