package dev.retryagent.testing;

import java.io.BufferedInputStream;
import java.io.ByteArrayOutputStream;
import java.io.Closeable;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A loopback HTTP/1.1 server for tests, on raw sockets so it can do what real servers do on bad
 * days: answer with scripted statuses and headers, reset the connection (RST), or close it without
 * a response. It records every request (method, path, headers, body) so tests assert on what the
 * server saw, not on what the client believes.
 *
 * <p>Responses are taken from the script in order; when the script is empty, the fallback answers.
 */
public final class ScriptedHttpServer implements Closeable {
  /** How a response goes wrong after its request was read. */
  public enum Fault {
    NONE,
    /** The head and a tenth of the body ({@code Content-Length} of the whole), then a reset. */
    RESET_MID_BODY,
    /** Chunked, one good chunk, then a chunk size that is not a number, then the close. */
    MALFORMED_CHUNK,
    /** Chunked, a chunk of 256 bytes announced, 10 of them sent, then the close. */
    TRUNCATED_CHUNK,
    /** Bytes that are not HTTP, then the close. */
    GARBAGE,
    /** The head at once, then the body one byte every 5 ms. */
    DRIBBLE
  }

  /** What the server does with one request. */
  /** How a response's body is framed on the wire ({@link Action#framed}). */
  public enum Framing {
    /** {@code Content-Length} (the default). */
    LENGTH,
    /** {@code Transfer-Encoding: chunked}; a held body in two chunks, the last chunk after. */
    CHUNKED,
    /** No length: the body ends with the connection, which the server then closes. */
    UNTIL_CLOSE;

    /** Bytes {@code from} to {@code to} of {@code body} as sent, {@code last}: its end. */
    byte[] frame(byte[] body, int from, int to, boolean last) {
      if (this != CHUNKED) {
        return java.util.Arrays.copyOfRange(body, from, to);
      }
      ByteArrayOutputStream out = new ByteArrayOutputStream();
      if (to > from) {
        out.writeBytes(
            (Integer.toHexString(to - from) + "\r\n").getBytes(StandardCharsets.ISO_8859_1));
        out.write(body, from, to - from);
        out.writeBytes("\r\n".getBytes(StandardCharsets.ISO_8859_1));
      }
      if (last) {
        out.writeBytes("0\r\n\r\n".getBytes(StandardCharsets.ISO_8859_1));
      }
      return out.toByteArray();
    }
  }

  public static final class Action {
    final int status;
    final Map<String, String> headers;
    final String body;
    final boolean reset;
    final boolean closeWithoutResponse;
    final long delayMillis;
    final Fault fault;

    /**
     * Answers on the request's head alone, before its body, then closes the connection: a server
     * that rejects a request's {@code Expect: 100-continue} with this final status.
     */
    final boolean beforeBody;

    /** How long the body may take ({@link #waitingForBodyAtMost}); 0: as long as it takes. */
    private long bodyWaitMillis;

    /** A body of {@code Content-Length} 1 GiB, sent until the client goes ({@link #endless}). */
    private boolean endless;

    /** Body bytes sent before {@link #held} is released ({@link #heldAfter}); 0: none held. */
    private int heldAfter;

    private java.util.concurrent.CountDownLatch held;

    /**
     * The body gzipped, {@code Content-Encoding: gzip} ({@link #gzipped}); or bytes that are not.
     */
    private boolean gzip;

    private boolean gzipBroken;

    /** An interim (1xx) response sent before this one ({@link #afterInterim}); 0: none. */
    private int interim;

    /** How the body is framed ({@link #framed}). */
    private Framing framing = Framing.LENGTH;

    private Action(
        int status,
        Map<String, String> headers,
        String body,
        boolean reset,
        boolean close,
        long delayMillis) {
      this(status, headers, body, reset, close, delayMillis, Fault.NONE);
    }

    private Action(
        int status,
        Map<String, String> headers,
        String body,
        boolean reset,
        boolean close,
        long delayMillis,
        Fault fault) {
      this(status, headers, body, reset, close, delayMillis, fault, false);
    }

