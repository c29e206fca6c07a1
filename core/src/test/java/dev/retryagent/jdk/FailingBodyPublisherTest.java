package dev.retryagent.jdk;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retryagent.engine.RetryEvent;
import dev.retryagent.policy.CircuitBreakerPolicy;
import dev.retryagent.policy.Mode;
import dev.retryagent.testing.FakeTime;
import dev.retryagent.testing.TestEngines;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Flow;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * A request body publisher of the application's that fails after it has produced some of its bytes
 * (none, one buffer, several), by {@code onError}, by a throw from its subscription's {@code
 * request}, or from {@code subscribe}, of a known length or not: the call through the decorator
 * ends as through the JDK alone (HTTP/1.1, loopback), with the same exception chain, and the server
 * receives the same: each connection's request, whole or cut, with the body bytes that reached it.
 * Nothing is retried, no copy of a body the source did not deliver whole is ever sent, and the
 * failure is the application's, never the host's: a breaker that one failure opens stays closed.
 *
 * <p>The server answers a whole request (200, Connection: close), so a failure the decorator
 * swallowed would show as a success; a cut one it reads to the client's close. Every publisher here
 * is deterministic: it signals on the thread that asks it, in the order given.
 */
class FailingBodyPublisherTest {
  enum Way {
    SEND,
    SEND_ASYNC
  }

  /** How the publisher fails once it has sent its buffers. */
  enum Failure {
    /** {@code onError(IOException)} on the request after its last buffer. */
    ON_ERROR,
    /** Throws an {@code UncheckedIOException} out of the request after its last buffer. */
    THROW_FROM_REQUEST,
    /** Throws an IOException (undeclared, as Lombok's sneaky throw does) out of the request. */
    SNEAKY_THROW_FROM_REQUEST,
    /** Throws an Error out of the request. */
    ERROR_FROM_REQUEST,
    /** Throws out of {@code subscribe}, before {@code onSubscribe}. */
    THROW_FROM_SUBSCRIBE_BEFORE_ON_SUBSCRIBE,
    /** Throws out of {@code subscribe}, after {@code onSubscribe} (and what it sent from there). */
    THROW_FROM_SUBSCRIBE_AFTER_ON_SUBSCRIBE,
    /**
     * Within one request: its buffers, {@code onComplete}, then a throw: what the JDK's own {@code
     * ofInputStream} does when its stream fails while another request comes in ({@code
     * PullPublisher}'s last {@code hasNext()}, outside its try, re-run by its scheduler, finds the
     * failed stream ended). The JDK sends that cut body as a whole request.
     */
    COMPLETE_THEN_THROW
  }

  private static final String PART_TEXT = "abcd";
  private static final byte[] PART = PART_TEXT.getBytes(StandardCharsets.US_ASCII);

  private final HttpClient real =
      HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
  private final List<RetryEvent> events = new CopyOnWriteArrayList<>();
  private FakeTime time;
  private RawServer server;

  @BeforeEach
  void start() throws IOException {
    time = new FakeTime();
    server = new RawServer();
  }

  @AfterEach
  void stop() throws IOException {
    server.close();
  }

  static Stream<Arguments> cases() {
    List<Arguments> all = new ArrayList<>();
    for (Way way : Way.values()) {
      for (Failure failure : Failure.values()) {
        for (int parts : new int[] {0, 1, 3}) {
          for (boolean known : new boolean[] {false, true}) {
            all.add(Arguments.of(way, failure, parts, known));
          }
        }
      }
    }
    return all.stream();
  }

