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
    String out =
        runChild(
            dir,
            Path.of(System.getProperty("java.home"), "bin", "java"),
            "-Djdk.httpclient.enableAllMethodRetry=true");

    // The JDK alone: one POST, then its resend refused. Ours the same (before: a retry, 2 POSTs).
    assertThat(out).contains("plain: 1 POST, java.net.ConnectException");
    assertThat(out).contains("ours: 1 POST, java.net.ConnectException, 0 retries");
    // A POST whose own connection is refused is still retried.
    assertThat(out).contains("refused: 2 retries");
  }

  /**
   * The same switch set in {@code ${java.home}/conf/net.properties}, where the JDK reads it too
   * ({@code NetProperties}): the agent read the system property alone, set no send watch, and
   * retried the POST (before: "ours: 2 POST, 200, 1 retries"). The JDK's own conf is not touched:
   * the child runs on a copy of java.home made of hard links, with its own net.properties.
   */
  @Test
  void aPostTheJdkResendsBecauseOfNetPropertiesIsNotSentAgain(@TempDir Path dir) throws Exception {
    Path home = linkedJavaHome(dir.resolve("jdk"));
    String out = runChild(dir, home.resolve("bin").resolve("java"));

    assertThat(out).contains("plain: 1 POST, java.net.ConnectException");
    assertThat(out).contains("ours: 1 POST, java.net.ConnectException, 0 retries");
    assertThat(out).contains("refused: 2 retries");
  }

  private static String runChild(Path dir, Path javaExe, String... options) throws Exception {
    Path log = dir.resolve("child.txt");
    java.util.List<String> command = new java.util.ArrayList<>();
    command.add(javaExe.toString());
    command.addAll(java.util.Arrays.asList(options));
    command.add("-cp");
    command.add(System.getProperty("java.class.path"));
    command.add(Child.class.getName());
    Process child =
        new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(log.toFile()).start();
    // Bounded: a child that hangs is ended, and the test fails with what it printed.
    boolean ended = child.waitFor(60, TimeUnit.SECONDS);
    if (!ended) {
      child.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
    }
    String out = Files.readString(log, StandardCharsets.UTF_8);
    assertThat(ended).as(out).isTrue();
    assertThat(child.exitValue()).as(out).isZero();
    return out;
  }

  /**
   * A java.home whose files are hard links to this JVM's (the JVM finds its home from where its
   * library really is, so symbolic links would lead back to the real one), with a net.properties of
   * its own that turns the all-method resend on. Skipped where hard links cannot be made (the
   * temporary folder on another file system).
   */
  private static Path linkedJavaHome(Path target) throws IOException {
    Path source = Path.of(System.getProperty("java.home")).toRealPath();
    try (java.util.stream.Stream<Path> paths = Files.walk(source)) {
      for (Path p : (Iterable<Path>) paths::iterator) {
        Path to = target.resolve(source.relativize(p).toString());
        if (Files.isSymbolicLink(p)) {
          if (Files.exists(p)) { // a dangling one (src.zip not installed) is left out
            Files.createSymbolicLink(to, p.toRealPath());
          }
        } else if (Files.isDirectory(p)) {
          Files.createDirectories(to);
        } else {
          try {
            Files.createLink(to, p);
          } catch (IOException | UnsupportedOperationException e) {
            org.junit.jupiter.api.Assumptions.assumeTrue(false, "no hard links here: " + e);
          }
        }
      }
    }
    Path netProperties = target.resolve("conf").resolve("net.properties");
    // Never through a symbolic link into the real JDK (a linked conf folder): only the copy's file.
    org.junit.jupiter.api.Assumptions.assumeTrue(
        netProperties.getParent().toRealPath().startsWith(target.toRealPath()),
        "conf is a link into the real JDK");
    String original = Files.readString(netProperties, StandardCharsets.ISO_8859_1);
    Files.delete(netProperties); // a link (or a link's target) shared with the real JDK: not edited
    Files.writeString(
        netProperties,
        original + "\njdk.httpclient.enableAllMethodRetry=true\n",
        StandardCharsets.ISO_8859_1);
    return target;
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
