package dev.retryagent.it.harness;

import java.io.ByteArrayOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A loopback HTTP/1.1 server for tests that counts and records every request and answers each with
 * the next scripted {@link Reply} (or the default reply once the script is used up). It can also
 * reset or close a connection, or never answer.
 *
 * <pre>{@code
 * try (CountingServer server = CountingServer.start()) {
 *   server.enqueue(Reply.status(503), Reply.ok("done"));
 *   ... run the client against server.uri("/orders") ...
 *   assertThat(server.requestCount()).isEqualTo(2);
 * }
 * }</pre>
 *
 * Keep-alive connections are served; request bodies are read by Content-Length or chunked encoding.
 * Only 127.0.0.1 is bound. Thread-safe; {@link #close()} stops everything it started.
 */
public final class CountingServer implements AutoCloseable {
  private final ServerSocket serverSocket;
  private final ExecutorService threads;
  private final Deque<Reply> script = new ArrayDeque<>();
  private final List<RecordedRequest> requests = new ArrayList<>();
  private final List<Long> arrivals = new ArrayList<>();
  private final List<Reply> replies = new ArrayList<>();
  private final Set<Socket> open = ConcurrentHashMap.newKeySet();
  private final AtomicInteger connections = new AtomicInteger();
  private final CountDownLatch closed = new CountDownLatch(1);
  private volatile Reply defaultReply = Reply.ok("ok");
  private volatile boolean readBodies = true;
  private volatile java.util.function.Predicate<RecordedRequest> admits = r -> true;
  private volatile java.util.function.Function<RecordedRequest, Reply> responder;
  private int strays;
  private int answered;
  private int followUps;

  /**
   * The path of a follow-up request: answered {@code 200 ok} whatever the script says, and counted
   * apart ({@link #followUpCount()}), never as one of the {@link #requests()}.
   */
  public static final String FOLLOW_UP_PATH = "/follow-up";

  private static final Reply FOLLOW_UP = Reply.ok("ok");

  private static final Reply STRAY = Reply.status(421).withHeader("Connection", "close");

  private CountingServer(ServerSocket serverSocket) {
    this.serverSocket = serverSocket;
    this.threads =
        Executors.newCachedThreadPool(
            r -> {
              Thread t = new Thread(r, "counting-server");
              t.setDaemon(true);
              return t;
            });
    threads.execute(this::acceptLoop);
  }

  /** Starts a server on an ephemeral loopback port. */
  public static CountingServer start() throws IOException {
    ServerSocket socket = new ServerSocket();
    socket.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
    return new CountingServer(socket);
  }

  /** {@code http://127.0.0.1:<port><path>}. */
  public URI uri(String path) {
    return URI.create("http://127.0.0.1:" + serverSocket.getLocalPort() + path);
  }

  public int port() {
    return serverSocket.getLocalPort();
  }

  /** Adds replies to the script, in order. */
  public synchronized CountingServer enqueue(Reply... replies) {
    script.addAll(List.of(replies));
    return this;
  }

  /** The reply once the script is used up ({@code 200 ok} unless set). */
  public CountingServer setDefaultReply(Reply reply) {
    defaultReply = reply;
    return this;
  }

  /**
   * From now on, a request is recorded (with an empty body) and answered once its head is read, and
   * its body is left unread: with {@link Reply#hang()}, a client that sends a body larger than the
   * socket buffers stalls in its write (a write timeout).
   */
  public CountingServer leaveBodiesUnread() {
    readBodies = false;
    return this;
  }

  /**
   * From now on, only requests that {@code admit} accepts are recorded, counted and answered from
   * the script; any other (a stray request, say a late retry of another process's to a port this
   * server now has) is answered 421 and only counted as a {@link #strayCount() stray}.
   */
  public CountingServer admitOnly(java.util.function.Predicate<RecordedRequest> admit) {
    admits = admit;
    return this;
  }

  /**
   * From now on every admitted request is answered by {@code respond} (on the connection's thread,
   * concurrently: it must be thread-safe) instead of the script, and is counted but not kept: for
   * long runs, whose requests would fill the heap. {@link #requests()} holds only those before.
   */
  public CountingServer answerWith(java.util.function.Function<RecordedRequest, Reply> respond) {
    responder = respond;
    return this;
  }

  /** Requests that {@link #admitOnly} turned away. */
  public synchronized int strayCount() {
    return strays;
  }

  /**
   * When each of {@link #requests()} was fully read, by this JVM's {@link System#nanoTime()}, in
   * the same order: the server's own clock, for counting per second.
   */
  public synchronized List<Long> arrivalNanos() {
    return List.copyOf(arrivals);
  }

  /** The reply each of {@link #requests()} was given, in the same order. */
  public synchronized List<Reply> replies() {
    return List.copyOf(replies);
  }

  /** Requests to {@link #FOLLOW_UP_PATH} so far. */
  public synchronized int followUpCount() {
    return followUps;
  }

  /** Requests fully read so far. */
  public synchronized int requestCount() {
    return requests.size() + answered;
  }

  /** Connections accepted so far. */
  public int connectionCount() {
    return connections.get();
  }

  /** The requests read so far, in arrival order. */
  public synchronized List<RecordedRequest> requests() {
    return List.copyOf(requests);
  }

  private Reply answer(RecordedRequest request) {
    java.util.function.Function<RecordedRequest, Reply> respond = responder;
    if (respond == null) {
      return record(request);
    }
    synchronized (this) {
      if (!admits.test(request)) {
        strays++;
        return STRAY;
      }
      answered++;
    }
    return respond.apply(request);
  }

  private synchronized Reply record(RecordedRequest request) {
    if (!admits.test(request)) {
      strays++;
      return STRAY;
    }
    if (request.target().equals(FOLLOW_UP_PATH)) {
      followUps++;
      return FOLLOW_UP;
    }
    requests.add(request);
    arrivals.add(System.nanoTime());
    Reply next = script.poll();
    Reply reply = next == null ? defaultReply : next;
    replies.add(reply);
    return reply;
  }

  private void acceptLoop() {
    while (!serverSocket.isClosed()) {
      try {
        Socket socket = serverSocket.accept();
        int number = connections.incrementAndGet();
        open.add(socket);
        threads.execute(() -> serve(socket, number));
      } catch (IOException | java.util.concurrent.RejectedExecutionException e) {
        return; // closed
      }
    }
  }

  private void serve(Socket socket, int connection) {
    try (socket) {
      InputStream in = new java.io.BufferedInputStream(socket.getInputStream());
      OutputStream out = socket.getOutputStream();
      while (true) {
        RecordedRequest request = readHead(in, connection);
        if (request == null) {
          return; // client closed the connection
        }
        if (readBodies && "100-continue".equalsIgnoreCase(request.header("expect"))) {
          Reply upcoming = upcoming();
          if (upcoming != null && upcoming.kind() == Reply.Kind.BEFORE_BODY) {
            // The head is answered, the body never read: the connection cannot go on.
            write(out, request, answer(request));
            return;
          }
          out.write("HTTP/1.1 100 Continue\r\n\r\n".getBytes(StandardCharsets.ISO_8859_1));
          out.flush();
        }
        if (readBodies) {
          request = withBody(request, in);
        }
        Reply reply = answer(request);
        if (!reply.dribbles()
            && !reply.delay().isZero()
            && closed.await(reply.delay().toMillis(), TimeUnit.MILLISECONDS)) {
          return;
        }
        switch (reply.kind()) {
          case RESET:
            socket.setSoLinger(true, 0);
            return;
          case RESET_MID_BODY:
            byte[] body = reply.body();
            out.write(head(reply, "Content-Length: " + body.length));
            out.write(body, 0, body.length / 10);
            out.flush();
            // Time for the client to read the head and the first bytes: a reset that came with
            // them unread could make the kernel drop them, and the fault would be another one.
            if (!closed.await(RESET_AFTER_MILLIS, TimeUnit.MILLISECONDS)) {
              socket.setSoLinger(true, 0);
            }
            return;
          case MALFORMED_CHUNK:
            out.write(head(reply, "Transfer-Encoding: chunked"));
            out.write(Reply.MALFORMED_CHUNKS.getBytes(StandardCharsets.ISO_8859_1));
            out.flush();
            return;
          case GARBAGE:
            out.write(reply.body());
            out.flush();
            return;
          case DRIBBLE:
            if (!dribble(out, reply)) {
              return;
            }
            break;
          case CLOSE:
            return;
          case HANG:
            closed.await();
            return;
          case UPGRADE:
            acceptWebSocket(in, out, request);
            return;
          case RAW:
            out.write(reply.body());
            out.flush();
            return;
          default:
            write(out, request, reply);
            if ("close".equalsIgnoreCase(request.header("connection"))) {
              return;
            }
        }
      }
    } catch (IOException | InterruptedException e) {
      // the client went away or the server is closing: nothing to report
    } finally {
      open.remove(socket);
    }
  }

  /** How long {@link Reply.Kind#RESET_MID_BODY} waits between the first bytes and the reset. */
  private static final long RESET_AFTER_MILLIS = 200;

  private static void write(OutputStream out, RecordedRequest request, Reply reply)
      throws IOException {
    byte[] body = reply.body();
    out.write(head(reply, "Content-Length: " + body.length));
    if (!request.method().equals("HEAD")) {
      out.write(body);
    }
    out.flush();
  }

  /** The status line and headers of {@code reply}, {@code framing} first, up to the blank line. */
  private static byte[] head(Reply reply, String framing) {
    StringBuilder head = new StringBuilder();
    head.append("HTTP/1.1 ")
        .append(reply.statusCode())
        .append(' ')
        .append(reason(reply.statusCode()));
    head.append("\r\n").append(framing);
    for (Map.Entry<String, String> h : reply.headersNow()) {
      head.append("\r\n").append(h.getKey()).append(": ").append(h.getValue());
    }
    head.append("\r\n\r\n");
    return head.toString().getBytes(StandardCharsets.ISO_8859_1);
  }

  /** Writes a dribbling reply; false when the server closed meanwhile. */
  private boolean dribble(OutputStream out, Reply reply) throws IOException, InterruptedException {
    byte[] body = reply.body();
    out.write(head(reply, "Content-Length: " + body.length));
    out.flush();
    for (byte b : body) {
      if (closed.await(reply.delay().toMillis(), TimeUnit.MILLISECONDS)) {
        return false;
      }
      out.write(b);
      out.flush();
    }
    return true;
  }

  /** RFC 6455 section 4.2.2: the accept value is base64(SHA-1(key + this GUID)). */
  private static final String WEBSOCKET_GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";

  private static void acceptWebSocket(InputStream in, OutputStream out, RecordedRequest request)
      throws IOException {
    String key = String.valueOf(request.header("sec-websocket-key"));
    String accept;
    try {
      byte[] sha1 =
          java.security.MessageDigest.getInstance("SHA-1")
              .digest((key + WEBSOCKET_GUID).getBytes(StandardCharsets.ISO_8859_1));
      accept = java.util.Base64.getEncoder().encodeToString(sha1);
    } catch (java.security.NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
    String head =
        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            + "Sec-WebSocket-Accept: "
            + accept
            + "\r\n\r\n";
    out.write(head.getBytes(StandardCharsets.ISO_8859_1));
    out.flush();
    byte[] drop = new byte[1024];
    while (in.read(drop) != -1) {
      // frames are not answered; the client ends the connection
    }
  }

  private static String reason(int status) {
    switch (status) {
      case 200:
        return "OK";
      case 400:
        return "Bad Request";
      case 404:
        return "Not Found";
      case 429:
        return "Too Many Requests";
      case 500:
        return "Internal Server Error";
      case 502:
        return "Bad Gateway";
      case 503:
        return "Service Unavailable";
      case 504:
        return "Gateway Timeout";
      default:
        return "Status";
    }
  }

  /**
   * The reply the next request gets unless a responder answers ({@link #answerWith}: then null),
   * for a request that expects {@code 100 Continue}: whether to answer it before its body.
   */
  private synchronized Reply upcoming() {
    if (responder != null) {
      return null;
    }
    Reply next = script.peek();
    return next == null ? defaultReply : next;
  }

  /** Reads one request's head, its body left unread; null at a clean end of stream before it. */
  private static RecordedRequest readHead(InputStream in, int connection) throws IOException {
    String requestLine = readLine(in);
    if (requestLine == null) {
      return null;
    }
    String[] parts = requestLine.split(" ");
    if (parts.length < 3) {
      throw new IOException("bad request line: " + requestLine);
    }
    Map<String, List<String>> headers = new LinkedHashMap<>();
    for (String line = readLine(in); line != null && !line.isEmpty(); line = readLine(in)) {
      int colon = line.indexOf(':');
      if (colon > 0) {
        headers
            .computeIfAbsent(
                line.substring(0, colon).trim().toLowerCase(Locale.ROOT), k -> new ArrayList<>())
            .add(line.substring(colon + 1).trim());
      }
    }
    return new RecordedRequest(parts[0], parts[1], headers, new byte[0], connection);
  }

  /** {@code head} with the body that follows it on {@code in}. */
  private static RecordedRequest withBody(RecordedRequest head, InputStream in) throws IOException {
    byte[] body;
    List<String> encoding = head.headers().get("transfer-encoding");
    List<String> length = head.headers().get("content-length");
    if (encoding != null && encoding.get(0).equalsIgnoreCase("chunked")) {
      body = readChunked(in);
    } else if (length != null) {
      body = readExactly(in, Integer.parseInt(length.get(0)));
    } else {
      body = new byte[0];
    }
    return new RecordedRequest(
        head.method(), head.target(), head.headers(), body, head.connection());
  }

  private static byte[] readChunked(InputStream in) throws IOException {
    ByteArrayOutputStream body = new ByteArrayOutputStream();
    while (true) {
      String sizeLine = readLine(in);
      if (sizeLine == null) {
        throw new EOFException("end of stream in chunked body");
      }
      int size = Integer.parseInt(sizeLine.split(";")[0].trim(), 16);
      if (size == 0) {
        for (String trailer = readLine(in); trailer != null && !trailer.isEmpty(); ) {
          trailer = readLine(in);
        }
        return body.toByteArray();
      }
      body.write(readExactly(in, size));
      readLine(in);
    }
  }

  private static byte[] readExactly(InputStream in, int n) throws IOException {
    byte[] bytes = in.readNBytes(n);
    if (bytes.length != n) {
      throw new EOFException("expected " + n + " body bytes, got " + bytes.length);
    }
    return bytes;
  }

  /** A CRLF- (or LF-) terminated ISO-8859-1 line without its terminator; null at end of stream. */
  private static String readLine(InputStream in) throws IOException {
    ByteArrayOutputStream line = new ByteArrayOutputStream();
    int b;
    while ((b = in.read()) != -1) {
      if (b == '\n') {
        byte[] bytes = line.toByteArray();
        int len =
            bytes.length > 0 && bytes[bytes.length - 1] == '\r' ? bytes.length - 1 : bytes.length;
        return new String(bytes, 0, len, StandardCharsets.ISO_8859_1);
      }
      line.write(b);
    }
    return line.size() == 0 ? null : line.toString(StandardCharsets.ISO_8859_1);
  }

  /** Closes the listening socket and every open connection, and stops the server's threads. */
  @Override
  public void close() throws IOException {
    closed.countDown();
    serverSocket.close();
    for (Socket s : open) {
      try {
        s.close();
      } catch (SocketException ignored) {
        // already gone
      }
    }
    threads.shutdownNow();
  }
}
