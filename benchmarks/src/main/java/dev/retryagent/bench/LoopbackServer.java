package dev.retryagent.bench;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A JDK {@code HttpServer} on the loopback interface that counts the requests it answers; what it
 * answers is up to a {@link Responder}. For the benchmarks and whole-process runs only.
 */
public final class LoopbackServer implements AutoCloseable {
  static {
    // Without TCP_NODELAY the JDK server's head and body packets meet the client's delayed ACK:
    // every call would take ~40 ms and measure the kernel, not the clients. Read once, when the
    // server classes initialise, so it is set before any server starts.
    System.setProperty("sun.net.httpserver.nodelay", "true");
  }

  /** Decides the answer to one request; runs on the server's threads, must be thread-safe. */
  @FunctionalInterface
  public interface Responder {
    Reply respond(String method, String path) throws InterruptedException;
  }

  /** One answer: a status, an optional {@code Retry-After}, and whether to close the connection. */
  public static final class Reply {
    private static final byte[] OK_BODY = "ok".getBytes(StandardCharsets.UTF_8);
    private static final byte[] ERROR_BODY = "busy".getBytes(StandardCharsets.UTF_8);

    final int status;
    final String retryAfter;
    final boolean close;

    private Reply(int status, String retryAfter, boolean close) {
      this.status = status;
      this.retryAfter = retryAfter;
      this.close = close;
    }

    public static Reply of(int status) {
      return new Reply(status, null, false);
    }

    /** The same answer with a {@code Retry-After} header. */
    public Reply retryAfter(String value) {
      return new Reply(status, value, close);
    }

    /** The same answer with {@code Connection: close}: the client keeps no pooled connection. */
    public Reply closing() {
      return new Reply(status, retryAfter, true);
    }

    /** {@code closing()} when {@code close} is true, else this answer. */
    public Reply closingIf(boolean close) {
      return close ? closing() : this;
    }
  }

  private final HttpServer server;
  private final ExecutorService executor;
  private final AtomicLong requests = new AtomicLong();

  private LoopbackServer(HttpServer server, ExecutorService executor) {
    this.server = server;
    this.executor = executor;
  }

  /**
   * Starts a server whose handlers run on a cached pool (a responder may block, e.g. to model a
   * write that takes time).
   *
   * @param backlog the listen backlog: a burst of thousands of connections needs a long one
   */
  public static LoopbackServer start(int backlog, Responder responder) throws IOException {
    HttpServer server =
        HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), backlog);
    ExecutorService executor =
        Executors.newCachedThreadPool(
            r -> {
              Thread t = new Thread(r, "loopback-server");
              t.setDaemon(true);
              return t;
            });
    LoopbackServer s = new LoopbackServer(server, executor);
    server.createContext("/", exchange -> s.answer(exchange, responder));
    server.setExecutor(executor);
    server.start();
    return s;
  }

  /**
   * A server that answers {@code 200 ok}, except the first request to each path under {@code
   * /probe/}, which gets {@code 503}: a client that retries sees 200 there, one that does not sees
   * 503. The benchmarks use it to check that retries are (or are not) wired in before measuring.
   */
  public static LoopbackServer okWithProbe() throws IOException {
    Set<String> probed = ConcurrentHashMap.newKeySet();
    return start(
        64, (method, path) -> Reply.of(path.startsWith("/probe/") && probed.add(path) ? 503 : 200));
  }

  private void answer(HttpExchange exchange, Responder responder) throws IOException {
    try {
      exchange.getRequestBody().readAllBytes();
      requests.incrementAndGet();
      Reply reply;
      try {
        reply = responder.respond(exchange.getRequestMethod(), exchange.getRequestURI().getPath());
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return;
      }
      if (reply.retryAfter != null) {
        exchange.getResponseHeaders().add("Retry-After", reply.retryAfter);
      }
      if (reply.close) {
        exchange.getResponseHeaders().add("Connection", "close");
      }
      byte[] body = reply.status < 300 ? Reply.OK_BODY : Reply.ERROR_BODY;
      exchange.sendResponseHeaders(reply.status, body.length);
      try (OutputStream out = exchange.getResponseBody()) {
        out.write(body);
      }
    } finally {
      exchange.close();
    }
  }

  /** {@code http://127.0.0.1:PORT} followed by {@code path}. */
  public String url(String path) {
    return "http://127.0.0.1:" + port() + path;
  }

  public int port() {
    return server.getAddress().getPort();
  }

  /** Requests answered (or being answered) so far. */
  public long requests() {
    return requests.get();
  }

  @Override
  public void close() {
    server.stop(0);
    executor.shutdownNow();
  }
}
