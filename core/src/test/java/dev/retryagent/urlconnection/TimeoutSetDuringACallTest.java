package dev.retryagent.urlconnection;

import static dev.retryagent.testing.ScriptedHttpServer.Action.ok;
import static dev.retryagent.testing.ScriptedHttpServer.Action.status;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.retryagent.engine.RetryEngine;
import dev.retryagent.testing.EventLines;
import dev.retryagent.testing.FakeTime;
import dev.retryagent.testing.ScriptedHttpServer;
import dev.retryagent.testing.TestEngines;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.HttpURLConnection;
import java.net.InetAddress;
import java.net.Proxy;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URL;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.ReentrantLock;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * {@code setConnectTimeout}/{@code setReadTimeout} from another thread while the application's call
 * runs on one: the JDK's setter is a field write and returns at once; the agent's waited for the
 * connection's lock, held by the running call for as long as it runs, its waits between attempts
 * among it.
 */
class TimeoutSetDuringACallTest {
  private final ScriptedHttpServer server = newServer();
  private final FakeTime time = new FakeTime();

  /** The application's other threads: not the common pool, which may have one thread. */
  private final ExecutorService threads = Executors.newCachedThreadPool();

  private static ScriptedHttpServer newServer() {
    try {
      return new ScriptedHttpServer();
    } catch (IOException e) {
      throw new IllegalStateException(e);
    }
  }

  @AfterEach
  void stop() throws IOException {
    threads.shutdownNow();
    UrlExchange.beforeRunning = null;
    server.close();
  }

