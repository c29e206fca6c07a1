package dev.retryagent.guarantees;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retryagent.engine.RetryEngine;
import dev.retryagent.engine.RetryEvent;
import dev.retryagent.engine.RetryListener;
import dev.retryagent.jdk.RetryingHttpClient;
import dev.retryagent.policy.CircuitBreakerPolicy;
import dev.retryagent.policy.Mode;
import dev.retryagent.policy.Policy;
import dev.retryagent.policy.RetryPolicy;
import dev.retryagent.policy.UnsafeMethods;
import dev.retryagent.testing.FakeTime;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * java.net.http with {@code -Djdk.httpclient.enableAllMethodRetry}: the JDK sends a POST again by
 * itself when the connection closed before any byte of the answer, and when that resend's
 * connection is refused the attempt ends in a {@code ConnectException}, though the POST reached the
 * server. Alone that read as "never sent", and {@code if-not-sent} retried it: the server got the
 * POST twice (once more when it listened again) where the client alone sent it once. The JDK reads
 * the property once per JVM, so the comparison runs in a JVM of its own ({@link Child}).
 */
class JdkAllMethodResendTest {
  @Test
  void aPostTheJdkResendsToARefusingHostIsNotSentAgain(@TempDir Path dir) throws Exception {
    Path log = dir.resolve("child.txt");
    Process child =
        new ProcessBuilder(
                Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-Djdk.httpclient.enableAllMethodRetry=true",
                "-cp",
                System.getProperty("java.class.path"),
                Child.class.getName())
            .redirectErrorStream(true)
            .redirectOutput(log.toFile())
            .start();
    // Bounded: a child that hangs is ended, and the test fails with what it printed.
    boolean ended = child.waitFor(60, TimeUnit.SECONDS);
    if (!ended) {
      child.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
    }
    String out = Files.readString(log, StandardCharsets.UTF_8);
    assertThat(ended).as(out).isTrue();
    assertThat(child.exitValue()).as(out).isZero();

    // The JDK alone: one POST, then its resend refused. Ours the same (before: a retry, 2 POSTs).
    assertThat(out).contains("plain: 1 POST, java.net.ConnectException");
    assertThat(out).contains("ours: 1 POST, java.net.ConnectException, 0 retries");
    // A POST whose own connection is refused is still retried.
    assertThat(out).contains("refused: 2 retries");
  }

  /** Runs each side on a fresh host; prints what the host and the application got. */
  public static final class Child {
    public static void main(String[] args) throws Exception {
      try (Host host = new Host()) {
        String got = post(null, host);
        System.out.println("plain: " + host.posts() + " POST, " + got);
      }
      AtomicInteger retries = new AtomicInteger();
      try (Host host = new Host()) {
        String got = post(engine(retries, host), host);
        System.out.println("ours: " + host.posts() + " POST, " + got + ", " + retries + " retries");
      }
      AtomicInteger refusedRetries = new AtomicInteger();
      int port;
      try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getByName("127.0.0.1"))) {
        port = s.getLocalPort();
      }
      HttpClient refused =
          RetryingHttpClient.wrap(HttpClient.newHttpClient(), engine(refusedRetries, null));
      try {
        refused.send(request(port), HttpResponse.BodyHandlers.ofString());
      } catch (IOException expected) {
        // the ConnectException, after the retries
      }
      System.out.println("refused: " + refusedRetries + " retries");
    }

    private static String post(RetryEngine engine, Host host) {
      HttpClient real = HttpClient.newHttpClient();
      HttpClient client = engine == null ? real : RetryingHttpClient.wrap(real, engine);
      try {
        return ""
            + client.send(request(host.port), HttpResponse.BodyHandlers.ofString()).statusCode();
      } catch (IOException | InterruptedException e) {
        return e.getClass().getName();
      } finally {
        host.settle(); // every request it read counted before the count is read
      }
    }

    private static HttpRequest request(int port) {
      return HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/pay"))
          .POST(HttpRequest.BodyPublishers.ofString("{}"))
          .build();
    }

    private static RetryEngine engine(AtomicInteger retries, Host host) {
      FakeTime time = new FakeTime();
      return RetryEngine.builder()
          .clock(time)
          .sleeper(time)
          .scheduler(time)
          .mode(Mode.ENFORCE)
          .policy(
              new Policy(
                  "test",
                  RetryPolicy.builder()
                      .maxAttempts(3)
                      .unsafeMethods(UnsafeMethods.IF_NOT_SENT)
                      .build(),
                  Policy.defaults().budget(),
                  CircuitBreakerPolicy.defaults(),
                  Policy.defaults().rateLimit()))
          .listener(
              new RetryListener() {
                @Override
                public void onRetry(RetryEvent e) {
                  retries.incrementAndGet();
                  if (host != null) {
                    host.listenAgain(); // a retry would find the host back
                  }
                }
              })
          .build();
    }
  }

  /**
   * A loopback host that reads the first POST and closes without a byte of answer, having stopped
   * listening first (so the JDK's resend is refused); after {@link #listenAgain} it answers 200.
   */
  static final class Host implements AutoCloseable {
    private final AtomicInteger posts = new AtomicInteger();
    final int port;
    private volatile ServerSocket listening;
    private volatile Thread serving;

    Host() throws IOException {
      ServerSocket s = new ServerSocket();
      s.setReuseAddress(true);
      s.bind(new InetSocketAddress(InetAddress.getByName("127.0.0.1"), 0));
      port = s.getLocalPort();
      serve(s, true);
    }

    int posts() {
      return posts.get();
    }

    void listenAgain() {
      try {
        ServerSocket s = new ServerSocket();
        s.setReuseAddress(true);
        s.bind(new InetSocketAddress(InetAddress.getByName("127.0.0.1"), port));
        serve(s, false);
      } catch (IOException e) {
        throw new java.io.UncheckedIOException(e);
      }
    }

    private void serve(ServerSocket s, boolean silentOnce) {
      listening = s;
      Thread t =
          new Thread(
              () -> {
                try {
                  while (true) {
                    try (Socket c = s.accept()) {
                      RawRequests.read(c.getInputStream());
                      posts.incrementAndGet();
                      if (silentOnce) {
                        s.close(); // the JDK's resend is refused
                        continue; // and this connection closes without a byte
                      }
                      c.getOutputStream()
                          .write(
                              "HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                                  .getBytes(StandardCharsets.US_ASCII));
                    }
                  }
                } catch (IOException closed) {
                  // the listener closed: done
                }
              },
              "host-" + port);
      t.setDaemon(true);
      serving = t;
      t.start();
    }

    /** Waits for the thread serving now to end, once the call ended (its listener closed). */
    void settle() {
      try {
        listening.close();
        serving.join(5_000);
      } catch (IOException | InterruptedException e) {
        throw new IllegalStateException(e);
      }
    }

    @Override
    public void close() throws IOException {
      listening.close();
    }
  }
}