  @ParameterizedTest(name = "{0} {1} after {2} buffers, length known: {3}")
  @MethodSource("cases")
  void aPublisherThatFailsPartWayEndsTheCallAsWithoutUs(
      Way way, Failure failure, int parts, boolean known) throws Exception {
    // A PUT is idempotent, and every IOException retried: a failure taken for the host's would be
    // retried, from a copy.
    HttpClient ours =
        RetryingHttpClient.wrap(
            real,
            TestEngines.engine(
                time,
                Mode.ENFORCE,
                b -> b.retryOnExceptions(List.of("java.io.IOException")),
                CircuitBreakerPolicy.builder().countWindow(1).minimumCalls(1).build(),
                events));
    // Declared: one buffer more than it sends, so that a known length is never reached.
    long declared = known ? (long) PART.length * (parts + 1) : -1;
    // The JDK sends a body its publisher completed, then fails the call for the throw: an answer
    // to that whole request would race with the failure, the JDK's own race.
    server.answers = failure != Failure.COMPLETE_THEN_THROW;
    List<String> outcome = new ArrayList<>();
    List<List<String>> received = new ArrayList<>();
    for (HttpClient c : List.of(real, ours)) {
      int from = server.connectionCount();
      HttpRequest put =
          HttpRequest.newBuilder(URI.create(server.url("/v1/files/7")))
              .timeout(Duration.ofSeconds(10))
              .PUT(new Failing(failure, parts, declared))
              .build();
      outcome.add(outcome(way, c, put));
      server.awaitDoneWithConnectionsFrom(from);
      received.add(server.receivedFrom(from));
    }
    String what = way + " " + failure + " after " + parts + " buffers, declared " + declared;
    assertThat(outcome.get(0)).as(what + ": the JDK alone fails").startsWith("failed: ");
    if (failure == Failure.ON_ERROR) {
      // The JDK queues the failure behind the buffers: they reach the server, then the close.
      assertThat(outcome.get(1)).as(what + ": through the decorator").isEqualTo(outcome.get(0));
      assertThat(received.get(1)).as(what + ": the server got").isEqualTo(received.get(0));
    } else if (failure != Failure.COMPLETE_THEN_THROW) {
      // A throw: the JDK closes the connection at once, and how much of what it had queued (the
      // head, a buffer) went out first is a race of the JDK's own, with or without us.
      assertThat(outcome.get(1)).as(what + ": through the decorator").isEqualTo(outcome.get(0));
      assertCutOrNothing(what + ": the JDK alone", received.get(0), parts);
      assertCutOrNothing(what + ": through the decorator", received.get(1), parts);
    } else {
      // The JDK's own race: it sent the body its source completed, then failed the call for the
      // throw; with the source's exception, or "Too few bytes" (a known length), or, having closed
      // the connection, "header parser received no bytes", and the server got the cut body whole
      // or not. Through the decorator, the same: one request at most, never the copy again.
      assertThat(outcome.get(1)).as(what + ": through the decorator").startsWith("failed: ");
      assertThat(outcome.get(1))
          .as(what + ": through the decorator")
          .doesNotContain("retry-agent")
          .doesNotContain("HttpTimeoutException");
      for (List<String> side : received) {
        assertThat(side).as(what).hasSizeLessThanOrEqualTo(1);
        for (String r : side) {
          assertThat(PART_TEXT.repeat(parts))
              .as(what)
              .startsWith(r.substring(r.lastIndexOf(' ') + 1));
          assertThat(r).as(what).doesNotContain(" length " + declared + " whole");
        }
      }
    }
    // The breaker, which one failure of the host's opens, stays closed: the host's next call goes.
    server.answers = true;
    HttpRequest next = HttpRequest.newBuilder(URI.create(server.url("/v1/items"))).build();
    assertThat(outcome(way, ours, next))
        .as(what + ": the next call")
        .isEqualTo("answered: 200 stored");
    assertThat(events).noneMatch(e -> e.type() == RetryEvent.Type.RETRY);
    // The application's failure, never the host's: the breaker heard nothing.
    assertThat(events)
        .filteredOn(e -> e.type() == RetryEvent.Type.GIVE_UP)
        .as(what)
        .isNotEmpty()
        .allMatch(e -> e.reason() == dev.retryagent.engine.GiveUpReason.APPLICATION_FAILED);
    assertThat(time.waits()).isEmpty();
  }