  /**
   * The setters from another thread during the call: the JDK's return at once (a negative value
   * refused with its {@code IllegalArgumentException}), and its getters answer the value set. The
   * agent's do the same during the wait before a retry, where they used to wait for the whole call,
   * and the retry is made with the new values.
   */
  @Test
  void aTimeoutSetFromAnotherThreadDuringTheCallReturnsAtOnceAsTheJdksDoes() throws Exception {
    String plain;
    try (ServerSocket held = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      HttpURLConnection p =
          (HttpURLConnection)
              new URL("http://127.0.0.1:" + held.getLocalPort() + "/items")
                  .openConnection(Proxy.NO_PROXY);
      CompletableFuture<Integer> call =
          CompletableFuture.supplyAsync(
              () -> {
                try {
                  return p.getResponseCode();
                } catch (IOException e) {
                  throw new IllegalStateException(e);
                }
              },
              threads);
      try (Socket s = held.accept()) {
        // The request's head read: the JDK's call is waiting for the response.
        BufferedReader in =
            new BufferedReader(new InputStreamReader(s.getInputStream(), StandardCharsets.UTF_8));
        for (String line = in.readLine(); line != null && !line.isEmpty(); ) {
          line = in.readLine();
        }
        plain = setFromAnotherThread(p);
        assertThat(call).as("the JDK's call still waiting for its response").isNotDone();
        OutputStream out = s.getOutputStream();
        out.write(
            "HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                .getBytes(StandardCharsets.US_ASCII));
        out.flush();
        assertThat(call.get(10, TimeUnit.SECONDS)).isEqualTo(200);
      }
    }

    server.enqueue(status(503));
    server.otherwise(ok("fine"));
    EventLines told = new EventLines();
    AtomicReference<Runnable> duringTheWait = new AtomicReference<>();
    RetryEngine engine = TestEngines.onePermitASecond(time, duringTheWait, told);
    List<HttpURLConnection> attempts = new CopyOnWriteArrayList<>();
    UrlTransport recording =
        (url, proxy) -> {
          HttpURLConnection a = (HttpURLConnection) UrlTransport.DIRECT.open(url, proxy);
          attempts.add(a);
          return a;
        };
    HttpURLConnection c =
        (HttpURLConnection)
            RetryingUrlConnections.wrap(
                new URL(server.url("/items")).openConnection(), null, engine, recording);
    ReentrantLock lock = ((RetryingHttpConnection) c).view().exchange().lock();
    AtomicReference<String> ours = new AtomicReference<>();
    // During the wait for the retry's permit, the call holding the connection's lock.
    duringTheWait.set(() -> ours.set(setFromAnotherThread(c, lock)));

    assertThat(c.getResponseCode()).isEqualTo(200);

    assertThat(ours.get()).as("as the JDK's setters answer during its call").isEqualTo(plain);
    assertThat(plain)
        .isEqualTo("java.lang.IllegalArgumentException: timeouts can't be negative; 1234/4321");
    assertThat(told.lines).contains("RETRY 1");
    assertThat(attempts).as("one retry").hasSize(1);
    assertThat(attempts.get(0).getConnectTimeout()).as("the retry's").isEqualTo(1234);
    assertThat(attempts.get(0).getReadTimeout()).as("the retry's").isEqualTo(4321);
    assertThat(c.getConnectTimeout()).isEqualTo(1234);
    assertThat(c.getReadTimeout()).isEqualTo(4321);
    assertThat(server.requestCount()).isEqualTo(2);
  }

  private String setFromAnotherThread(HttpURLConnection c) {
    return setFromAnotherThread(c, null);
  }

  /**
   * From another thread: a negative read timeout, then 1234 ms to connect and 4321 ms to read; what
   * each setter answered and the getters then, or "waiting" for a setter still waiting for {@code
   * lock} (the agent's connection's) while this thread's call holds it.
   */
  private String setFromAnotherThread(HttpURLConnection c, ReentrantLock lock) {
    CompletableFuture<String> set =
        CompletableFuture.supplyAsync(
            () -> {
              String negative;
              try {
                c.setReadTimeout(-1);
                negative = "taken";
              } catch (IllegalArgumentException e) {
                negative = e.getClass().getName() + ": " + e.getMessage();
              }
              c.setConnectTimeout(1234);
              c.setReadTimeout(4321);
              return negative + "; " + c.getConnectTimeout() + "/" + c.getReadTimeout();
            },
            threads);
    await()
        .atMost(Duration.ofSeconds(10))
        .until(() -> set.isDone() || (lock != null && lock.hasQueuedThreads()));
    return set.isDone() ? set.join() : "waiting";
  }

  /**
   * A timeout set while another holder had the lock (here the test, as another thread's setter
   * would), the lock then let go without the holder's own look: the application's next step, begun
   * after the setter returned, is made with it, as with the JDK's connection, whose step reads the
   * field the setter wrote. Checked against a deliberate break (the step's look at a timeout set
   * meanwhile removed: the first attempt connected with the old one).
   */
  @Test
  void aTimeoutSetWhileTheLockWasHeldIsTheNextStepsConfiguration() throws Exception {
    server.otherwise(ok("fine"));
    RetryEngine engine =
        TestEngines.onePermitASecond(time, new AtomicReference<>(), new EventLines());
    HttpURLConnection template =
        (HttpURLConnection) new URL(server.url("/items")).openConnection(Proxy.NO_PROXY);
    HttpURLConnection c =
        (HttpURLConnection)
            RetryingUrlConnections.wrap(template, null, engine, UrlTransport.DIRECT);
    c.setReadTimeout(1000);
    ReentrantLock lock = ((RetryingHttpConnection) c).view().exchange().lock();
    lock.lock();
    try {
      CompletableFuture.runAsync(() -> c.setReadTimeout(4321), threads).get(10, TimeUnit.SECONDS);
    } finally {
      lock.unlock(); // a raw release: the step finds the value
    }
    assertThat(template.getReadTimeout()).as("not yet written").isEqualTo(1000);
    AtomicReference<Integer> asTheCallRuns = new AtomicReference<>();
    UrlExchange.beforeRunning = () -> asTheCallRuns.set(template.getReadTimeout());

    assertThat(c.getResponseCode()).isEqualTo(200);

    assertThat(asTheCallRuns.get()).as("the first attempt's, the template's").isEqualTo(4321);
    assertThat(c.getReadTimeout()).isEqualTo(4321);
  }
}