    private Action(
        int status,
        Map<String, String> headers,
        String body,
        boolean reset,
        boolean close,
        long delayMillis,
        Fault fault,
        boolean beforeBody) {
      this.beforeBody = beforeBody;
      this.status = status;
      this.headers = headers;
      this.body = body;
      this.reset = reset;
      this.closeWithoutResponse = close;
      this.delayMillis = delayMillis;
      this.fault = fault;
    }

    /** A 200 whose body goes wrong as {@code fault} says. */
    public static Action broken(Fault fault) {
      return broken(200, fault);
    }

    /** A {@code status} whose body goes wrong as {@code fault} says. */
    public static Action broken(int status, Fault fault) {
      return new Action(status, new LinkedHashMap<>(), "x".repeat(2_000), false, false, 0, fault);
    }

    public static Action status(int status) {
      return new Action(status, new LinkedHashMap<>(), "status " + status, false, false, 0);
    }

    public static Action ok(String body) {
      return new Action(200, new LinkedHashMap<>(), body, false, false, 0);
    }

    /** Reads the request, then resets the connection (TCP RST) without answering. */
    public static Action reset() {
      return new Action(0, Map.of(), "", true, false, 0);
    }

    /** Reads the request, then closes the connection without answering (EOF). */
    public static Action closeWithoutResponse() {
      return new Action(0, Map.of(), "", false, true, 0);
    }

    public Action header(String name, String value) {
      Map<String, String> h = new LinkedHashMap<>(headers);
      h.put(name, value);
      return new Action(status, h, body, reset, closeWithoutResponse, delayMillis, fault);
    }

    /**
     * Header {@code name} in one line per value, in this order ({@code Retry-After: 2} then {@code
     * Retry-After: 7}): a field a server or a proxy on the way sent twice.
     */
    public Action headerLines(String name, String... values) {
      return header(name, String.join("\r\n" + name + ": ", values));
    }

    public Action body(String body) {
      return new Action(status, headers, body, reset, closeWithoutResponse, delayMillis, fault);
    }

    /** Waits before answering (for timeouts); bounded by the server's close. */
    public Action delay(long millis) {
      return new Action(status, headers, body, reset, closeWithoutResponse, millis, fault);
    }

    /**
     * This status on the request's head, before its body (the rejection of an {@code Expect:
     * 100-continue}), then the connection is closed. Without it, a request that expects {@code 100
     * Continue} gets one before its body is read.
     */
    public Action beforeBody() {
      return new Action(
          status, headers, body, reset, closeWithoutResponse, delayMillis, fault, true);
    }

    /**
     * Waits at most {@code millis} for the request's body: a body that has not all come by then
     * (shorter than its {@code Content-Length}) is answered with this status at once, with {@code
     * Connection: close}, and the connection closed, as a server answers a request it waited for
     * with 408. Last in the chain of this action's modifiers.
     */
    public Action waitingForBodyAtMost(long millis) {
      Action a = copy();
      a.bodyWaitMillis = millis;
      return a;
    }

    /**
     * This status and headers with {@code Content-Length: 1073741824}, then body bytes (16 KiB a
     * millisecond) until the client closes the connection or the server is closed: a client that
     * reads a body to its end never gets there. Last in the chain of this action's modifiers.
     */
    public Action endless() {
      Action a = copy();
      a.endless = true;
      return a;
    }

    /**
     * The head and the first {@code bytes} bytes of the body at once, the rest once the test counts
     * {@code release} down (10 s at most): a body that streams. Last in the chain of this action's
     * modifiers. On {@code broken(RESET_MID_BODY)}: its head and a tenth of its body at once
     * ({@code bytes} unused), its reset at the release (not counted in {@link
     * ScriptedHttpServer#holdsEnded}).
     */
    public Action heldAfter(int bytes, java.util.concurrent.CountDownLatch release) {
      Action a = copy();
      a.heldAfter = bytes;
      a.held = release;
      return a;
    }

    /**
     * The body gzipped and sent with {@code Content-Encoding: gzip} (its {@code Content-Length} the
     * gzipped one's). Last in the chain of this action's modifiers.
     */
    public Action gzipped() {
      return encoded(false);
    }

    /**
     * {@code Content-Encoding: gzip} over bytes that are not gzip (the body as it is): a client
     * that decodes it fails at its first read. Last in the chain of this action's modifiers.
     */
    public Action brokenGzip() {
      return encoded(true);
    }

