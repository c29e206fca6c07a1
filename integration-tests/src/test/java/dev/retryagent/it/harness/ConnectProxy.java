package dev.retryagent.it.harness;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * A loopback HTTP proxy that only tunnels: each {@code CONNECT host:port} is answered {@code 200
 * Connection established} (no length, as proxies answer it) and the bytes are then copied both ways
 * until either side closes. Records the targets of the tunnels it opened.
 */
public final class ConnectProxy implements AutoCloseable {
  private final ServerSocket server;
  private final List<String> tunnels = new CopyOnWriteArrayList<>();
  private final List<Socket> sockets = new CopyOnWriteArrayList<>();

  private ConnectProxy(ServerSocket server) {
    this.server = server;
  }

  public static ConnectProxy start() throws IOException {
    ConnectProxy p = new ConnectProxy(new ServerSocket(0, 50, InetAddress.getLoopbackAddress()));
    Thread t = new Thread(p::accept, "connect-proxy");
    t.setDaemon(true);
    t.start();
    return p;
  }

  public int port() {
    return server.getLocalPort();
  }

  /** The {@code host:port} of each tunnel opened, in order. */
  public List<String> tunnels() {
    return List.copyOf(tunnels);
  }

  private void accept() {
    while (!server.isClosed()) {
      try {
        Socket client = server.accept();
        sockets.add(client);
        Thread t = new Thread(() -> tunnel(client), "connect-proxy-tunnel");
        t.setDaemon(true);
        t.start();
      } catch (IOException closed) {
        return;
      }
    }
  }

  private void tunnel(Socket client) {
    try {
      InputStream in = client.getInputStream();
      String head = readHead(in);
      String[] line = head.split("\r\n", 2)[0].split(" ");
      if (line.length < 2 || !line[0].equals("CONNECT")) {
        client.close();
        return;
      }
      String target = line[1];
      tunnels.add(target);
      int colon = target.lastIndexOf(':');
      Socket upstream =
          new Socket(target.substring(0, colon), Integer.parseInt(target.substring(colon + 1)));
      sockets.add(upstream);
      OutputStream out = client.getOutputStream();
      out.write("HTTP/1.1 200 Connection established\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
      out.flush();
      Thread back = new Thread(() -> copy(upstream, client), "connect-proxy-back");
      back.setDaemon(true);
      back.start();
      copy(client, upstream);
    } catch (IOException | RuntimeException e) {
      closeQuietly(client);
    }
  }

  private static String readHead(InputStream in) throws IOException {
    ByteArrayOutputStream head = new ByteArrayOutputStream();
    int b;
    while ((b = in.read()) != -1) {
      head.write(b);
      byte[] h = head.toByteArray();
      int n = h.length;
      if (n >= 4 && h[n - 4] == '\r' && h[n - 3] == '\n' && h[n - 2] == '\r' && h[n - 1] == '\n') {
        break;
      }
    }
    return head.toString(StandardCharsets.US_ASCII);
  }

  private static void copy(Socket from, Socket to) {
    try {
      from.getInputStream().transferTo(to.getOutputStream());
    } catch (IOException e) {
      // either side closed
    } finally {
      closeQuietly(from);
      closeQuietly(to);
    }
  }

  private static void closeQuietly(Socket s) {
    try {
      s.close();
    } catch (IOException ignored) {
      // closing anyway
    }
  }

  @Override
  public void close() throws IOException {
    server.close();
    for (Socket s : sockets) {
      closeQuietly(s);
    }
  }
}
