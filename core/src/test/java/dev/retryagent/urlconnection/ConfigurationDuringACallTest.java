package dev.retryagent.urlconnection;

import static dev.retryagent.testing.ScriptedHttpServer.Action.ok;
import static dev.retryagent.testing.ScriptedHttpServer.Action.status;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.retryagent.engine.RetryEngine;
import dev.retryagent.policy.Mode;
import dev.retryagent.policy.Policy;
import dev.retryagent.testing.EventLines;
import dev.retryagent.testing.FakeTime;
import dev.retryagent.testing.ScriptedHttpServer;
import dev.retryagent.testing.TestEngines;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.Authenticator;
import java.net.HttpURLConnection;
import java.net.InetAddress;
import java.net.Proxy;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URL;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.ReentrantLock;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The connection's configuration methods (other than the timeouts: {@link
 * TimeoutSetDuringACallTest}) from another thread while the application's call runs on one. The
 * JDK's (read in JDK 17 and 25) refuse the setters with an {@code IllegalStateException}, at once
 * or once the running step lets the JDK's own lock go, and answer the getters. The agent's setters
 * that record took the connection's lock, held by the running call for as long as it runs, its
 * waits between attempts among it; the others asked the previous attempt's connection during such a
 * wait, which the agent had disconnected: taken, and copied into the retry.
 */
class ConfigurationDuringACallTest {
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

  /**
   * During the wait for a retry after a 503 whose body the agent read (its connection kept), or one
   * too long to read (its connection disconnected), as the JDK's during its call: the setters the
   * agent records refused at once, where they waited for the whole call; {@code
   * getRequestProperties()} waits for the call, as the JDK's for its step, where it answered the
   * disconnected attempt's map; {@code getErrorStream()} null, where it was the 503's body; {@code
   * setUseCaches(false)} and the like refused, where after a disconnected attempt they were taken,
   * and copied into the retry.
   */
  @ParameterizedTest
  @ValueSource(booleans = {false, true})
  void theConfigurationMethodsAnswerAsTheJdksDuringTheCallWithoutWaitingForIt(boolean tooLong)
      throws Exception {
    Map<String, String> plain;
    String plainProperties;
    try (ServerSocket held = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      HttpURLConnection p =
          (HttpURLConnection)
              new URL("http://127.0.0.1:" + held.getLocalPort() + "/items")
                  .openConnection(Proxy.NO_PROXY);
      CompletableFuture<Integer> call = CompletableFuture.supplyAsync(() -> code(p), threads);
      try (Socket s = held.accept()) {
        // The request's head read: the JDK's call is waiting for the response.
        BufferedReader in =
            new BufferedReader(new InputStreamReader(s.getInputStream(), StandardCharsets.UTF_8));
        for (String line = in.readLine(); line != null && !line.isEmpty(); ) {
          line = in.readLine();
        }
        // Each from a thread of its own: some of the JDK's wait for its step's lock.
        Map<String, Future<String>> asked = new LinkedHashMap<>();
        for (Map.Entry<String, Callable<Object>> e : methods(p).entrySet()) {
          asked.put(e.getKey(), threads.submit(() -> answer(e.getValue())));
        }
        AtomicReference<Thread> asking = new AtomicReference<>();
        Future<String> properties = threads.submit(() -> properties(p, asking));
        await()
            .atMost(Duration.ofSeconds(10))
            .until(() -> asking.get() != null && parked(asking.get()));
        assertThat(properties)
            .as("the JDK's getRequestProperties() waits for its step's lock")
            .isNotDone();
        assertThat(call).as("the JDK's call still waiting for its response").isNotDone();
        OutputStream out = s.getOutputStream();
        out.write(
            "HTTP/1.1 200 OK\r\nContent-Length: 4\r\nConnection: close\r\n\r\nfine"
                .getBytes(StandardCharsets.US_ASCII));
        out.flush();
        assertThat(call.get(10, TimeUnit.SECONDS)).isEqualTo(200);
        plain = new LinkedHashMap<>();
        for (Map.Entry<String, Future<String>> e : asked.entrySet()) {
          plain.put(e.getKey(), e.getValue().get(10, TimeUnit.SECONDS));
        }
        plainProperties = properties.get(10, TimeUnit.SECONDS);
      }
    }

    server.enqueue(tooLong ? status(503).endless() : status(503).body("busy"));
    server.otherwise(ok("fine"));
    EventLines told = new EventLines();
    AtomicReference<Runnable> duringTheWait = new AtomicReference<>();
    // Without a rate limit the 503 is let go before the wait (its connection kept, or
    // disconnected when too long to read); with one it would be kept through the wait.
    RetryEngine engine = engine(duringTheWait, told);
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
    AtomicReference<Map<String, String>> ours = new AtomicReference<>();
    AtomicReference<Future<String>> ourProperties = new AtomicReference<>();
    // During the wait before the retry, the call holding the connection's lock.
    duringTheWait.set(
        () -> {
          ours.set(askFromAnotherThread(c, lock));
          ourProperties.set(threads.submit(() -> properties(c, new AtomicReference<>())));
          await().atMost(Duration.ofSeconds(10)).until(lock::hasQueuedThreads);
        });

    assertThat(c.getResponseCode()).isEqualTo(200);

    assertThat(told.lines).contains("RETRY 1");
    assertThat(attempts).as("one retry").hasSize(1);
    HttpURLConnection retry = attempts.get(0);
    assertThat(retry.getUseCaches()).as("refused: not the retry's").isTrue();
    assertThat(retry.getDoOutput()).as("refused: not the retry's").isFalse();
    assertThat(retry.getIfModifiedSince()).as("refused: not the retry's").isZero();
    assertThat(server.requestCount()).isEqualTo(2);
    ScriptedHttpServer.Recorded sent = server.requests().get(1);
    assertThat(sent.method).isEqualTo("GET");
    assertThat(sent.header("X-Set")).as("refused: not sent").isNull();
    assertThat(sent.header("If-Modified-Since")).as("refused: not sent").isNull();

    assertThat(ours.get()).as("as the JDK's answer during its call").isEqualTo(plain);
    assertThat(ourProperties.get().get(10, TimeUnit.SECONDS))
        .as("waited for the call, as the JDK's for its step, and answered as the JDK's then")
        .isEqualTo(plainProperties)
        .isEqualTo("IllegalStateException: Already connected");
    assertThat(plain)
        .containsEntry("setRequestProperty", "IllegalStateException: Already connected")
        .containsEntry(
            "setAuthenticator",
            "IllegalStateException: Authenticator must be set before connecting")
        .containsEntry(
            "setChunkedStreamingMode",
            "IllegalStateException: Can't set streaming mode: already connected")
        .containsEntry("setUseCaches", "IllegalStateException: Already connected")
        .containsEntry("setRequestMethod", "IllegalStateException: connect in progress")
        .containsEntry("getErrorStream", "null")
        .containsEntry("setInstanceFollowRedirects", "null");
  }

