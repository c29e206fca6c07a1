package dev.retryagent.it.harness;

import java.io.BufferedInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A loopback server that breaks the writing of a request: on every odd-numbered connection it reads
 * the request's head, then resets the connection without reading the body, so a client writing a
 * body larger than the socket buffers gets a write error (the JDK's {@code HttpURLConnection} then
 * writes the whole request once more, on a new connection, by itself). On even-numbered connections
 * it reads the request and answers with the next status of its script. Counts connections and
 * complete requests.
 */
public final class RewriteServer implements AutoCloseable {
  private final ServerSocket socket;
  private final ExecutorService threads =
      Executors.newCachedThreadPool(
          r -> {
            Thread t = new Thread(r, "rewrite-server");
            t.setDaemon(true);
            return t;
          });
  private final AtomicInteger connections = new AtomicInteger();
  private final List<Integer> statuses;
  private final List<Integer> bodyLengths = new ArrayList<>();

  private RewriteServer(ServerSocket socket, List<Integer> statuses) {
    this.socket = socket;
    this.statuses = statuses;
    threads.execute(this::accept);
  }

  /** The statuses to answer on connections 2, 4, 6, ... in order (the last one repeats). */
  public static RewriteServer start(Integer... statuses) throws IOException {
    ServerSocket s = new ServerSocket();
    s.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
    return new RewriteServer(s, List.of(statuses));
  }

  public URI uri(String path) {
    return URI.create("http://127.0.0.1:" + socket.getLocalPort() + path);
  }

  public int connectionCount() {
    return connections.get();
  }

  /** Complete requests read (on even connections): their body lengths. */
  public synchronized List<Integer> bodyLengths() {
    return List.copyOf(bodyLengths);
  }

  private void accept() {
    while (!socket.isClosed()) {
      try {
        Socket s = socket.accept();
        int n = connections.incrementAndGet();
        threads.execute(() -> serve(s, n));
      } catch (IOException | java.util.concurrent.RejectedExecutionException e) {
        return;
      }
    }
  }

  private void serve(Socket s, int n) {
    try (s) {
      InputStream in = new BufferedInputStream(s.getInputStream());
      long length = 0;
      for (String line = readLine(in); line != null && !line.isEmpty(); line = readLine(in)) {
        String lower = line.toLowerCase(Locale.ROOT);
        if (lower.startsWith("content-length:")) {
          length = Long.parseLong(lower.substring("content-length:".length()).trim());
        }
      }
      if (n % 2 == 1) {
        s.setSoLinger(true, 0); // RST while the client still writes its body
        return;
      }
      in.skipNBytes(length);
      synchronized (this) {
        bodyLengths.add((int) length);
      }
      int status = statuses.get(Math.min(n / 2 - 1, statuses.size() - 1));
      OutputStream out = s.getOutputStream();
      out.write(
          ("HTTP/1.1 " + status + " Status\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
              .getBytes(StandardCharsets.ISO_8859_1));
      out.flush();
    } catch (IOException e) {
      // the client went away
    }
  }

  private static String readLine(InputStream in) throws IOException {
    ByteArrayOutputStream line = new ByteArrayOutputStream();
    for (int b = in.read(); b != -1; b = in.read()) {
      if (b == '\n') {
        String s = line.toString(StandardCharsets.ISO_8859_1);
        return s.endsWith("\r") ? s.substring(0, s.length() - 1) : s;
      }
      line.write(b);
    }
    return line.size() == 0 ? null : line.toString(StandardCharsets.ISO_8859_1);
  }

  @Override
  public void close() throws IOException {
    socket.close();
    threads.shutdownNow();
  }
}
