package dev.retryagent.demo.server;

import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.Closeable;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A small HTTP/1.1 server on raw sockets, bound to 127.0.0.1 on an ephemeral port. Raw sockets
 * because the demo needs what {@code com.sun.net.httpserver} cannot do: abort a connection with a
 * real TCP reset after reading a request. Keep-alive connections, one thread per connection.
 *
 * <p>Closing the server closes the listening socket and every open connection; its threads are
 * daemons, so a forgotten server never keeps a JVM alive.
 */
public final class MiniHttpServer implements Closeable {
  /** An idle keep-alive connection is closed after this long, so its thread ends. */
  static final int IDLE_TIMEOUT_MILLIS = 30_000;

  private final ServerSocket listener;
  private final Handler handler;
  private final ExecutorService connections;
  private final Set<Socket> open = ConcurrentHashMap.newKeySet();
  private final Thread acceptor;
  private volatile boolean closed;

  private MiniHttpServer(String name, Handler handler) throws IOException {
    this.handler = handler;
    this.listener = new ServerSocket(0, 128, InetAddress.getLoopbackAddress());
    AtomicInteger n = new AtomicInteger();
    this.connections =
        Executors.newCachedThreadPool(
            r -> {
              Thread t = new Thread(r, name + "-conn-" + n.incrementAndGet());
              t.setDaemon(true);
              return t;
            });
    this.acceptor = new Thread(this::acceptLoop, name + "-acceptor");
    acceptor.setDaemon(true);
  }

  /**
   * Starts a server named {@code name} (used for its threads) that answers with {@code handler}.
   */
  public static MiniHttpServer start(String name, Handler handler) throws IOException {
    MiniHttpServer s = new MiniHttpServer(name, handler);
    s.acceptor.start();
    return s;
  }

  public int port() {
    return listener.getLocalPort();
  }

  /** {@code http://127.0.0.1:PORT}, without a trailing slash. */
  public URI baseUri() {
    return URI.create("http://127.0.0.1:" + port());
  }

  private void acceptLoop() {
    while (!closed) {
      Socket s;
      try {
        s = listener.accept();
      } catch (IOException e) {
        return; // listener closed
      }
      open.add(s);
      try {
        connections.execute(() -> serve(s));
      } catch (RuntimeException rejected) {
        closeQuietly(s);
      }
    }
  }

  private void serve(Socket s) {
    try (s) {
      s.setSoTimeout(IDLE_TIMEOUT_MILLIS);
      s.setTcpNoDelay(true);
      RequestReader reader = new RequestReader(new BufferedInputStream(s.getInputStream()));
      OutputStream out = new BufferedOutputStream(s.getOutputStream());
      while (!closed) {
        ServerRequest request;
        try {
          request = reader.next();
        } catch (RequestReader.BadRequest e) {
          write(
              out,
              ServerReply.json(400, "Bad Request", Map.of(), "{\"error\":\"bad request\"}"),
              true);
          return;
        }
        if (request == null) {
          return;
        }
        ServerReply reply = handler.handle(request);
        if (reply.isReset()) {
          // SO_LINGER 0 turns close() into an abortive close: the peer gets RST, not FIN.
          s.setSoLinger(true, 0);
          return;
        }
        boolean close = request.wantsClose();
        write(out, reply, close);
        if (close) {
          return;
        }
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } catch (IOException | RuntimeException e) {
      // the client went away or the server is closing: nothing to answer
    } finally {
      open.remove(s);
    }
  }

  private static void write(OutputStream out, ServerReply reply, boolean close) throws IOException {
    StringBuilder head =
        new StringBuilder("HTTP/1.1 ")
            .append(reply.status())
            .append(' ')
            .append(reply.reason())
            .append("\r\n");
    for (Map.Entry<String, String> h : reply.headers().entrySet()) {
      head.append(h.getKey()).append(": ").append(h.getValue()).append("\r\n");
    }
    head.append("Content-Length: ").append(reply.body().length).append("\r\n");
    head.append("Connection: ").append(close ? "close" : "keep-alive").append("\r\n\r\n");
    out.write(head.toString().getBytes(StandardCharsets.ISO_8859_1));
    out.write(reply.body());
    out.flush();
  }

  private static void closeQuietly(Socket s) {
    try {
      s.close();
    } catch (IOException ignored) {
      // closing anyway
    }
  }

  /** Stops accepting, closes every open connection and stops the connection threads. */
  @Override
  public void close() {
    closed = true;
    try {
      listener.close();
    } catch (IOException ignored) {
      // closing anyway
    }
    for (Socket s : open) {
      closeQuietly(s);
    }
    connections.shutdownNow();
  }
}