  /**
   * During the wait before retrying a refused {@code connect()}: the JDK's {@code connect()} holds
   * no lock while it connects, and its socket is not connected, so its {@code
   * getRequestProperties()} answers the map at once; ours too (the connection in use's), and {@code
   * setRequestProperty} is refused at once, as the JDK's once its step began. Checked against a
   * deliberate break ({@code getRequestProperties()} waiting for any running call: "waiting").
   */
  @Test
  void duringAConnectRetriedTheRequestPropertiesAnswerAtOnce() throws Exception {
    int closedPort;
    try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      closedPort = s.getLocalPort();
    }
    AtomicReference<Runnable> duringTheWait = new AtomicReference<>();
    RetryEngine engine = engine(duringTheWait, new EventLines());
    HttpURLConnection c =
        (HttpURLConnection)
            RetryingUrlConnections.wrap(
                new URL("http://127.0.0.1:" + closedPort + "/items").openConnection(Proxy.NO_PROXY),
                null,
                engine,
                UrlTransport.DIRECT);
    c.setRequestProperty("X-Own", "1");
    ReentrantLock lock = ((RetryingHttpConnection) c).view().exchange().lock();
    AtomicReference<String> ours = new AtomicReference<>();
    duringTheWait.set(
        () -> {
          CompletableFuture<String> asked =
              CompletableFuture.supplyAsync(
                  () ->
                      answer(() -> c.getRequestProperties().containsKey("X-Own"))
                          + "; "
                          + answer(() -> run(() -> c.setRequestProperty("X-Set", "1"))),
                  threads);
          await()
              .atMost(Duration.ofSeconds(10))
              .until(() -> asked.isDone() || lock.hasQueuedThreads());
          ours.set(asked.isDone() ? asked.join() : "waiting");
        });

    String outcome = answer(() -> run(() -> connect(c)));