  /**
   * A source that completed its body and then threw out of {@code request} (what the JDK's own
   * {@code ofInputStream} does when its stream fails as another request comes in: {@link
   * Failure#COMPLETE_THEN_THROW}), on an attempt that then fails with the JDK's own exception, not
   * the source's (the JDK, which sent the cut body as a whole request, closed the connection and
   * read no answer: "header parser received no bytes", as it happened on loopback now and then).
   * The call ends with that failure as the JDK gives it, as the application's: no retry, and above
   * all no copy of the cut body sent again as a whole one; the host's breaker hears nothing.
   * Before, the copy was kept as complete, the failure was the host's, and the PUT was retried from
   * the copy: the server got the cut body twice as a whole request (with a breaker that opens on
   * one failure, the call failed with CircuitBreakerOpenException instead). Deterministic: the
   * attempts go to a transport of the test's, which reads the body as the JDK does.
   */
  @ParameterizedTest
  @org.junit.jupiter.params.provider.EnumSource(Way.class)
  void aCopyItsSourceCompletedBeforeItFailedIsNeverSentAgain(Way way) throws Exception {
    for (CircuitBreakerPolicy breaker :
        List.of(
            CircuitBreakerPolicy.defaults(),
            CircuitBreakerPolicy.builder().countWindow(1).minimumCalls(1).build())) {
      events.clear();
      dev.retryagent.internal.jdk.JdkRetrying retrying =
          new dev.retryagent.internal.jdk.JdkRetrying(
              TestEngines.engine(
                  time,
                  Mode.ENFORCE,
                  b -> b.retryOnExceptions(List.of("java.io.IOException")),
                  breaker,
                  events));
      List<String> bodies = new CopyOnWriteArrayList<>();
      List<IOException> thrown = new CopyOnWriteArrayList<>();
      dev.retryagent.internal.jdk.JdkTransport transport =
          new dev.retryagent.internal.jdk.JdkTransport() {
            @Override
            public <T> HttpResponse<T> send(HttpRequest r, HttpResponse.BodyHandler<T> h)
                throws IOException {
              throw attempt(r);
            }

            @Override
            public <T> java.util.concurrent.CompletableFuture<HttpResponse<T>> sendAsync(
                HttpRequest r,
                HttpResponse.BodyHandler<T> h,
                HttpResponse.PushPromiseHandler<T> p) {
              return java.util.concurrent.CompletableFuture.failedFuture(attempt(r));
            }

            private IOException attempt(HttpRequest r) {
              bodies.add(JdkLikeReader.read(r.bodyPublisher().orElseThrow()));
              IOException e = new IOException("HTTP/1.1 header parser received no bytes");
              thrown.add(e);
              return e;
            }
          };
      HttpRequest put =
          HttpRequest.newBuilder(URI.create("http://127.0.0.1:9/v1/files/7"))
              .PUT(new Failing(Failure.COMPLETE_THEN_THROW, 1, -1))
              .build();
      Throwable failure;
      try {
        if (way == Way.SEND) {
          retrying.send(transport, put, HttpResponse.BodyHandlers.ofString());
        } else {
          retrying
              .sendAsync(transport, put, HttpResponse.BodyHandlers.ofString(), null)
              .get(20, TimeUnit.SECONDS);
        }
        failure = null;
      } catch (ExecutionException e) {
        failure = e.getCause();
      } catch (IOException e) {
        failure = e;
      }
      assertThat(bodies).as(breaker.toString()).containsExactly("abcd, complete, then threw disk");
      assertThat(failure).as(breaker.toString()).isSameAs(thrown.get(0));
      assertThat(events).noneMatch(e -> e.type() == RetryEvent.Type.RETRY);
      assertThat(events)
          .anyMatch(
              e ->
                  e.type() == RetryEvent.Type.GIVE_UP
                      && e.reason() == dev.retryagent.engine.GiveUpReason.APPLICATION_FAILED);
    }
  }

