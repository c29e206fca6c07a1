package dev.retryagent.testing;

import java.io.ByteArrayOutputStream;
import java.io.Closeable;
import java.io.DataInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * A loopback HTTP/2 server in clear text (h2c, reached by the client's HTTP/1.1 upgrade) that
 * pushes: each request is answered with a PUSH_PROMISE of {@code /pushed-<stream>} first, then its
 * response (the next status of the script, else 200), then the pushed response. Just enough of
 * HTTP/2 for java.net.http's client: the client's header blocks are not decoded (a new request is a
 * HEADERS frame on a new stream, answered at once: a request body is not waited for), the server's
 * are literals without indexing. {@link #priorKnowledge()} makes one for OkHttp instead.
 */
public final class PushingH2cServer implements Closeable {
  private final ServerSocket socket;
  private final boolean upgrade; // false: the client starts with HTTP/2's preface, and no pushes
  private final boolean push;
  private final ConcurrentLinkedQueue<String[]> replies = new ConcurrentLinkedQueue<>();
  private final List<Integer> requestStreams = new CopyOnWriteArrayList<>();
  // The request bodies received (DATA frames, unpadded as clients send them), and the streams
  // whose body ended (END_STREAM).
  private final java.util.Map<Integer, ByteArrayOutputStream> bodies =
      new java.util.concurrent.ConcurrentHashMap<>();
  private final java.util.Set<Integer> ended = java.util.concurrent.ConcurrentHashMap.newKeySet();
  private final List<Socket> open = new CopyOnWriteArrayList<>();
  private final List<Connection> connections = new CopyOnWriteArrayList<>();
  private final Thread acceptor;
  // Answers (or refuses) a request once it arrived whole, not at its HEADERS frame.
  private volatile boolean whole;

  public PushingH2cServer() throws IOException {
    this(true);
  }

  /**
   * A server reached with prior knowledge (OkHttp's {@code Protocol.H2_PRIOR_KNOWLEDGE}) that does
   * not push: OkHttp neither upgrades nor takes pushes.
   */
  public static PushingH2cServer priorKnowledge() throws IOException {
    return new PushingH2cServer(false, false);
  }

  /**
   * A server reached by the upgrade (java.net.http) that does not push: for a client without a
   * push-promise handler, which takes a push for a protocol error.
   */
  public static PushingH2cServer withoutPushes() throws IOException {
    return new PushingH2cServer(true, false);
  }

  private PushingH2cServer(boolean upgrade) throws IOException {
    this(upgrade, upgrade);
  }

  private PushingH2cServer(boolean upgrade, boolean push) throws IOException {
    this.upgrade = upgrade;
    this.push = push;
    socket = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
    acceptor = new Thread(this::accept, "h2c-accept");
    acceptor.setDaemon(true);
    acceptor.start();
  }

  /**
   * Answers, resets or refuses each request once it arrived whole (its END_STREAM), not at its
   * HEADERS frame: a refusal then never races the client's write of the body (OkHttp gives a
   * refusal that arrives while it still writes back instead of resending, or fails the write).
   */
  public PushingH2cServer answeringWholeRequests() {
    whole = true;
    return this;
  }

  /**
   * The next request gets no answer: its stream stays open until the client resets it (a cancel) or
   * the connection closes.
   */
  public PushingH2cServer enqueueNoAnswer() {
    replies.add(new String[] {NO_ANSWER});
    return this;
  }

  private static final String NO_ANSWER = "none";
  private static final String RESET = "reset";
  private static final String GOAWAY = "goaway";
  private static final String GOAWAY_REFUSING = "goaway-refusing";

  /** HTTP/2's error codes used here. */
  public static final int NO_ERROR = 0;

  public static final int INTERNAL_ERROR = 2;
  public static final int REFUSED_STREAM = 7;
  public static final int CANCEL = 8;

  /**
   * The next request's stream is reset (RST_STREAM) with {@code errorCode} instead of answered:
   * {@link #REFUSED_STREAM} says the server did not process it, any other code may have.
   */
  public PushingH2cServer enqueueReset(int errorCode) {
    replies.add(new String[] {RESET, Integer.toString(errorCode)});
    return this;
  }

  /**
   * The next request is not answered: its connection gets GOAWAY (NO_ERROR) and is closed. {@code
   * processed}: the GOAWAY's last stream id is the request's own (the server may have acted on it),
   * else the one before it (the request was not processed, safe to send again).
   */
  public PushingH2cServer enqueueGoAway(boolean processed) {
    replies.add(new String[] {GOAWAY, Boolean.toString(processed)});
    return this;
  }

  /**
   * The next request is refused unprocessed: its connection gets GOAWAY (NO_ERROR) with the stream
   * before it as the last (and stays open), and from then on the server refuses new connections (it
   * stops listening), so that a client's resend of the request finds no connection.
   */
  public PushingH2cServer enqueueGoAwayThenRefuseConnections() {
    replies.add(new String[] {GOAWAY_REFUSING});
    return this;
  }

  /**
   * Every open connection gets GOAWAY (NO_ERROR) with {@code lastStreamId}: the streams above it
   * were not processed. {@code close}: the connections are closed after it (a stream at or below
   * it, unanswered, then fails with the connection), else they stay open.
   */
  public void goAwayAll(int lastStreamId, boolean close) throws IOException {
    for (Connection c : connections) {
      c.goAway(lastStreamId);
      if (close) {
        c.socket.close();
      }
    }
  }

  /** Closes every open connection abruptly, whatever its streams. */
  public void dropConnections() throws IOException {
    for (Socket s : open) {
      s.close();
    }
  }

  /** The statuses of the next responses, in order. */
  public PushingH2cServer enqueue(Integer... s) {
    for (Integer status : s) {
      replies.add(new String[] {status.toString()});
    }
    return this;
  }

  /** The next response: {@code status} with the header {@code name} (lower case) and value. */
  public PushingH2cServer enqueue(int status, String name, String value) {
    replies.add(new String[] {Integer.toString(status), name, value});
    return this;
  }

  public String url(String path) {
    return "http://127.0.0.1:" + socket.getLocalPort() + path;
  }

  /** The streams of the requests received (1 is the upgraded request), in order. */
  public List<Integer> requestStreams() {
    return requestStreams;
  }

  /** The body received so far on request stream {@code stream}, and whether it ended. */
  public String requestBody(int stream) {
    ByteArrayOutputStream b = bodies.get(stream);
    String body;
    synchronized (bodies) {
      body = b == null ? "" : new String(b.toByteArray(), StandardCharsets.UTF_8);
    }
    return ended.contains(stream) ? body + "<end>" : body;
  }

  private void accept() {
    while (!socket.isClosed()) {
      try {
        Socket s = socket.accept();
        open.add(s);
        Thread t = new Thread(() -> serve(s), "h2c-conn");
        t.setDaemon(true);
        t.start();
      } catch (IOException e) {
        return;
      }
    }
  }

  private void serve(Socket s) {
    try (s) {
      s.setSoTimeout(10_000);
      DataInputStream in = new DataInputStream(s.getInputStream());
      OutputStream out = s.getOutputStream();
      if (upgrade) {
        while (!readLine(in).isEmpty()) {
          // the upgrade request's head (a GET: no body)
        }
        out.write(
            "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: h2c\r\n\r\n"
                .getBytes(StandardCharsets.ISO_8859_1));
      }
      Connection c = new Connection(s, out);
      connections.add(c);
      c.frame(4, 0, 0, new byte[0]); // the server's SETTINGS
      in.readFully(new byte[24]); // the client's preface
      if (upgrade) {
        c.answer(1);
      }
      while (true) {
        int length = in.readUnsignedShort() << 8 | in.readUnsignedByte();
        int type = in.readUnsignedByte();
        int flags = in.readUnsignedByte();
        int stream = in.readInt() & 0x7fffffff;
        byte[] payload = new byte[length];
        in.readFully(payload);
        if (type == 0 && (stream & 1) == 1) {
          synchronized (bodies) {
            bodies.computeIfAbsent(stream, k -> new ByteArrayOutputStream()).write(payload);
          }
          if ((flags & 1) == 1) {
            ended.add(stream);
            if (whole) {
              c.answer(stream);
            }
          }
        } else if (type == 4 && (flags & 1) == 0) {
          c.frame(4, 1, 0, new byte[0]); // SETTINGS ACK
        } else if (type == 1 && (stream & 1) == 1 && (!whole || (flags & 1) == 1)) {
          c.answer(stream);
        }
      }
    } catch (IOException e) {
      // the client went away, or we are closing
    } finally {
      open.remove(s);
      connections.removeIf(c -> c.socket == s);
    }
  }

  private final class Connection {
    private final Socket socket;
    private final OutputStream out;
    private int nextPush = 2;

    Connection(Socket socket, OutputStream out) {
      this.socket = socket;
      this.out = out;
    }

    synchronized void goAway(int lastStreamId) throws IOException {
      ByteArrayOutputStream payload = new ByteArrayOutputStream();
      payload.writeBytes(int4(lastStreamId));
      payload.writeBytes(int4(NO_ERROR));
      frame(7, 0, 0, payload.toByteArray());
    }

    synchronized void answer(int stream) throws IOException {
      requestStreams.add(stream);
      String[] reply = replies.poll();
      if (reply != null && reply[0] == NO_ANSWER) {
        return;
      }
      if (reply != null && reply[0] == RESET) {
        frame(3, 0, stream, int4(Integer.parseInt(reply[1])));
        return;
      }
      if (reply != null && reply[0] == GOAWAY_REFUSING) {
        PushingH2cServer.this.socket.close(); // first: refused before the client hears the GOAWAY
        // The connection stays open, as a server's that ends gracefully: closed at once, the
        // client may take the end of the connection for the stream's failure before the GOAWAY.
        goAway(Math.max(0, stream - 2));
        return;
      }
      if (reply != null && reply[0] == GOAWAY) {
        goAway(Boolean.parseBoolean(reply[1]) ? stream : Math.max(0, stream - 2));
        socket.close();
        return;
      }
      String status = reply == null ? "200" : reply[0];
      int promised = nextPush;
      nextPush += 2;
      if (push) {
        ByteArrayOutputStream promise = new ByteArrayOutputStream();
        promise.write(int4(promised));
        literal(promise, ":method", "GET");
        literal(promise, ":scheme", "http");
        literal(promise, ":authority", "127.0.0.1:" + socket.getLocalPort());
        literal(promise, ":path", "/pushed-" + stream);
        frame(5, 4, stream, promise.toByteArray());
      }
      ByteArrayOutputStream head = new ByteArrayOutputStream();
      literal(head, ":status", status);
      if (reply != null && reply.length == 3) {
        literal(head, reply[1], reply[2]);
      }
      frame(1, 4, stream, head.toByteArray());
      frame(0, 1, stream, ("status " + status).getBytes());
      if (!push) {
        return;
      }
      ByteArrayOutputStream pushed = new ByteArrayOutputStream();
      literal(pushed, ":status", "200");
      frame(1, 4, promised, pushed.toByteArray());
      frame(0, 1, promised, ("pushed for stream " + stream).getBytes());
    }

    synchronized void frame(int type, int flags, int stream, byte[] payload) throws IOException {
      out.write(
          new byte[] {
            (byte) (payload.length >>> 16), (byte) (payload.length >>> 8), (byte) payload.length
          });
      out.write(type);
      out.write(flags);
      out.write(int4(stream));
      out.write(payload);
      out.flush();
    }
  }

  /** A header as HPACK's literal without indexing, with a literal name (all short). */
  private static void literal(ByteArrayOutputStream b, String name, String value) {
    b.write(0);
    for (String s : new String[] {name, value}) {
      byte[] bytes = s.getBytes(StandardCharsets.ISO_8859_1);
      b.write(bytes.length);
      b.writeBytes(bytes);
    }
  }

  private static byte[] int4(int v) {
    return new byte[] {(byte) (v >>> 24), (byte) (v >>> 16), (byte) (v >>> 8), (byte) v};
  }

  private static String readLine(InputStream in) throws IOException {
    ByteArrayOutputStream line = new ByteArrayOutputStream();
    int c;
    while ((c = in.read()) != -1 && c != '\n') {
      if (c != '\r') {
        line.write(c);
      }
    }
    if (c == -1) {
      throw new IOException("closed");
    }
    return line.toString(StandardCharsets.ISO_8859_1);
  }

  @Override
  public void close() throws IOException {
    socket.close();
    for (Socket s : open) {
      s.close();
    }
  }
}