    assertThat(outcome).endsWith("ConnectException: Connection refused");
    assertThat(ours.get()).isEqualTo("true; IllegalStateException: Already connected");
  }

  private static void connect(HttpURLConnection c) {
    try {
      c.connect();
    } catch (IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
  }

  /** The default policy, its waits running {@code duringTheWait} (once) on the call's thread. */
  private RetryEngine engine(AtomicReference<Runnable> duringTheWait, EventLines told) {
    return TestEngines.builder(
            time,
            Mode.ENFORCE,
            r -> r,
            Policy.defaults().budget(),
            Policy.defaults().circuitBreaker(),
            Policy.defaults().rateLimit())
        .sleeper(
            nanos -> {
              Runnable r = duringTheWait.getAndSet(null);
              if (r != null) {
                r.run();
              }
              time.sleep(nanos);
            })
        .listener(told)
        .build();
  }

  private static int code(HttpURLConnection c) {
    try {
      return c.getResponseCode();
    } catch (IOException e) {
      throw new IllegalStateException(e);
    }
  }

  /**
   * What each method answered, each from a thread of its own, asked while this thread's call holds
   * {@code lock} (the agent's connection's); "waiting" for one that waits for it.
   */
  private Map<String, String> askFromAnotherThread(HttpURLConnection c, ReentrantLock lock) {
    Map<String, Future<String>> asked = new LinkedHashMap<>();
    for (Map.Entry<String, Callable<Object>> e : methods(c).entrySet()) {
      asked.put(e.getKey(), threads.submit(() -> answer(e.getValue())));
    }
    // Each one answered, or waiting for the lock (a thread not yet started is in neither).
    await()
        .atMost(Duration.ofSeconds(10))
        .until(
            () ->
                asked.values().stream().filter(f -> !f.isDone()).count() == lock.getQueueLength());
    Map<String, String> answers = new LinkedHashMap<>();
    for (Map.Entry<String, Future<String>> e : asked.entrySet()) {
      answers.put(e.getKey(), e.getValue().isDone() ? done(e.getValue()) : "waiting");
    }
    return answers;
  }

  private static String done(Future<String> answered) {
    try {
      return answered.get();
    } catch (InterruptedException | ExecutionException e) {
      throw new IllegalStateException(e);
    }
  }

  private static String answer(Callable<Object> method) {
    try {
      return String.valueOf(method.call());
    } catch (Exception e) {
      return e.getClass().getSimpleName() + ": " + e.getMessage();
    }
  }

  /** The methods asked, by name: a setter answers null, a getter its value. */
  private static Map<String, Callable<Object>> methods(HttpURLConnection c) {
    Map<String, Callable<Object>> m = new LinkedHashMap<>();
    m.put("setRequestProperty", () -> run(() -> c.setRequestProperty("X-Set", "1")));
    m.put("addRequestProperty", () -> run(() -> c.addRequestProperty("X-Set", "2")));
    m.put("setAuthenticator", () -> run(() -> c.setAuthenticator(new Authenticator() {})));
    m.put("setFixedLengthStreamingMode(int)", () -> run(() -> c.setFixedLengthStreamingMode(3)));
    m.put("setFixedLengthStreamingMode(long)", () -> run(() -> c.setFixedLengthStreamingMode(3L)));
    m.put("setChunkedStreamingMode", () -> run(() -> c.setChunkedStreamingMode(100)));
    m.put("setInstanceFollowRedirects", () -> run(() -> c.setInstanceFollowRedirects(true)));
    m.put("setUseCaches", () -> run(() -> c.setUseCaches(false)));
    m.put("setDoOutput", () -> run(() -> c.setDoOutput(true)));
    m.put("setDoInput", () -> run(() -> c.setDoInput(true)));
    m.put("setIfModifiedSince", () -> run(() -> c.setIfModifiedSince(5000)));
    m.put("setAllowUserInteraction", () -> run(() -> c.setAllowUserInteraction(false)));
    m.put(
        "setRequestMethod",
        () -> {
          c.setRequestMethod("PUT");
          return null;
        });
    m.put("getRequestProperty", () -> c.getRequestProperty("Accept"));
    m.put("getRequestProperty(X-Set)", () -> c.getRequestProperty("X-Set"));
    m.put("getErrorStream", c::getErrorStream);
    m.put("getUseCaches", c::getUseCaches);
    m.put("getDoOutput", c::getDoOutput);
    m.put("getIfModifiedSince", c::getIfModifiedSince);
    m.put("getRequestMethod", c::getRequestMethod);
    return m;
  }

  /**
   * {@code getRequestProperties()}'s answer (its names), from a thread that says which it is: the
   * JDK's takes the connection's own lock, which its running step holds.
   */
  private static String properties(HttpURLConnection c, AtomicReference<Thread> asking) {
    asking.set(Thread.currentThread());
    return answer(() -> new ArrayList<>(c.getRequestProperties().keySet()));
  }

  /** Waiting for a lock or a monitor (the JDK 17 and 25 connection's own). */
  private static boolean parked(Thread t) {
    Thread.State s = t.getState();
    return s == Thread.State.WAITING || s == Thread.State.BLOCKED;
  }

  private static Object run(Runnable setter) {
    setter.run();
    return null;
  }
}