  /**
   * Reads a body as the JDK's HTTP/1.1 exchange does: one buffer a request, a throw out of {@code
   * request} the attempt's failure ({@code Http1Exchange.requestMoreBody}); says what it got.
   */
  static final class JdkLikeReader implements Flow.Subscriber<ByteBuffer> {
    private final StringBuilder got = new StringBuilder();
    private Flow.Subscription subscription;

    static String read(HttpRequest.BodyPublisher body) {
      JdkLikeReader reader = new JdkLikeReader();
      try {
        body.subscribe(reader);
      } catch (RuntimeException e) {
        reader.got.append(", subscribe threw ").append(e.getCause().getMessage());
      }
      return reader.got.toString();
    }

    private void more() {
      try {
        subscription.request(1);
      } catch (RuntimeException e) {
        got.append(", then threw ").append(e.getCause().getMessage());
      }
    }

    @Override
    public void onSubscribe(Flow.Subscription subscription) {
      this.subscription = subscription;
      more();
    }

    @Override
    public void onNext(ByteBuffer item) {
      got.append(StandardCharsets.US_ASCII.decode(item));
      more();
    }

    @Override
    public void onError(Throwable throwable) {
      got.append(", failed ").append(throwable.getMessage());
    }

    @Override
    public void onComplete() {
      got.append(", complete");
    }
  }

  /**
   * What the server got of a request cut by a throw: nothing, or one request, cut, with part of
   * what the source sent.
   */
  private static void assertCutOrNothing(String what, List<String> received, int parts) {
    assertThat(received).as(what).hasSizeLessThanOrEqualTo(1);
    for (String r : received) {
      assertThat(r).as(what).contains(" cut");
      assertThat(PART_TEXT.repeat(parts))
          .as(what)
          .startsWith(r.substring(r.indexOf(" cut") + 4).trim());
    }
  }

  @SuppressWarnings("unchecked")
  private static <E extends Throwable> E sneaky(Throwable t) throws E {
    throw (E) t;
  }

  /** What the call ended with: the response's status and body, or the failure's chain. */
  private static String outcome(Way way, HttpClient client, HttpRequest request) {
    try {
      HttpResponse<String> r;
      if (way == Way.SEND) {
        r = client.send(request, HttpResponse.BodyHandlers.ofString());
      } else {
        try {
          r =
              client
                  .sendAsync(request, HttpResponse.BodyHandlers.ofString())
                  .get(20, TimeUnit.SECONDS);
        } catch (ExecutionException e) {
          return "failed: " + chain(e);
        }
      }
      return "answered: " + r.statusCode() + " " + r.body();
    } catch (Exception e) {
      return "failed: " + chain(e);
    }
  }

  private static String chain(Throwable thrown) {
    StringBuilder chain = new StringBuilder();
    for (Throwable t = thrown; t != null; t = t.getCause()) {
      // Without what the JDK puts in some messages of the connection and thread it failed on.
      chain.append(String.valueOf(t).replaceFirst(": \\S.*? \\[[^\\]]*\\] ", ": ")).append(" / ");
    }
    return chain.toString();
  }

  /**
   * The application's publisher: on each unit of demand one buffer of {@link #PART}, {@code parts}
   * of them, then its {@link Failure}. Signals on the thread that requests, one at a time.
   */
  static final class Failing implements HttpRequest.BodyPublisher {
    private final Failure failure;
    private final int parts;
    private final long declared;

    Failing(Failure failure, int parts, long declared) {
      this.failure = failure;
      this.parts = parts;
      this.declared = declared;
    }

    @Override
    public long contentLength() {
      return declared;
    }

