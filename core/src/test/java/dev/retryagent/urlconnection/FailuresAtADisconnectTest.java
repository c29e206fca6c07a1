package dev.retryagent.urlconnection;

import static dev.retryagent.testing.ScriptedHttpServer.Action.ok;
import static dev.retryagent.testing.ScriptedHttpServer.Action.status;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.retryagent.engine.RetryEngine;
import dev.retryagent.engine.RetryEvent;
import dev.retryagent.policy.Mode;
import dev.retryagent.policy.Policy;
import dev.retryagent.testing.EventLines;
import dev.retryagent.testing.FakeTime;
import dev.retryagent.testing.ScriptedHttpServer;
import dev.retryagent.testing.TestEngines;
import java.io.IOException;
import java.io.OutputStream;
import java.net.HttpURLConnection;
import java.net.Proxy;
import java.net.URL;
import java.net.URLConnection;
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
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Failures around the application's {@code disconnect()}: the JDK's own disconnect throwing, and
 * the agent's end of the call it gives up failing. Each compared with a plain JDK connection given
 * the same script, requests counted at the server.
 */
class FailuresAtADisconnectTest {
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
    server.close();
  }

  /** Where the application stands when its {@code disconnect()} throws. */
  enum Before {
    /** Nothing done: the JDK's disconnect has no socket to close. */
    NOTHING,
    /** {@code connect()}: the JDK's disconnect closes its socket, the call is open. */
    CONNECTED
  }

  /**
   * The JDK's {@code disconnect()} throws (here after it closed the socket, as a failing progress
   * listener makes it throw): the application gets that exception, as without the agent, and its
   * connection then answers as the JDK's does after it. Before, the disconnect was never counted
   * done: the call after {@code connect()} stayed open and the response asked next was cancelled as
   * if a disconnect were still under way, nothing sent, where the JDK's connection connects again
   * and sends once.
   */
  @ParameterizedTest
  @EnumSource(Before.class)
  void aDisconnectTheJdkThrowsFromLeavesTheConnectionAsTheJdksIs(Before before) throws Exception {
    String plain;
    int plainRequests;
    try (ScriptedHttpServer jdkServer = new ScriptedHttpServer()) {
      script(jdkServer, before);
      HttpURLConnection p = new ThrowingDisconnect(new URL(jdkServer.url("/items")));
      plain = outcome(() -> disconnectThenAsk(p, before));
      plainRequests = settled(jdkServer);
    }

    script(server, before);
    EventLines told = new EventLines();
    RetryEngine engine = TestEngines.onePermitASecond(time, new AtomicReference<>(), told);
    HttpURLConnection c =
        (HttpURLConnection)
            RetryingUrlConnections.wrap(
                new ThrowingDisconnect(new URL(server.url("/items"))),
                null,
                engine,
                UrlTransport.DIRECT);
    String ours = outcome(() -> disconnectThenAsk(c, before));

    assertThat(ours).as("as the JDK's after the same throw").isEqualTo(plain);
    assertThat(plain)
        .isEqualTo(
            "disconnect: java.lang.IllegalStateException: a progress listener failed; "
                + (before == Before.CONNECTED ? "status 503" : "status 200"));
    assertThat(settled(server)).as("sent as the JDK's sends").isEqualTo(plainRequests);
    assertThat(plainRequests).isEqualTo(1);
    if (before == Before.CONNECTED) {
      // Ended between the steps: the JDK's connection sent it, not the engine.
      assertThat(told.lines).isEmpty();
    } else {
      assertThat(told.lines).containsExactly("ATTEMPT 1", "CALL_COMPLETE 1");
    }
  }

  /** What the agent's own disconnect of an attempt's connection cleans up after. */
  enum CleanUp {
    /** A 503 too long to read, let go before its retry: the retry's 200. */
    RETRIED_RESPONSE,
    /** Every attempt refused, each let go: the last one's failure, as the JDK's. */
    REFUSED_CONNECTION
  }

  /**
   * The agent's own disconnect of an attempt's connection (a clean-up the application never asked
   * for) throws, as the JDK's does for a failing progress listener: the application gets what it
   * would without that clean-up, the retry's 200 or the JDK's own {@code ConnectException}, and the
   * failure is reported as the agent's. Before, the disconnect's exception came out of {@code
   * getResponseCode()} in their place, and the call was never retried.
   */
  @ParameterizedTest
  @EnumSource(CleanUp.class)
  void aCleanUpDisconnectThatThrowsNeverReplacesTheOutcome(CleanUp cleanUp) throws Exception {
    URL url;
    if (cleanUp == CleanUp.REFUSED_CONNECTION) {
      int closedPort;
      try (java.net.ServerSocket s =
          new java.net.ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
        closedPort = s.getLocalPort();
      }
      url = new URL("http://127.0.0.1:" + closedPort + "/items");
    } else {
      server.enqueue(status(503).endless());
      server.otherwise(ok("fine"));
      url = new URL(server.url("/items"));
    }
    String plain =
        cleanUp == CleanUp.REFUSED_CONNECTION
            ? outcome(() -> "status " + new ThrowingDisconnect(url).getResponseCode())
            : null;
    List<RetryEvent> events = new CopyOnWriteArrayList<>();
    RetryEngine engine =
        TestEngines.engine(time, Mode.ENFORCE, r -> r, Policy.defaults().circuitBreaker(), events);
    HttpURLConnection c =
        (HttpURLConnection)
            RetryingUrlConnections.wrap(
                new ThrowingDisconnect(url), null, engine, (u, proxy) -> new ThrowingDisconnect(u));

    String ours = outcome(() -> "status " + c.getResponseCode());

    if (cleanUp == CleanUp.REFUSED_CONNECTION) {
      assertThat(ours).as("as the JDK's").isEqualTo(plain).startsWith("java.net.ConnectException");
      assertThat(events).as("retried, then given up").hasSizeGreaterThan(1);
    } else {
      assertThat(ours).as("the retry's").isEqualTo("status 200");
      assertThat(settled(server)).isEqualTo(2);
    }
  }

  /** 503 after {@code connect()} (which the call, were it still open, would retry); else 200. */
  private static void script(ScriptedHttpServer s, Before before) {
    if (before == Before.CONNECTED) {
      s.enqueue(status(503));
    }
    s.otherwise(ok("fine"));
  }

  /** The script: maybe {@code connect()}, {@code disconnect()} (its throw noted), the status. */
  private static String disconnectThenAsk(HttpURLConnection c, Before before) throws IOException {
    if (before == Before.CONNECTED) {
      c.connect();
    }
    String thrown;
    try {
      c.disconnect();
      thrown = "none";
    } catch (RuntimeException e) {
      thrown = e.getClass().getName() + ": " + e.getMessage();
    }
    return "disconnect: " + thrown + "; status " + c.getResponseCode();
  }

  /** A JDK connection whose {@code disconnect()} throws once the JDK's disconnect is through. */
  private static final class ThrowingDisconnect extends ForwardingConnection {
    ThrowingDisconnect(URL url) throws IOException {
      super(url);
    }

    @Override
    public void disconnect() {
      real.disconnect();
      throw new IllegalStateException("a progress listener failed");
    }
  }

  /** Where the failure of the agent's end of the call would have come out. */
  enum Ender {
    /** The application's own {@code disconnect()}, the lock free. */
    DISCONNECT,
    /** A setter of the application's that held the lock as another thread disconnected. */
    SETTER,
    /** The response step that took the lock next. */
    RESPONSE_STEP
  }

  /**
   * The agent's end of a call the application disconnected between its body and its response fails
   * (here the transport's look at the attempt's connection throws): the application's {@code
   * disconnect()}, its setter or its response step goes on as the JDK's does, and the JDK's
   * connection sends its buffered body once, as without the agent. Before, that failure came out of
   * the application's {@code disconnect()}, a setter or {@code getResponseCode()}, which the JDK's
   * never throw there.
   */
  @ParameterizedTest
  @EnumSource(Ender.class)
  void aFailureEndingTheCallNeverReachesTheApplication(Ender ender) throws Exception {
    String plain;
    int plainRequests;
    try (ScriptedHttpServer jdkServer = new ScriptedHttpServer()) {
      jdkServer.otherwise(ok("fine"));
      HttpURLConnection p =
          (HttpURLConnection) new URL(jdkServer.url("/items")).openConnection(Proxy.NO_PROXY);
      writeBody(p);
      p.disconnect();
      plain = outcome(() -> setting(p) + " / status " + p.getResponseCode());
      plainRequests = settled(jdkServer);
    }

    server.otherwise(ok("fine"));
    EventLines told = new EventLines();
    RetryEngine engine = TestEngines.onePermitASecond(time, new AtomicReference<>(), told);
    UrlTransport failingLook =
        new UrlTransport() {
          @Override
          public URLConnection open(URL url, Proxy proxy) throws IOException {
            return UrlTransport.DIRECT.open(url, proxy);
          }

          @Override
          public int rewrites(HttpURLConnection attempt) {
            throw new IllegalStateException("the transport's look failed");
          }
        };
    HttpURLConnection c =
        (HttpURLConnection)
            RetryingUrlConnections.wrap(
                new URL(server.url("/items")).openConnection(), null, engine, failingLook);
    UrlExchange x = ((RetryingHttpConnection) c).view().exchange();
    writeBody(c);
    String ours;
    switch (ender) {
      case DISCONNECT:
        ours =
            outcome(
                () -> {
                  c.disconnect();
                  return setting(c) + " / status " + c.getResponseCode();
                });
        break;
      case SETTER:
        {
          // The setter waits for the lock the test holds, so that it holds the lock as the other
          // thread's disconnect tries it; its release ends the call.
          ReentrantLock lock = x.lock();
          CompletableFuture<String> setter;
          lock.lock();
          try {
            setter = CompletableFuture.supplyAsync(() -> setting(c), threads);
            await().atMost(Duration.ofSeconds(5)).until(lock::hasQueuedThreads);
            CompletableFuture.runAsync(c::disconnect, threads).get(10, TimeUnit.SECONDS);
          } finally {
            lock.unlock(); // a raw release: the setter's own release is the one under test
          }
          String set = setter.get(10, TimeUnit.SECONDS);
          ours = outcome(() -> set + " / status " + c.getResponseCode());
          break;
        }
      case RESPONSE_STEP:
        {
          // The disconnect finds the lock held and returns; the response step takes it first.
          ReentrantLock lock = x.lock();
          CompletableFuture<String> response;
          lock.lock();
          try {
            CompletableFuture.runAsync(c::disconnect, threads).get(10, TimeUnit.SECONDS);
            // This thread holds the lock: its setter's release leaves the mark to the step.
            String set = setting(c);
            response =
                CompletableFuture.supplyAsync(
                    () -> outcome(() -> set + " / status " + c.getResponseCode()), threads);
            await().atMost(Duration.ofSeconds(5)).until(lock::hasQueuedThreads);
          } finally {
            lock.unlock(); // a raw release: the step finds the mark
          }
          ours = response.get(10, TimeUnit.SECONDS);
          break;
        }
      default:
        throw new AssertionError(ender);
    }

    assertThat(x.done()).as("the call ended with the disconnect").isTrue();
    assertThat(ours).as("as the JDK's after the same disconnect").isEqualTo(plain);
    assertThat(plain).endsWith(" / status 200");
    assertThat(settled(server)).as("sent once, as the JDK's sends").isEqualTo(plainRequests);
    assertThat(plainRequests).isEqualTo(1);
    assertThat(told.lines)
        .as("given up as the application's cancel")
        .containsExactly("ATTEMPT 1", "GIVE_UP 1 CANCELLED", "CALL_COMPLETE 1 CANCELLED");
  }

  /**
   * A setter that takes the connection's lock (the timeout setters no longer wait for it): "set",
   * or the JDK's refusal.
   */
  private static String setting(HttpURLConnection c) {
    try {
      c.setRequestProperty("X-Set", "meanwhile");
      return "set";
    } catch (RuntimeException e) {
      return e.getClass().getName() + ": " + e.getMessage();
    }
  }

  /** A PUT whose body the JDK buffers, written and closed: sent with the response. */
  private static void writeBody(HttpURLConnection c) throws IOException {
    c.setRequestMethod("PUT");
    c.setDoOutput(true);
    try (OutputStream out = c.getOutputStream()) {
      out.write("{}".getBytes(StandardCharsets.UTF_8));
    }
  }

  /** What the application gets: the steps' answer, or the exception of the last. */
  private static String outcome(Steps steps) {
    try {
      return steps.run();
    } catch (IOException | RuntimeException e) {
      return e.getClass().getName() + ": " + e.getMessage();
    }
  }

  private interface Steps {
    String run() throws IOException;
  }

  /** The requests {@code s} read, once every one begun is read. */
  private static int settled(ScriptedHttpServer s) {
    await().atMost(Duration.ofSeconds(10)).until(() -> s.requestsStarted() == s.requestCount());
    return s.requestCount();
  }
}
