package dev.retryagent.fleet;

import java.io.BufferedInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import java.util.function.Function;

/**
 * A loopback server that speaks just enough RESP for the fleet's connections, answering each script
 * with what the test says: for replies a real Redis never sends (a malformed one from a proxy or a
 * Redis-compatible server). Every other command is answered {@code +OK} ({@code PING} {@code
 * +PONG}).
 */
final class FakeRedis implements AutoCloseable {
  private final ServerSocket server;
  private final List<Socket> clients = new CopyOnWriteArrayList<>();
  private final Thread acceptor;

  /** The raw RESP reply to a script's run (EVALSHA/EVAL), by the script's SHA-1. */
  volatile Function<String, String> scriptReply = sha -> ":1\r\n";

  /**
   * Told every command (its name and arguments) before it is answered: to stand for a slow Redis.
   */
  volatile Consumer<List<String>> onCommand = command -> {};

  /** The raw RESP reply to any other command (AUTH, CLIENT, SELECT...), or null for {@code +OK}. */
  volatile Function<List<String>, String> otherReply = command -> null;

  /**
   * Above 0: a script's reply is written one byte at a time, this many milliseconds apart (a server
   * that trickles, each byte well within a read's timeout), until the fake is closed.
   */
  volatile long trickleMillis;

  private final CountDownLatch closed = new CountDownLatch(1);

  /** The names of the commands received, in order. */
  final List<String> received = new CopyOnWriteArrayList<>();

  FakeRedis() throws IOException {
    server = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
    acceptor = new Thread(this::accept, "fake-redis");
    acceptor.setDaemon(true);
    acceptor.start();
  }

  String url() {
    return "redis://127.0.0.1:" + server.getLocalPort();
  }

  private void accept() {
    while (!server.isClosed()) {
      try {
        Socket s = server.accept();
        clients.add(s);
        Thread t = new Thread(() -> serve(s), "fake-redis-client");
        t.setDaemon(true);
        t.start();
      } catch (IOException e) {
        return;
      }
    }
  }

  private void serve(Socket s) {
    try (Socket socket = s) {
      InputStream in = new BufferedInputStream(socket.getInputStream());
      OutputStream out = socket.getOutputStream();
      while (true) {
        List<String> command = readCommand(in);
        if (command == null) {
          return;
        }
        String name = command.get(0).toUpperCase(java.util.Locale.ROOT);
        received.add(name);
        onCommand.accept(command);
        String reply;
        if (name.equals("PING")) {
          reply = "+PONG\r\n";
        } else if (name.equals("EVALSHA")) {
          reply = scriptReply.apply(command.get(1));
        } else if (name.equals("EVAL")) {
          reply = scriptReply.apply(Scripts.sha1(command.get(1)));
        } else {
          String other = otherReply.apply(command);
          reply = other != null ? other : "+OK\r\n";
        }
        byte[] bytes = reply.getBytes(StandardCharsets.UTF_8);
        long trickle = trickleMillis;
        if (trickle > 0 && (name.equals("EVALSHA") || name.equals("EVAL"))) {
          for (byte b : bytes) {
            // The pace of the trickle, cut short when the fake closes.
            if (closed.await(trickle, TimeUnit.MILLISECONDS)) {
              return;
            }
            out.write(b);
            out.flush();
          }
          continue;
        }
        out.write(bytes);
        out.flush();
      }
    } catch (IOException e) {
      // the client went away, or the server closed
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  private static List<String> readCommand(InputStream in) throws IOException {
    String header = readLine(in);
    if (header == null) {
      return null;
    }
    int count = Integer.parseInt(header.substring(1));
    List<String> parts = new ArrayList<>(count);
    for (int i = 0; i < count; i++) {
      int length = Integer.parseInt(readLine(in).substring(1));
      byte[] bytes = in.readNBytes(length);
      in.readNBytes(2);
      parts.add(new String(bytes, StandardCharsets.UTF_8));
    }
    return parts;
  }

  private static String readLine(InputStream in) throws IOException {
    StringBuilder b = new StringBuilder();
    int c;
    while ((c = in.read()) != -1) {
      if (c == '\r') {
        in.read();
        return b.toString();
      }
      b.append((char) c);
    }
    return null;
  }

  @Override
  public void close() throws IOException {
    closed.countDown();
    server.close();
    for (Socket s : clients) {
      s.close();
    }
  }
}
