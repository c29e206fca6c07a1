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
import java.io.FilterOutputStream;
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
import java.util.concurrent.Future;
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
    settersWhileConnecting(chunkedFirst, false);
  }

  /**
   * The same with {@code getOutputStream()} called without {@code connect()} first: the JDK's
   * connects, then reads the settings (its {@code getOutputStream0}), and takes the streaming modes
   * and the {@code URLConnection} setters from another thread while it connects. Ours, during the
   * wait before retrying the body step's refused connect: the same answers, and the retry's body is
   * streamed as set. Checked against a deliberate break (the body step refusing them throughout, as
   * before): "Can't set streaming mode: already connected", {@code setUseCaches} "Already
   * connected", and the body went buffered (not on the wire before the response was asked for).
   */
  @ParameterizedTest
  @ValueSource(booleans = {false, true})
  void theSettersAnswerAsTheJdksWhileItsBodyStepConnects(boolean chunkedFirst) throws Exception {
    settersWhileConnecting(chunkedFirst, true);
  }

  private void settersWhileConnecting(boolean chunkedFirst, boolean bodyStep) throws Exception {
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
          CompletableFuture.supplyAsync(
              () -> answer(() -> bodyStep ? p.getOutputStream() : run(() -> connect(p))), threads);
      try (Socket s = proxy.accept()) {
        InputStream greeting = s.getInputStream();
        assertThat(greeting.read()).as("the SOCKS greeting: the JDK's connect runs").isEqualTo(5);
        // The JDK's getOutputStream() holds its lock while it connects: the methods taking it
        // (the request properties, the authenticator, the method) answer once it let it go, each
        // from a thread of its own; ours answer the same, at once.
        CompletableFuture<Map<String, Future<String>>> asked =
            CompletableFuture.supplyAsync(() -> ask(p, chunkedFirst, bodyStep, threads), threads);
        Map<String, Future<String>> answers = asked.get(10, TimeUnit.SECONDS);
        assertThat(connecting).as("the JDK's connect still under way").isNotDone();
        s.close();
        plain = answered(answers);
      }
      assertThat(connecting.get(10, TimeUnit.SECONDS)).as("its proxy gone").contains("Exception");
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

    if (!bodyStep) {
      connect(c);
    }
    try (OutputStream out = c.getOutputStream()) {
      out.write("abc".getBytes(StandardCharsets.US_ASCII));
    }
    assertThat(ours.get()).as("as the JDK's answers while it connects").isEqualTo(plain);
    // Streamed, as the JDK's: the whole request is on the wire before the response is asked for
    // (a buffered body goes with the response's request).
    assertThat(server.awaitRequests(1)).isEqualTo(ScriptedHttpServer.requests(1));
    assertThat(c.getResponseCode()).isEqualTo(200);

    assertThat(told.lines).contains("RETRY 1");
    assertThat(attempts).as("one retry").hasSize(1);
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
   * A streaming mode set from another thread as the JDK's getOutputStream() ends its connect: the
   * JDK's plainConnect() lets its lock go before plainConnect0() sets {@code connected} last, with
   * no lock, so the setter finds the connection unconnected after the body step's first look at the
   * setter count, and the connection opens a buffered body without the mode. The connection here
   * plays that window: connected, {@code connected} not yet seen, the setter run during its
   * getOutputStream(), the real JDK connection's buffered body returned. The agent's record must
   * match that body: before, it held the fixed length 3 and the application's write of 4 bytes,
   * which the JDK's buffered body takes, was refused as too long.
   */
  @Test
  void aStreamingModeTheConnectionDidNotTakeAsItsBodyOpenedIsNotHeldAgainstTheBody()
      throws Exception {
    server.enqueue(status(503));
    server.otherwise(ok("fine"));
    AtomicReference<HttpURLConnection> app = new AtomicReference<>();
    AtomicReference<String> setterSaw = new AtomicReference<>();
    URL url = new URL(server.url("/items"));
    HttpURLConnection template =
        new ForwardingConnection(url) {
          @Override
          public void connect() throws IOException {
            real.setDoOutput(true);
            real.setRequestMethod("PUT");
            real.connect(); // `connected` not yet seen by the other thread
          }

          @Override
          public OutputStream getOutputStream() throws IOException {
            Future<?> setter =
                threads.submit(
                    () -> {
                      try {
                        app.get().setFixedLengthStreamingMode(3);
                        setterSaw.set("taken");
                      } catch (RuntimeException e) {
                        setterSaw.set(e.toString());
                      }
                    });
            try {
              setter.get(10, TimeUnit.SECONDS);
            } catch (Exception e) {
              throw new IOException(e);
            }
            OutputStream body = real.getOutputStream(); // buffered: the mode came too late
            connected = true;
            return body;
          }
        };
    HttpURLConnection c =
        (HttpURLConnection)
            RetryingUrlConnections.wrap(
                template,
                null,
                engine(new AtomicReference<>(), new EventLines()),
                UrlTransport.DIRECT);
    app.set(c);
    c.setDoOutput(true);
    c.setRequestMethod("PUT");

    try (OutputStream out = c.getOutputStream()) {
      out.write("abcd".getBytes(StandardCharsets.US_ASCII));
    }
    assertThat(setterSaw.get()).as("taken while the body step connects").isEqualTo("taken");
    assertThat(c.getResponseCode()).as("the 503 retried").isEqualTo(200);
    assertThat(server.requestCount()).isEqualTo(2);
    assertThat(server.requests().get(0).body).as("the buffered body, whole").isEqualTo("abcd");
    assertThat(server.requests().get(1).body).as("the retry's, buffered too").isEqualTo("abcd");
  }

  /**
   * The same window, the application's connection returning its own wrapper of the JDK's buffered
   * body: the agent cannot tell from that stream whether the connection took the mode, so the body
   * is never sent again and the application sees the 503, as without the agent. Checked against the
   * old code (the JDK's buffer told by its class name alone): the wrapper was taken as a streamed
   * body, the record kept the fixed length 3, and the retry of the 4 bytes failed ("too many bytes
   * written").
   */
  @Test
  void aStreamingModeInTheWindowWithTheApplicationsOwnBodyStreamIsNeverReplayed() throws Exception {
    HttpURLConnection c =
        windowConnection(-1, 3, jdk -> new FilterOutputStream(jdk) {}, new AtomicReference<>());
    c.setDoOutput(true);
    c.setRequestMethod("PUT");

    try (OutputStream out = c.getOutputStream()) {
      out.write("abcd".getBytes(StandardCharsets.US_ASCII));
    }
    assertThat(c.getResponseCode()).as("not retried: the mode unknown").isEqualTo(503);
    assertThat(server.requestCount()).isEqualTo(1);
    assertThat(server.requests().get(0).body).isEqualTo("abcd");
  }

  /**
   * The same window, a fixed length already set (4) changed to 5 from another thread: the JDK's
   * streamed body may hold either length and shows neither, so the body is never sent again and the
   * application sees the 503, as without the agent. Checked against the old code (the changed
   * length recorded as the body's): the retry was given the length 5 with the 4 bytes written, and
   * failed.
   */
  @Test
  void aFixedLengthChangedInTheWindowIsNeverReplayed() throws Exception {
    AtomicReference<String> setterSaw = new AtomicReference<>();
    HttpURLConnection c = windowConnection(4, 5, jdk -> jdk, setterSaw);
    c.setDoOutput(true);
    c.setRequestMethod("PUT");
    c.setFixedLengthStreamingMode(4L);

    try (OutputStream out = c.getOutputStream()) {
      out.write("abcd".getBytes(StandardCharsets.US_ASCII));
    }
    assertThat(setterSaw.get()).as("taken while the body step connects").isEqualTo("taken");
    assertThat(c.getResponseCode()).as("not retried: the length unknown").isEqualTo(503);
    assertThat(server.requestCount()).isEqualTo(1);
    assertThat(server.requests().get(0).body).isEqualTo("abcd");
  }

  /**
   * The application's PUT connection playing the window of {@link
   * #aStreamingModeTheConnectionDidNotTakeAsItsBodyOpenedIsNotHeldAgainstTheBody}: its real JDK
   * connection given the fixed length set before (or none for -1), the setter of {@code
   * windowLength} run from another thread inside its getOutputStream(), after the JDK's body
   * opened, the body returned through {@code wrap}. The server answers 503, then 200.
   */
  private HttpURLConnection windowConnection(
      long before,
      long windowLength,
      java.util.function.UnaryOperator<OutputStream> wrap,
      AtomicReference<String> setterSaw)
      throws IOException {
    server.enqueue(status(503));
    server.otherwise(ok("fine"));
    AtomicReference<HttpURLConnection> app = new AtomicReference<>();
    URL url = new URL(server.url("/items"));
    HttpURLConnection template =
        new ForwardingConnection(url) {
          @Override
          public void connect() throws IOException {
            real.setDoOutput(true);
            real.setRequestMethod("PUT");
            if (before >= 0) {
              real.setFixedLengthStreamingMode(before);
            }
            real.connect(); // `connected` not yet seen by the other thread
          }

          @Override
          public OutputStream getOutputStream() throws IOException {
            OutputStream body = real.getOutputStream(); // the mode read: the setter too late
            Future<?> setter =
                threads.submit(
                    () -> {
                      try {
                        app.get().setFixedLengthStreamingMode(windowLength);
                        setterSaw.set("taken");
                      } catch (RuntimeException e) {
                        setterSaw.set(e.toString());
                      }
                    });
            try {
              setter.get(10, TimeUnit.SECONDS);
            } catch (Exception e) {
              throw new IOException(e);
            }
            connected = true;
            return wrap.apply(body);
          }
        };
    HttpURLConnection c =
        (HttpURLConnection)
            RetryingUrlConnections.wrap(
                template,
                null,
                engine(new AtomicReference<>(), new EventLines()),
                UrlTransport.DIRECT);
    app.set(c);
    return c;
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

  /**
   * A POST's body opened without {@code connect()} first, no setter from another thread: the body
   * step takes no monitor (the settings' is held by another thread throughout). Checked against a
   * deliberate break (the body open taking the settings' monitor each time, as the reverted fix
   * did): it waited for the holder.
   */
  @Test
  void aPostsBodyTakesNoMonitor() throws Exception {
    server.otherwise(ok("fine"));
    RetryEngine engine = engine(new AtomicReference<>(), new EventLines());
    HttpURLConnection c =
        (HttpURLConnection)
            RetryingUrlConnections.wrap(
                new URL(server.url("/items")).openConnection(Proxy.NO_PROXY),
                null,
                engine,
                UrlTransport.DIRECT);
    configure(c);
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
      CompletableFuture<String> posted =
          CompletableFuture.supplyAsync(
              () ->
                  answer(
                      () -> {
                        try (OutputStream out = c.getOutputStream()) {
                          out.write("abc".getBytes(StandardCharsets.US_ASCII));
                        }
                        return c.getResponseCode();
                      }),
              threads);
      assertThat(posted.get(10, TimeUnit.SECONDS)).isEqualTo("200");
    } finally {
      release.complete(null);
    }
    assertThat(server.requests().get(0).body).isEqualTo("abc");
  }

  /**
   * Once the body step connected an attempt whose body then failed to open (its failure retried), a
   * streaming mode from another thread during the wait is refused, as the JDK's connected
   * connection refuses it: the retry goes as the first attempt went, buffered. Checked against a
   * deliberate break (no mark of that connect): the agent's disconnect of the failed attempt left
   * it answering as one never connected, and the mode was taken ("null").
   */
  @Test
  void aStreamingModeAfterTheBodyStepConnectedIsRefused() throws Exception {
    server.otherwise(ok("fine"));
    AtomicReference<Runnable> duringTheWait = new AtomicReference<>();
    EventLines told = new EventLines();
    RetryEngine engine = engine(duringTheWait, told);
    URL url = new URL(server.url("/items"));
    // The first attempt connects, then its body fails to open; the JDK's disconnect() makes it
    // answer as a connection never connected.
    HttpURLConnection first =
        new HttpURLConnection(url) {
          @Override
          public void connect() {
            connected = true;
          }

          @Override
          public OutputStream getOutputStream() throws IOException {
            throw new java.net.ConnectException("refused after the connect");
          }

          @Override
          public void disconnect() {
            connected = false;
          }

          @Override
          public boolean usingProxy() {
            return false;
          }
        };
    HttpURLConnection c =
        (HttpURLConnection) RetryingUrlConnections.wrap(first, null, engine, UrlTransport.DIRECT);
    configure(c);
    AtomicReference<String> ours = new AtomicReference<>();
    duringTheWait.set(
        () -> {
          try {
            ours.set(
                CompletableFuture.supplyAsync(
                        () -> answer(() -> run(() -> c.setChunkedStreamingMode(100))), threads)
                    .get(10, TimeUnit.SECONDS));
          } catch (Exception e) {
            ours.set(e.toString());
          }
        });

    try (OutputStream out = c.getOutputStream()) {
      out.write("abc".getBytes(StandardCharsets.US_ASCII));
    }
    assertThat(c.getResponseCode()).isEqualTo(200);

    assertThat(told.lines).contains("RETRY 1");
    assertThat(ours.get())
        .as("as the JDK's connected connection")
        .isEqualTo("IllegalStateException: Can't set streaming mode: already connected");
    assertThat(server.requestCount()).as("one request on the wire").isEqualTo(1);
    ScriptedHttpServer.Recorded sent = server.requests().get(0);
    assertThat(sent.body).isEqualTo("abc");
    assertThat(sent.header("Transfer-Encoding")).as("buffered, as first opened").isNull();
    assertThat(sent.header("Content-Length")).isEqualTo("3");
  }

  /**
   * A fixed length set from another thread while the body step's attempt connects, taken by it: the
   * body opens once that setter has recorded it, so the copy knows the length, and four bytes
   * written to a length of three are the application's mistake, as the JDK refuses them, not the
   * host's failure. The setter is held after the connection took it until the call's thread either
   * waits for it or has returned the body. Checked against a deliberate break (the body opened
   * without waiting for a setter that came): the body returned first, the copy had no length, and
   * the refused write was judged the host's failure.
   */
  @Test
  void aFixedLengthTakenWhileTheBodyStepConnectsIsTheBodysLength() throws Exception {
    EventLines told = new EventLines();
    RetryEngine engine = engine(new AtomicReference<>(), told);
    URL url = new URL(server.url("/items"));
    AtomicReference<HttpURLConnection> app = new AtomicReference<>();
    AtomicReference<Thread> caller = new AtomicReference<>();
    CompletableFuture<Void> taken = new CompletableFuture<>();
    CompletableFuture<Void> returned = new CompletableFuture<>();
    CompletableFuture<String> set = new CompletableFuture<>();
    HttpURLConnection first =
        new HttpURLConnection(url) {
          @Override
          public void setFixedLengthStreamingMode(int length) {
            super.setFixedLengthStreamingMode(length);
            taken.complete(null);
            await()
                .atMost(Duration.ofSeconds(10))
                .until(() -> returned.isDone() || caller.get().getState() == Thread.State.BLOCKED);
          }

          @Override
          public void connect() {
            // Another thread of the application sets the length while this connects.
            threads.execute(
                () ->
                    set.complete(
                        answer(() -> run(() -> app.get().setFixedLengthStreamingMode(3)))));
            await().atMost(Duration.ofSeconds(10)).until(taken::isDone);
            connected = true;
          }

          @Override
          public OutputStream getOutputStream() {
            // As the JDK's in a fixed-length mode: more than the length refused, unsent.
            return new OutputStream() {
              private int written;

              @Override
              public void write(int b) throws IOException {
                if (++written > 3) {
                  throw new IOException("too many bytes to write to stream");
                }
              }
            };
          }

          @Override
          public void disconnect() {
            connected = false;
          }

          @Override
          public boolean usingProxy() {
            return false;
          }
        };
    HttpURLConnection c =
        (HttpURLConnection) RetryingUrlConnections.wrap(first, null, engine, UrlTransport.DIRECT);
    app.set(c);
    configure(c);
    caller.set(Thread.currentThread());

    OutputStream out = c.getOutputStream();
    returned.complete(null);
    String written =
        answer(
            () ->
                run(
                    () -> {
                      try {
                        out.write("abcd".getBytes(StandardCharsets.US_ASCII));
                      } catch (IOException e) {
                        throw new java.io.UncheckedIOException(e);
                      }
                    }));

    assertThat(set.get(10, TimeUnit.SECONDS)).as("taken while connecting").isEqualTo("null");
    assertThat(written).contains("too many bytes to write to stream");
    assertThat(told.lines)
        .as("the application's mistake")
        .containsExactly(
            "ATTEMPT 1", "GIVE_UP 1 APPLICATION_FAILED", "CALL_COMPLETE 1 APPLICATION_FAILED");
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
    try {
      return answered(ask(c, chunkedFirst, false, null));
    } catch (Exception e) {
      throw new IllegalStateException(e);
    }
  }

  /** The methods taking the JDK's lock: {@code sun.net.www.protocol.http.HttpURLConnection}. */
  private static final java.util.Set<String> LOCKING =
      new java.util.HashSet<>(
          java.util.Arrays.asList(
              "setRequestProperty", "addRequestProperty", "setAuthenticator", "setRequestMethod"));

  private static Map<String, String> answered(Map<String, Future<String>> answers)
      throws Exception {
    Map<String, String> done = new LinkedHashMap<>();
    for (Map.Entry<String, Future<String>> e : answers.entrySet()) {
      done.put(e.getKey(), e.getValue().get(10, TimeUnit.SECONDS));
    }
    return done;
  }

  /**
   * {@link #ask(HttpURLConnection, boolean)}, with {@code apart}: the methods taking the JDK's lock
   * each from a thread of its own, not waited for.
   */
  private static Map<String, Future<String>> ask(
      HttpURLConnection c, boolean chunkedFirst, boolean apart, ExecutorService threads) {
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
    Map<String, Future<String>> answers = new LinkedHashMap<>();
    for (Map.Entry<String, Callable<Object>> e : m.entrySet()) {
      answers.put(
          e.getKey(),
          apart && LOCKING.contains(e.getKey())
              ? threads.submit(() -> answer(e.getValue()))
              : CompletableFuture.completedFuture(answer(e.getValue())));
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
