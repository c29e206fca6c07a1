package dev.retryagent.urlconnection;

import static dev.retryagent.testing.ScriptedHttpServer.Action.ok;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.retryagent.engine.RetryEngine;
import dev.retryagent.policy.Mode;
import dev.retryagent.policy.Policy;
import dev.retryagent.testing.EventLines;
import dev.retryagent.testing.FakeTime;
import dev.retryagent.testing.ScriptedHttpServer;
import dev.retryagent.testing.TestEngines;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Authenticator;
import java.net.HttpURLConnection;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Proxy;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URL;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.ReentrantLock;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The configuration methods from another thread while the application's {@code connect()} runs, its
 * connect failures retried by the agent. The JDK's {@code connect()} marks itself connecting and
 * connects without its lock (read in JDK 25's source; probed on 17 and 25 here): the request
 * properties, the authenticator and the method are refused at once, everything else (the streaming
 * modes, the {@code URLConnection} setters, the redirects, the timeouts) is taken at once, its
 * socket not yet connected, and goes into the request it sends once connected. The agent's
 * streaming modes waited for the whole call (its waits between attempts among it) and were then
 * refused, the socket connected: the body went buffered where the JDK's streams it.
 */
class SettersDuringARetriedConnectTest {
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
   * The plain JDK's connection connecting (through a loopback SOCKS proxy that reads the greeting
   * and does not answer), and ours during the wait before retrying a refused connect: the same
   * answers, at once; the retry sends what the JDK sends once connected: the streaming mode taken
   * (chunked or the fixed length, the other refused as the JDK refuses it), the {@code
   * If-Modified-Since} taken, the refused header not sent, one request on the wire.
   */
  @ParameterizedTest
  @ValueSource(booleans = {false, true})
  void theSettersAnswerAsTheJdksWhileItConnects(boolean chunkedFirst) throws Exception {
    Map<String, String> plain;
    try (ServerSocket proxy = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      HttpURLConnection p =
          (HttpURLConnection)
              new URL("http://127.0.0.1:" + server.port() + "/items")
                  .openConnection(
                      new Proxy(
                          Proxy.Type.SOCKS,
                          new InetSocketAddress(
                              InetAddress.getLoopbackAddress(), proxy.getLocalPort())));
      // Bounds the JDK's connect, should the proxy's close not end it.
      p.setConnectTimeout(10_000);
      p.setReadTimeout(10_000);
      configure(p);
      CompletableFuture<String> connecting =
          CompletableFuture.supplyAsync(() -> answer(() -> run(() -> connect(p))), threads);
      try (Socket s = proxy.accept()) {
        InputStream greeting = s.getInputStream();
        assertThat(greeting.read()).as("the SOCKS greeting: the JDK's connect() runs").isEqualTo(5);
        CompletableFuture<Map<String, String>> asked =
            CompletableFuture.supplyAsync(() -> ask(p, chunkedFirst), threads);
        plain = asked.get(10, TimeUnit.SECONDS);
        assertThat(connecting).as("the JDK's connect() still under way").isNotDone();
      }
      assertThat(connecting.get(10, TimeUnit.SECONDS)).as("its proxy gone").isNotEqualTo("null");
    }

    int closedPort;
    try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      closedPort = s.getLocalPort();
    }
    server.otherwise(ok("fine"));
    AtomicReference<Runnable> duringTheWait = new AtomicReference<>();
    EventLines told = new EventLines();
    RetryEngine engine = engine(duringTheWait, told);
    List<HttpURLConnection> attempts = new CopyOnWriteArrayList<>();
    // The application's connection is to a closed port; the agent's retry goes to the server.
    UrlTransport retriesToTheServer =
        (url, proxy) -> {
          HttpURLConnection a =
              (HttpURLConnection) UrlTransport.DIRECT.open(new URL(server.url("/items")), proxy);
          attempts.add(a);
          return a;
        };
    HttpURLConnection c =
        (HttpURLConnection)
            RetryingUrlConnections.wrap(
                new URL("http://127.0.0.1:" + closedPort + "/items").openConnection(Proxy.NO_PROXY),
                null,
                engine,
                retriesToTheServer);
    configure(c);
    ReentrantLock lock = ((RetryingHttpConnection) c).view().exchange().lock();
    AtomicReference<Map<String, String>> ours = new AtomicReference<>();
    duringTheWait.set(
        () -> {
          CompletableFuture<Map<String, String>> asked =
              CompletableFuture.supplyAsync(() -> ask(c, chunkedFirst), threads);
          await()
              .atMost(Duration.ofSeconds(10))
              .until(() -> asked.isDone() || lock.hasQueuedThreads());
          Map<String, String> answers = new LinkedHashMap<>();
          answers.put("waiting", "a setter waits for the call");
          ours.set(asked.isDone() ? asked.join() : answers);
        });

    connect(c);
    try (OutputStream out = c.getOutputStream()) {
      out.write("abc".getBytes(StandardCharsets.US_ASCII));
    }
    // Streamed, as the JDK's: the whole request is on the wire before the response is asked for
    // (a buffered body goes with the response's request).
    assertThat(server.awaitRequests(1)).isEqualTo(ScriptedHttpServer.requests(1));
    assertThat(c.getResponseCode()).isEqualTo(200);

    assertThat(told.lines).contains("RETRY 1");
    assertThat(attempts).as("one retry").hasSize(1);
    assertThat(ours.get()).as("as the JDK's answers while it connects").isEqualTo(plain);
    assertThat(plain)
        .containsEntry("setRequestProperty", "IllegalStateException: Already connected")
        .containsEntry(
            "setAuthenticator",
            "IllegalStateException: Authenticator must be set before connecting")
        .containsEntry("setRequestMethod", "IllegalStateException: connect in progress")
        .containsEntry("setUseCaches", "null")
        .containsEntry(
            "streaming, then the other",
            chunkedFirst
                ? "null; IllegalStateException: Chunked encoding streaming mode set"
                : "null; null; IllegalStateException: Fixed length streaming mode set")
        .containsEntry("getIfModifiedSince", "5000");
    assertThat(server.requestCount()).as("one request on the wire").isEqualTo(1);
    ScriptedHttpServer.Recorded sent = server.requests().get(0);
    assertThat(sent.method).isEqualTo("POST");
    assertThat(sent.body).isEqualTo("abc");
    assertThat(sent.header("X-Set")).as("refused: not sent").isNull();
    assertThat(sent.header("If-Modified-Since")).as("taken while connecting").isNotNull();
    if (chunkedFirst) {
      assertThat(sent.header("Transfer-Encoding"))
          .as("streamed, as the JDK's")
          .isEqualTo("chunked");
    } else {
      assertThat(sent.header("Content-Length")).isEqualTo("3");
    }
    assertThat(c.getUseCaches()).as("taken while connecting").isFalse();
    assertThat(c.getIfModifiedSince()).isEqualTo(5000);
  }

  /**
   * A setter from another thread as the retry's connection is made, just after the settings were
   * copied into it from the failed attempt's ({@link UrlRequest#applyTo}): it reaches the retry (it
   * waits for the copy to end, then is written to the retry's connection), as the JDK's single
   * connection takes it while it connects. Checked against a deliberate break (the setters written
   * without the settings' monitor): written to the failed attempt's connection alone, the retry
   * connected without it and the application read back 0 and true.
   */
  @Test
  void aSetterAsTheRetryIsMadeReachesTheRetry() throws Exception {
    int closedPort;
    try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      closedPort = s.getLocalPort();
    }
    RetryEngine engine = engine(new AtomicReference<>(), new EventLines());
    AtomicReference<HttpURLConnection> app = new AtomicReference<>();
    AtomicReference<Thread> setting = new AtomicReference<>();
    CompletableFuture<String> set = new CompletableFuture<>();
    List<HttpURLConnection> attempts = new CopyOnWriteArrayList<>();
    // The retry's connection: its copy of the redirects setting, the last of applyTo's copies,
    // has another thread set two settings; its connect (which sends nothing) waits for them.
    UrlTransport transport =
        (url, proxy) -> {
          HttpURLConnection a =
              new HttpURLConnection(url) {
                @Override
                public void setInstanceFollowRedirects(boolean follow) {
                  super.setInstanceFollowRedirects(follow);
                  threads.execute(
                      () -> {
                        setting.set(Thread.currentThread());
                        set.complete(
                            answer(
                                () -> {
                                  app.get().setIfModifiedSince(5000);
                                  app.get().setUseCaches(false);
                                  return null;
                                }));
                      });
                  await()
                      .atMost(Duration.ofSeconds(10))
                      .until(
                          () ->
                              set.isDone()
                                  || (setting.get() != null
                                      && setting.get().getState() == Thread.State.BLOCKED));
                }

                @Override
                public void connect() {
                  await().atMost(Duration.ofSeconds(10)).until(set::isDone);
                  connected = true;
                }

                @Override
                public void disconnect() {}

                @Override
                public boolean usingProxy() {
                  return false;
                }
              };
          attempts.add(a);
          return a;
        };
    HttpURLConnection c =
        (HttpURLConnection)
            RetryingUrlConnections.wrap(
                new URL("http://127.0.0.1:" + closedPort + "/items").openConnection(Proxy.NO_PROXY),
                null,
                engine,
                transport);
    app.set(c);

    connect(c);

    assertThat(set.get(10, TimeUnit.SECONDS)).as("taken while connecting").isEqualTo("null");
    assertThat(attempts).as("one retry").hasSize(1);
    assertThat(attempts.get(0).getIfModifiedSince()).as("the retry's").isEqualTo(5000);
    assertThat(attempts.get(0).getUseCaches()).as("the retry's").isFalse();
    assertThat(c.getIfModifiedSince()).isEqualTo(5000);
    assertThat(c.getUseCaches()).isFalse();
    c.disconnect();
  }

  /**
   * The library's transport is the application's code: one whose {@code open} waits for a lock of
   * the application's own, which another thread of the application holds while it calls a setter
   * during the call. Both end, as with the JDK's connection, whose setters wait for nothing; the
   * setter reaches the retry. Checked against a deliberate break (the retry's connection opened
   * under the settings' monitor, as before): the transport waited for the lock, the setter for the
   * monitor, and the transport's bounded wait gave up ("the application's lock never came").
   */
  @Test
  void aTransportWaitingForTheApplicationsLockDoesNotStopASetter() throws Exception {
    int closedPort;
    try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      closedPort = s.getLocalPort();
    }
    server.otherwise(ok("fine"));
    RetryEngine engine = engine(new AtomicReference<>(), new EventLines());
    ReentrantLock applications = new ReentrantLock();
    AtomicReference<HttpURLConnection> app = new AtomicReference<>();
    CompletableFuture<String> set = new CompletableFuture<>();
    List<HttpURLConnection> attempts = new CopyOnWriteArrayList<>();
    UrlTransport transport =
        (url, proxy) -> {
          // Another thread of the application takes its lock and, holding it, calls a setter.
          CompletableFuture<Void> holding = new CompletableFuture<>();
          threads.execute(
              () -> {
                applications.lock();
                try {
                  holding.complete(null);
                  set.complete(
                      answer(
                          () -> {
                            app.get().setUseCaches(false);
                            return null;
                          }));
                } finally {
                  applications.unlock();
                }
              });
          holding.join();
          try {
            if (!applications.tryLock(5, TimeUnit.SECONDS)) {
              throw new IOException("the application's lock never came");
            }
          } catch (InterruptedException e) {
            throw new java.io.InterruptedIOException();
          }
          try {
            HttpURLConnection a =
                (HttpURLConnection) UrlTransport.DIRECT.open(new URL(server.url("/items")), proxy);
            attempts.add(a);
            return a;
          } finally {
            applications.unlock();
          }
        };
    HttpURLConnection c =
        (HttpURLConnection)
            RetryingUrlConnections.wrap(
                new URL("http://127.0.0.1:" + closedPort + "/items").openConnection(Proxy.NO_PROXY),
                null,
                engine,
                transport);
    app.set(c);

    connect(c);

    assertThat(set.get(10, TimeUnit.SECONDS)).as("taken while connecting").isEqualTo("null");
    assertThat(attempts).as("one retry").hasSize(1);
    assertThat(attempts.get(0).getUseCaches()).as("the retry's").isFalse();
    assertThat(c.getUseCaches()).isFalse();
    assertThat(c.getResponseCode()).isEqualTo(200);
    assertThat(server.requestCount()).as("one request on the wire").isEqualTo(1);
  }

  /**
   * With no call running on another thread, the setters a retry copies and the first attempt's
   * {@code connect()} take no monitor, as the JDK's take none: another holder of the settings'
   * monitor holds up neither. Checked against a deliberate break (the setters and the first
   * attempt's open under the monitor, as before): both waited for the holder.
   */
  @Test
  void noMonitorWithoutAnotherThreadsCall() throws Exception {
    server.otherwise(ok("fine"));
    RetryEngine engine = engine(new AtomicReference<>(), new EventLines());
    HttpURLConnection c =
        (HttpURLConnection)
            RetryingUrlConnections.wrap(
                new URL(server.url("/items")).openConnection(Proxy.NO_PROXY),
                null,
                engine,
                UrlTransport.DIRECT);
    Object settings = ((RetryingHttpConnection) c).view().settings();
    CompletableFuture<Void> release = new CompletableFuture<>();
    CompletableFuture<Void> held = new CompletableFuture<>();
    threads.execute(
        () -> {
          synchronized (settings) {
            held.complete(null);
            release.join();
          }
        });
    held.get(10, TimeUnit.SECONDS);
    try {
      CompletableFuture<String> configured =
          CompletableFuture.supplyAsync(
              () ->
                  answer(
                      () -> {
                        c.setUseCaches(false);
                        c.setIfModifiedSince(5000);
                        c.setInstanceFollowRedirects(false);
                        c.setDoOutput(false);
                        c.setDoInput(true);
                        c.setAllowUserInteraction(false);
                        c.connect();
                        return c.getUseCaches();
                      }),
              threads);
      assertThat(configured.get(10, TimeUnit.SECONDS)).isEqualTo("false");
    } finally {
      release.complete(null);
    }
    assertThat(c.getResponseCode()).isEqualTo(200);
    assertThat(server.requests().get(0).header("If-Modified-Since")).isNotNull();
  }

  /** The application's own request, before it connects: a POST with a body to come. */
  private static void configure(HttpURLConnection c) throws IOException {
    c.setRequestMethod("POST");
    c.setDoOutput(true);
  }

  /**
   * The configuration methods, in this order, from one thread: a setter answers null, a getter its
   * value; the streaming modes in one entry, as the second depends on the first.
   */
  private static Map<String, String> ask(HttpURLConnection c, boolean chunkedFirst) {
    Map<String, Callable<Object>> m = new LinkedHashMap<>();
    m.put("setRequestProperty", () -> run(() -> c.setRequestProperty("X-Set", "1")));
    m.put("addRequestProperty", () -> run(() -> c.addRequestProperty("X-Set", "2")));
    m.put("setAuthenticator", () -> run(() -> c.setAuthenticator(new Authenticator() {})));
    m.put(
        "setRequestMethod",
        () -> {
          c.setRequestMethod("PUT");
          return null;
        });
    m.put(
        "streaming, then the other",
        () ->
            chunkedFirst
                ? answer(() -> run(() -> c.setChunkedStreamingMode(100)))
                    + "; "
                    + answer(() -> run(() -> c.setFixedLengthStreamingMode(3)))
                : answer(() -> run(() -> c.setFixedLengthStreamingMode(3)))
                    + "; "
                    + answer(() -> run(() -> c.setFixedLengthStreamingMode(3L)))
                    + "; "
                    + answer(() -> run(() -> c.setChunkedStreamingMode(100))));
    m.put("setUseCaches", () -> run(() -> c.setUseCaches(false)));
    m.put("setDoInput", () -> run(() -> c.setDoInput(true)));
    m.put("setDoOutput", () -> run(() -> c.setDoOutput(true)));
    m.put("setIfModifiedSince", () -> run(() -> c.setIfModifiedSince(5000)));
    m.put("setAllowUserInteraction", () -> run(() -> c.setAllowUserInteraction(false)));
    m.put("setInstanceFollowRedirects", () -> run(() -> c.setInstanceFollowRedirects(false)));
    m.put("setConnectTimeout", () -> run(() -> c.setConnectTimeout(9_000)));
    m.put("setReadTimeout", () -> run(() -> c.setReadTimeout(9_000)));
    m.put("getUseCaches", c::getUseCaches);
    m.put("getDoOutput", c::getDoOutput);
    m.put("getIfModifiedSince", c::getIfModifiedSince);
    m.put("getInstanceFollowRedirects", c::getInstanceFollowRedirects);
    m.put("getRequestMethod", c::getRequestMethod);
    m.put("getConnectTimeout", c::getConnectTimeout);
    m.put("getReadTimeout", c::getReadTimeout);
    Map<String, String> answers = new LinkedHashMap<>();
    for (Map.Entry<String, Callable<Object>> e : m.entrySet()) {
      answers.put(e.getKey(), answer(e.getValue()));
    }
    return answers;
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

  private static String answer(Callable<Object> method) {
    try {
      return String.valueOf(method.call());
    } catch (Exception e) {
      return e.getClass().getSimpleName() + ": " + e.getMessage();
    }
  }

  private static Object run(Runnable setter) {
    setter.run();
    return null;
  }
}