    @Override
    public void subscribe(Flow.Subscriber<? super ByteBuffer> s) {
      if (failure == Failure.THROW_FROM_SUBSCRIBE_BEFORE_ON_SUBSCRIBE) {
        throw new UncheckedIOException(new IOException("disk"));
      }
      s.onSubscribe(
          new Flow.Subscription() {
            private int sent;
            private boolean done;
            private boolean inRequest;
            private long demand;

            @Override
            public synchronized void request(long n) {
              demand += n;
              if (inRequest) {
                return; // the loop below serves it
              }
              inRequest = true;
              try {
                while (demand > 0 && !done) {
                  demand--;
                  if (sent < parts) {
                    sent++;
                    s.onNext(ByteBuffer.wrap(PART.clone()));
                    if (failure != Failure.COMPLETE_THEN_THROW || sent < parts) {
                      continue;
                    }
                  }
                  switch (failure) {
                    case ON_ERROR:
                      done = true;
                      s.onError(new IOException("disk"));
                      break;
                    case SNEAKY_THROW_FROM_REQUEST:
                      done = true;
                      throw FailingBodyPublisherTest.<RuntimeException>sneaky(
                          new IOException("disk"));
                    case ERROR_FROM_REQUEST:
                      done = true;
                      throw new AssertionError("disk");
                    case THROW_FROM_REQUEST:
                      done = true;
                      throw new UncheckedIOException(new IOException("disk"));
                    case COMPLETE_THEN_THROW:
                      done = true;
                      s.onComplete();
                      throw new UncheckedIOException(new IOException("disk"));
                    default:
                      return; // never ends: subscribe's throw is its failure
                  }
                }
              } finally {
                inRequest = false;
              }
            }

            @Override
            public synchronized void cancel() {
              done = true;
            }
          });
      if (failure == Failure.THROW_FROM_SUBSCRIBE_AFTER_ON_SUBSCRIBE) {
        throw new UncheckedIOException(new IOException("disk"));
      }
    }
  }

  /**
   * A loopback HTTP/1.1 server that records, per connection, each request's head framing and the
   * body bytes that reached it, and whether its body was whole (its length, or the last chunk). A
   * whole request is answered 200 with Connection: close; a cut one is read to the client's close.
   */
  static final class RawServer implements AutoCloseable {
    private final ServerSocket socket = new ServerSocket();
    private final ExecutorService pool = Executors.newCachedThreadPool(daemon());
    private final List<Socket> accepted = Collections.synchronizedList(new ArrayList<>());
    private final List<Socket> done = Collections.synchronizedList(new ArrayList<>());
    private final List<String> received = Collections.synchronizedList(new ArrayList<>());
    private volatile boolean closed;
    // False: a whole request is read, not answered (the client's own failure is all that ends it).
    volatile boolean answers = true;

    RawServer() throws IOException {
      socket.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
      pool.execute(this::accept);
    }

    private static java.util.concurrent.ThreadFactory daemon() {
      return r -> {
        Thread t = new Thread(r, "raw-http");
        t.setDaemon(true);
        return t;
      };
    }

    String url(String path) {
      return "http://127.0.0.1:" + socket.getLocalPort() + path;
    }

    int connectionCount() {
      return accepted.size();
    }

    /** What connections {@code from} on received, in the order they were accepted. */
    List<String> receivedFrom(int from) {
      List<String> all = new ArrayList<>();
      synchronized (received) {
        for (String r : received) {
          int connection = Integer.parseInt(r.substring(0, r.indexOf(':')));
          if (connection >= from) {
            all.add(r.substring(r.indexOf(':') + 1));
          }
        }
      }
      return all;
    }

    /**
     * Waits (10 s at most) until the server is done with every connection from the {@code from}-th
     * on that a client opened before this call: a marker connection opened now is accepted after
     * them.
     */
    void awaitDoneWithConnectionsFrom(int from) throws IOException {
      int mark;
      try (Socket marker = new Socket(InetAddress.getLoopbackAddress(), socket.getLocalPort())) {
        int local = marker.getLocalPort();
        Awaitility.await()
            .pollDelay(java.time.Duration.ZERO)
            .pollInterval(java.time.Duration.ofMillis(5))
            .atMost(10, TimeUnit.SECONDS)
            .until(() -> indexOf(local) >= 0);
        mark = indexOf(local);
      }
      for (int i = from; i <= mark; i++) {
        Socket s = accepted.get(i);
        Awaitility.await()
            .pollDelay(java.time.Duration.ZERO)
            .pollInterval(java.time.Duration.ofMillis(5))
            .atMost(10, TimeUnit.SECONDS)
            .until(() -> done.contains(s));
      }
    }