    /**
     * An interim response of {@code code} (100 Continue unasked, 103 Early Hints with a {@code
     * Link}) sent before this one, once the request was read: a client reads past it to the final
     * response. Last in the chain of this action's modifiers.
     */
    public Action afterInterim(int code) {
      Action a = copy();
      a.interim = code;
      return a;
    }

    /**
     * The body framed as {@code framing} says ({@link Framing}). Last in the chain of this action's
     * modifiers.
     */
    public Action framed(Framing framing) {
      Action a = copy();
      a.framing = framing;
      return a;
    }

    /**
     * This action as it is, for a modifier that is last in the chain to set its field on: the other
     * such modifiers' fields kept ({@code framed(CHUNKED).gzipped().heldAfter(...)}).
     */
    private Action copy() {
      Action a =
          new Action(
              status, headers, body, reset, closeWithoutResponse, delayMillis, fault, beforeBody);
      a.bodyWaitMillis = bodyWaitMillis;
      a.endless = endless;
      a.heldAfter = heldAfter;
      a.held = held;
      a.gzip = gzip;
      a.gzipBroken = gzipBroken;
      a.interim = interim;
      a.framing = framing;
      return a;
    }

    private Action encoded(boolean broken) {
      Action a = copy();
      a.gzip = true;
      a.gzipBroken = broken;
      return a;
    }

    @Override
    public String toString() {
      return reset
          ? "reset"
          : closeWithoutResponse
              ? "close"
              : fault != Fault.NONE
                  ? fault.name().toLowerCase(Locale.ROOT)
                  : status
                      + (headers.isEmpty() ? "" : " " + headers)
                      + (delayMillis > 0 ? " after " + delayMillis + "ms" : "");
    }
  }

  /** One request as the server received it. */
  public static final class Recorded {
    public final String method;
    public final String path;
    public final Map<String, String> headers;
    public final String body;

    /** The connection it came on, in the order accepted (0 for the first, as {@link #isOpen}). */
    public final int connection;

    /** Every header line as received, in order: lower-case name, value. */
    private final List<String[]> lines;

    Recorded(
        String method,
        String path,
        Map<String, String> headers,
        List<String[]> lines,
        String body,
        int connection) {
      this.method = method;
      this.connection = connection;
      this.path = path;
      this.headers = headers;
      this.lines = lines;
      this.body = body;
    }

    /** Header value by case-insensitive name, or null; of repeated lines, the last. */
    public String header(String name) {
      return headers.get(name.toLowerCase(Locale.ROOT));
    }

    /** The values of every line of header {@code name} (case-insensitive), in the order sent. */
    public List<String> values(String name) {
      List<String> values = new ArrayList<>();
      for (String[] line : lines) {
        if (line[0].equals(name.toLowerCase(Locale.ROOT))) {
          values.add(line[1]);
        }
      }
      return values;
    }

    @Override
    public String toString() {
      return method + " " + path;
    }
  }

  private final ServerSocket socket;
  private final ExecutorService pool = Executors.newCachedThreadPool(daemon());
  private final ConcurrentLinkedQueue<Action> script = new ConcurrentLinkedQueue<>();
  private final List<Recorded> requests = Collections.synchronizedList(new ArrayList<>());
  private final List<Socket> open = Collections.synchronizedList(new ArrayList<>());
  private final AtomicInteger count = new AtomicInteger();
  // Requests whose head the server read, their body whole or not (count: the whole ones only).
  private final AtomicInteger started = new AtomicInteger();
  private final AtomicInteger holdsEnded = new AtomicInteger();
  private final AtomicInteger accepted = new AtomicInteger();
  // Every connection accepted, in order: which of them is still open ({@link #isOpen}).
  private final List<Socket> sockets = Collections.synchronizedList(new ArrayList<>());
  private volatile Action fallback = Action.ok("ok");
  private volatile boolean closed;

  public ScriptedHttpServer() throws IOException {
    this(0);
  }