    private int indexOf(int port) {
      synchronized (accepted) {
        for (int i = 0; i < accepted.size(); i++) {
          if (accepted.get(i).getPort() == port) {
            return i;
          }
        }
      }
      return -1;
    }

    private void accept() {
      while (!closed) {
        try {
          Socket s = socket.accept();
          int index;
          synchronized (accepted) {
            index = accepted.size();
            accepted.add(s);
          }
          pool.execute(() -> serve(s, index));
        } catch (IOException e) {
          return;
        }
      }
    }

    private void serve(Socket s, int index) {
      try (s) {
        s.setSoTimeout(15_000);
        InputStream in = s.getInputStream();
        OutputStream out = s.getOutputStream();
        while (true) {
          String line = readLine(in);
          if (line == null || line.isEmpty()) {
            return; // closed before a request (the marker), or between requests
          }
          String method = line.split(" ")[0];
          long length = -1;
          boolean chunked = false;
          for (String h = readLine(in); h != null && !h.isEmpty(); h = readLine(in)) {
            String lower = h.toLowerCase(Locale.ROOT);
            if (lower.startsWith("content-length:")) {
              length = Long.parseLong(h.substring(h.indexOf(':') + 1).trim());
            } else if (lower.startsWith("transfer-encoding:") && lower.contains("chunked")) {
              chunked = true;
            }
          }
          ByteArrayOutputStream body = new ByteArrayOutputStream();
          boolean whole =
              chunked ? readChunked(in, body) : readFixed(in, Math.max(0, length), body);
          received.add(
              index
                  + ":"
                  + method
                  + (chunked ? " chunked" : " length " + length)
                  + (whole ? " whole " : " cut ")
                  + body.toString(StandardCharsets.US_ASCII));
          if (!whole) {
            return;
          }
          if (answers) {
            out.write(
                "HTTP/1.1 200 OK\r\nContent-Length: 6\r\nConnection: close\r\n\r\nstored"
                    .getBytes(StandardCharsets.US_ASCII));
            out.flush();
          }
          // Read to the client's close: the connection is done once the client is.
          while (in.read() != -1) {
            // nothing more is expected
          }
          return;
        }
      } catch (IOException e) {
        // the client went away, or we are closing
      } finally {
        done.add(s);
      }
    }

    private static boolean readFixed(InputStream in, long length, ByteArrayOutputStream body)
        throws IOException {
      for (long i = 0; i < length; i++) {
        int c = in.read();
        if (c == -1) {
          return false;
        }
        body.write(c);
      }
      return true;
    }

    private static boolean readChunked(InputStream in, ByteArrayOutputStream body)
        throws IOException {
      while (true) {
        String size = readLine(in);
        if (size == null) {
          return false;
        }
        int n;
        try {
          n = Integer.parseInt(size.split(";")[0].trim(), 16);
        } catch (NumberFormatException e) {
          return false; // a size line cut short
        }
        if (n == 0) {
          return readLine(in) != null;
        }
        for (int i = 0; i < n; i++) {
          int c = in.read();
          if (c == -1) {
            return false;
          }
          body.write(c);
        }
        if (readLine(in) == null) {
          return false;
        }
      }
    }

    private static String readLine(InputStream in) throws IOException {
      ByteArrayOutputStream line = new ByteArrayOutputStream();
      int c;
      while ((c = in.read()) != -1 && c != '\n') {
        if (c != '\r') {
          line.write(c);
        }
      }
      return c == -1 && line.size() == 0 ? null : line.toString(StandardCharsets.ISO_8859_1);
    }

    @Override
    public void close() throws IOException {
      closed = true;
      socket.close();
      synchronized (accepted) {
        for (Socket s : accepted) {
          s.close();
        }
      }
      pool.shutdownNow();
    }
  }
}