  private ScriptedHttpServer(int port) throws IOException {
    socket = new ServerSocket();
    socket.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), port));
    pool.execute(this::acceptLoop);
  }

  /** A server on this loopback port (one that refused connections until now). */
  public static ScriptedHttpServer onPort(int port) throws IOException {
    return new ScriptedHttpServer(port);
  }

  private static java.util.concurrent.ThreadFactory daemon() {
    AtomicInteger n = new AtomicInteger();
    return r -> {
      Thread t = new Thread(r, "scripted-http-" + n.incrementAndGet());
      t.setDaemon(true);
      return t;
    };
  }

  public int port() {
    return socket.getLocalPort();
  }

  /** {@code http://127.0.0.1:port} + path. */
  public String url(String path) {
    return "http://127.0.0.1:" + port() + path;
  }

  /** Appends actions to the script. */
  public ScriptedHttpServer enqueue(Action... actions) {
    Collections.addAll(script, actions);
    return this;
  }

  /** What to do once the script is used up. */
  public ScriptedHttpServer otherwise(Action action) {
    this.fallback = action;
    return this;
  }

  /**
   * Requests received so far, whole: a request cut off in its chunked body (the client gave up, its
   * body failed) is not among them ({@link #requestsStarted}). One whose connection ended before
   * its {@code Content-Length} is, with what came of its body.
   */
  public int requestCount() {
    return count.get();
  }

  /**
   * Requests whose head the server read so far, whole or not: more than {@link #requestCount} while
   * one is being read, or when one was cut off in its body.
   */
  public int requestsStarted() {
    return started.get();
  }

  /**
   * Waits (10 s at most) until the server counted {@code n} whole requests, then tells what it saw:
   * {@code "3 requests, 3 started"} ({@link #requests}). A request is counted when the server's
   * thread has read it, which on a loaded machine can be after the client gave up on it (a timeout,
   * a cancel) and the test went on, so a count read at once could be short. One more request, whole
   * or begun (cut off, or still being read), that came by then still shows.
   */
  public String awaitRequests(int n) {
    org.awaitility.Awaitility.await()
        .pollDelay(java.time.Duration.ZERO)
        .pollInterval(java.time.Duration.ofMillis(5))
        .atMost(10, TimeUnit.SECONDS)
        .until(() -> count.get() >= n);
    // The whole ones first: each of them was started before it was counted, so never more of
    // them than started.
    int whole = count.get();
    return requests(whole, started.get());
  }

  /** What {@link #awaitRequests} tells of {@code n} requests, each sent whole: {@code n, n}. */
  public static String requests(int n) {
    return requests(n, n);
  }

  private static String requests(int whole, int begun) {
    return whole + (whole == 1 ? " request, " : " requests, ") + begun + " started";
  }

  /**
   * Held bodies ({@link Action#heldAfter}) whose hold is over (released by the test, or by the
   * server's 10 s bound), the rest of them then sent: 0 while every one is still held.
   */
  public int holdsEnded() {
    return holdsEnded.get();
  }

  /** Connections accepted so far: fewer than requests when the client kept one alive. */
  public int connectionCount() {
    return accepted.get();
  }

  /** Connections the client has not closed yet (kept alive, or leaked). */
  public int openConnections() {
    return open.size();
  }

  /**
   * Whether the connection accepted {@code index}-th (0 for the first, {@link #connectionCount}
   * before it) is still open: one connection's fate, which the count of open ones does not tell
   * while the client's pool closes an idle connection of its own on its clock.
   */
  public boolean isOpen(int index) {
    return index < accepted.get() && open.contains(sockets.get(index));
  }

  /**
   * Whether the server is done with the connection accepted {@code index}-th: accepted, and closed.
   * Its thread took from the script whatever it will take: one that read a request's head after the
   * client gave up on it (a cut body, a disconnect) and lagged behind the test would otherwise take
   * the action a test enqueues later for another request.
   */
  public boolean isDoneWith(int index) {
    return index < accepted.get() && !open.contains(sockets.get(index));
  }

  /**
   * Waits (10 s at most) until the server is done with every connection from the {@code from}-th on
   * that a client opened before this call, accepted or not yet: a connection of the server's own,
   * opened now, is accepted after them (the listen queue is first in, first out), and is closed at
   * once without a request. A client that gave up on its request before the server accepted its
   * connection is thereby waited for, where a count of connections open would pass before.
   */
  public void awaitDoneWithConnectionsFrom(int from) throws IOException {
    int mark;
    try (Socket marker = new Socket(InetAddress.getLoopbackAddress(), port())) {
      int local = marker.getLocalPort();
      org.awaitility.Awaitility.await()
          .pollDelay(java.time.Duration.ZERO)
          .pollInterval(java.time.Duration.ofMillis(5))
          .atMost(10, TimeUnit.SECONDS)
          .until(() -> indexOf(local) >= 0);
      mark = indexOf(local);
    }
    for (int i = from; i <= mark; i++) {
      int index = i;
      org.awaitility.Awaitility.await()
          .pollDelay(java.time.Duration.ZERO)
          .pollInterval(java.time.Duration.ofMillis(5))
          .atMost(10, TimeUnit.SECONDS)
          .until(() -> isDoneWith(index));
    }
  }

  /** The index of the accepted connection from local port {@code port}, or -1. */
  private int indexOf(int port) {
    for (int i = 0; i < accepted.get(); i++) {
      if (sockets.get(i).getPort() == port) {
        return i;
      }
    }
    return -1;
  }

  public List<Recorded> requests() {
    synchronized (requests) {
      return new ArrayList<>(requests);
    }
  }

  private void acceptLoop() {
    while (!closed) {
      try {
        Socket s = socket.accept();
        sockets.add(s);
        open.add(s);
        accepted.incrementAndGet(); // last: a connection counted is one isOpen knows
        pool.execute(() -> serve(s));
      } catch (IOException e) {
        return;
      }
    }
  }

  private void serve(Socket s) {
    int connection = sockets.indexOf(s);
    try (s) {
      s.setSoTimeout(10_000);
      InputStream in = new BufferedInputStream(s.getInputStream());
      OutputStream out = s.getOutputStream();
      while (!closed) {
        Head asked = readHead(in);
        if (asked == null) {
          return;
        }
        started.incrementAndGet();
        Action a = script.poll();
        if (a == null) {
          a = fallback;
        }
        boolean expects = "100-continue".equalsIgnoreCase(asked.headers.get("expect"));
        if (expects && !a.beforeBody) {
          out.write("HTTP/1.1 100 Continue\r\n\r\n".getBytes(StandardCharsets.ISO_8859_1));
          out.flush();
        }
        byte[] got;
        boolean cut = false;
        if (a.beforeBody) {
          got = new byte[0];
        } else if (a.bodyWaitMillis > 0) {
          s.setSoTimeout((int) a.bodyWaitMillis);
          try {
            got = readBody(in, asked);
          } catch (java.net.SocketTimeoutException e) {
            got = new byte[0]; // what came of it is not kept
            cut = true;
          }
          s.setSoTimeout(10_000);
        } else {
          got = readBody(in, asked);
        }
        Recorded r = asked.recorded(got, connection);
        requests.add(r);
        count.incrementAndGet();
        if (a.delayMillis > 0) {
          Thread.sleep(a.delayMillis); // a server being slow, not a test waiting
        }
        if (a.reset) {
          s.setSoLinger(true, 0);
          return;
        }
        if (a.closeWithoutResponse) {
          return;
        }
        if (a.fault != Fault.NONE) {
          broken(s, out, a);
          return;
        }
        if (a.endless) {
          endless(out, a);
          return;
        }
        byte[] body = a.body.getBytes(StandardCharsets.UTF_8);
        if (a.gzip && !a.gzipBroken) {
          ByteArrayOutputStream zipped = new ByteArrayOutputStream();
          try (java.util.zip.GZIPOutputStream z = new java.util.zip.GZIPOutputStream(zipped)) {
            z.write(body);
          }
          body = zipped.toByteArray();
        }
        if (a.interim > 0) {
          String hints = a.interim == 103 ? "Link: </style.css>; rel=preload\r\n" : "";
          out.write(
              ("HTTP/1.1 " + a.interim + " " + reason(a.interim) + "\r\n" + hints + "\r\n")
                  .getBytes(StandardCharsets.ISO_8859_1));
          out.flush();
        }
        // 204 and 304 have no body (RFC 9110 15.3.5, 15.4.5); a 204 has no Content-Length either,
        // a 304's is the length a 200 would have had, as a HEAD's is.
        boolean bodiless = r.method.equals("HEAD") || a.status == 204 || a.status == 304;
        StringBuilder head = new StringBuilder();
        head.append("HTTP/1.1 ")
            .append(a.status)
            .append(' ')
            .append(reason(a.status))
            .append("\r\n");
        for (Map.Entry<String, String> h : a.headers.entrySet()) {
          head.append(h.getKey()).append(": ").append(h.getValue()).append("\r\n");
        }
        if (a.gzip) {
          head.append("Content-Encoding: gzip\r\n");
        }
        if (a.beforeBody || cut) {
          head.append("Connection: close\r\n");
        }
        if (a.status != 204 && a.framing == Framing.LENGTH) {
          head.append("Content-Length: ").append(body.length).append("\r\n");
        } else if (a.status != 204 && a.framing == Framing.CHUNKED) {
          head.append("Transfer-Encoding: chunked\r\n");
        } else if (a.framing == Framing.UNTIL_CLOSE) {
          head.append("Connection: close\r\n");
        }
        head.append("\r\n");
        byte[] headBytes = head.toString().getBytes(StandardCharsets.ISO_8859_1);
        if (bodiless) {
          // a HEAD's, a 304's response has the length of the body it does not send
          out.write(headBytes);
        } else if (a.held != null) {
          out.write(headBytes);
          out.write(a.framing.frame(body, 0, a.heldAfter, false));
          out.flush();
          a.held.await(10, TimeUnit.SECONDS); // the test reads what came first, then releases
          holdsEnded.incrementAndGet();
          out.write(a.framing.frame(body, a.heldAfter, body.length, true));
        } else {
          // Head and body in one write, as servers send a short response: a client that reads
          // what has arrived of a body (HttpURLConnection's retried one) finds it there.
          byte[] framed = a.framing.frame(body, 0, body.length, true);
          byte[] whole = java.util.Arrays.copyOf(headBytes, headBytes.length + framed.length);
          System.arraycopy(framed, 0, whole, headBytes.length, framed.length);
          out.write(whole);
        }
        out.flush();
        if (a.framing == Framing.UNTIL_CLOSE) {
          return; // its end is the connection's
        }
        if (a.beforeBody || cut) {
          return; // the body, if the client sends it anyway, is never read
        }
      }
    } catch (IOException | InterruptedException e) {
      // the client went away, or we are closing
    } finally {
      open.remove(s);
    }
  }

  /** Writes an {@link Action#endless} response until the client or the server closes. */
  private void endless(OutputStream out, Action a) throws IOException, InterruptedException {
    StringBuilder head =
        new StringBuilder("HTTP/1.1 " + a.status + " " + reason(a.status) + "\r\n");
    for (Map.Entry<String, String> h : a.headers.entrySet()) {
      head.append(h.getKey()).append(": ").append(h.getValue()).append("\r\n");
    }
    head.append("Content-Length: 1073741824\r\n\r\n");
    out.write(head.toString().getBytes(StandardCharsets.ISO_8859_1));
    byte[] chunk = new byte[16 * 1024];
    java.util.Arrays.fill(chunk, (byte) 'x');
    while (!closed) {
      out.write(chunk); // throws once the client has closed the connection
      out.flush();
      Thread.sleep(1); // a server streaming, not a test waiting
    }
  }

  /** Writes a broken response, after which the connection is closed (or reset). */
  private static void broken(Socket s, OutputStream out, Action a)
      throws IOException, InterruptedException {
    if (a.fault == Fault.GARBAGE) {
      byte[] garbage = new byte[256];
      new java.util.Random(14).nextBytes(garbage);
      garbage[0] = 'X'; // never "HTTP/"
      out.write(garbage);
      out.flush();
      return;
    }
    byte[] body = (a.fault == Fault.DRIBBLE ? "dribble" : a.body).getBytes(StandardCharsets.UTF_8);
    String framing =
        a.fault == Fault.MALFORMED_CHUNK || a.fault == Fault.TRUNCATED_CHUNK
            ? "Transfer-Encoding: chunked"
            : "Content-Length: " + body.length;
    out.write(
        ("HTTP/1.1 " + a.status + " " + reason(a.status) + "\r\n" + framing + "\r\n\r\n")
            .getBytes(StandardCharsets.ISO_8859_1));
    switch (a.fault) {
      case RESET_MID_BODY:
        out.write(body, 0, body.length / 10);
        out.flush();
        if (a.held != null) {
          // Held: the reset waits for the test, which saw the head reach the application.
          a.held.await(10, TimeUnit.SECONDS);
        } else {
          // Time for the client to read what came: a reset that found it unread could drop it.
          Thread.sleep(50);
        }
        s.setSoLinger(true, 0);
        return;
      case MALFORMED_CHUNK:
        out.write("5\r\nhello\r\nzz\r\n".getBytes(StandardCharsets.ISO_8859_1));
        out.flush();
        return;
      case TRUNCATED_CHUNK:
        out.write("100\r\n0123456789".getBytes(StandardCharsets.ISO_8859_1));
        out.flush();
        return;
      default: // DRIBBLE: the whole body, slowly
        out.flush();
        for (byte b : body) {
          Thread.sleep(5); // a server being slow, not a test waiting
          out.write(b);
          out.flush();
        }
    }
  }

  private static String reason(int status) {
    switch (status) {
      case 100:
        return "Continue";
      case 103:
        return "Early Hints";
      case 200:
        return "OK";
      case 204:
        return "No Content";
      case 304:
        return "Not Modified";
      case 404:
        return "Not Found";
      case 429:
        return "Too Many Requests";
      case 503:
        return "Service Unavailable";
      default:
        return "Status";
    }
  }

  /** A request's line and headers, read before its body. */
  private static final class Head {
    final String[] parts;
    final Map<String, String> headers;
    final List<String[]> lines;

    Head(String[] parts, Map<String, String> headers, List<String[]> lines) {
      this.parts = parts;
      this.headers = headers;
      this.lines = lines;
    }

    Recorded recorded(byte[] body, int connection) {
      return new Recorded(
          parts[0],
          parts.length > 1 ? parts[1] : "",
          headers,
          lines,
          new String(body, StandardCharsets.UTF_8),
          connection);
    }
  }

  private static Head readHead(InputStream in) throws IOException {
    String requestLine = readLine(in);
    if (requestLine == null || requestLine.isEmpty()) {
      return null;
    }
    String[] parts = requestLine.split(" ");
    Map<String, String> headers = new LinkedHashMap<>();
    List<String[]> lines = new ArrayList<>();
    for (String line = readLine(in); line != null && !line.isEmpty(); line = readLine(in)) {
      int colon = line.indexOf(':');
      if (colon > 0) {
        String name = line.substring(0, colon).trim().toLowerCase(Locale.ROOT);
        String value = line.substring(colon + 1).trim();
        headers.put(name, value);
        lines.add(new String[] {name, value});
      }
    }
    return new Head(parts, headers, lines);
  }

  private static byte[] readBody(InputStream in, Head head) throws IOException {
    Map<String, String> headers = head.headers;
    if ("chunked".equalsIgnoreCase(headers.get("transfer-encoding"))) {
      ByteArrayOutputStream b = new ByteArrayOutputStream();
      while (true) {
        String sizeLine = readLine(in);
        if (sizeLine == null) {
          throw new SocketException("eof in chunked body");
        }
        int size = Integer.parseInt(sizeLine.split(";")[0].trim(), 16);
        if (size == 0) {
          readLine(in);
          break;
        }
        b.write(in.readNBytes(size));
        readLine(in);
      }
      return b.toByteArray();
    }
    String len = headers.get("content-length");
    return len == null ? new byte[0] : in.readNBytes(Integer.parseInt(len));
  }

  private static String readLine(InputStream in) throws IOException {
    ByteArrayOutputStream line = new ByteArrayOutputStream();
    int c;
    while ((c = in.read()) != -1) {
      if (c == '\n') {
        break;
      }
      if (c != '\r') {
        line.write(c);
      }
    }
    if (c == -1 && line.size() == 0) {
      return null;
    }
    return line.toString(StandardCharsets.ISO_8859_1);
  }

  @Override
  public void close() throws IOException {
    closed = true;
    socket.close();
    synchronized (open) {
      for (Socket s : open) {
        try {
          s.close();
        } catch (IOException ignored) {
          // closing anyway
        }
      }
    }
    pool.shutdownNow();
    try {
      pool.awaitTermination(5, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
