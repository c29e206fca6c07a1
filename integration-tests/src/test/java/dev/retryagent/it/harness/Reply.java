package dev.retryagent.it.harness;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * What {@link CountingServer} does with one request: an HTTP response (status, headers, body,
 * optionally after a delay), or a connection fault. Immutable; {@code with...} return copies.
 */
public final class Reply {
  /** How the connection ends for this request. */
  public enum Kind {
    /** A normal response. */
    RESPOND,
    /** The request is read, then the connection is reset (TCP RST): no response at all. */
    RESET,
    /** The request is read, then the connection is closed cleanly (FIN): an empty response. */
    CLOSE,
    /**
     * The request is read and never answered; the connection stays open until the server closes.
     */
    HANG,
    /**
     * A WebSocket opening handshake is accepted ({@code 101 Switching Protocols} with the {@code
     * Sec-WebSocket-Accept} the request's key asks for); then whatever the client sends is read and
     * dropped until it closes the connection.
     */
    UPGRADE,
    /**
     * The status line and headers (with a {@code Content-Length} of the whole body) and the first
     * tenth of the body are sent, then the connection is reset: the client has its status, and the
     * body breaks off.
     */
    RESET_MID_BODY,
    /**
     * A {@code 200} with {@code Transfer-Encoding: chunked}, one good chunk, then a chunk-size line
     * that is not hexadecimal; then the connection is closed.
     */
    MALFORMED_CHUNK,
    /** Bytes that are not HTTP (the same ones every time), then the connection is closed. */
    GARBAGE,
    /** The status and headers at once, then the body one byte at a time, {@link #delay} apart. */
    DRIBBLE,
    /**
     * The request is read, then exactly the reply's bytes are written, whatever they are (a
     * malformed or hostile response), and the connection is closed.
     */
    RAW,
    /**
     * A request that expects {@code 100 Continue} gets this status at its head instead, its body
     * left unread (the rejection of its {@code Expect}), and the connection is closed; a request
     * that expects nothing is answered as {@link #RESPOND}.
     */
    BEFORE_BODY
  }

  /** The bytes of {@link Kind#GARBAGE}: fixed, so every run sees the same. */
  private static final byte[] GARBAGE_BYTES = garbageBytes();

  private final Kind kind;
  private final int status;
  private final List<Map.Entry<String, String>> headers;
  private final byte[] body;
  private final Duration delay;
  private final Duration retryAfterDateIn;

  private Reply(
      Kind kind, int status, List<Map.Entry<String, String>> headers, byte[] body, Duration delay) {
    this(kind, status, headers, body, delay, null);
  }

  private Reply(
      Kind kind,
      int status,
      List<Map.Entry<String, String>> headers,
      byte[] body,
      Duration delay,
      Duration retryAfterDateIn) {
    this.kind = kind;
    this.status = status;
    this.headers = List.copyOf(headers);
    this.body = body;
    this.delay = delay;
    this.retryAfterDateIn = retryAfterDateIn;
  }

  private static byte[] garbageBytes() {
    byte[] b = new byte[256];
    new java.util.Random(14).nextBytes(b);
    b[0] = 'X'; // never "HTTP/"
    return b;
  }

  /** The status this reply sends (0 for a reply that sends none). */
  public int status() {
    return status;
  }

  /** A response with this status and an empty body. */
  public static Reply status(int status) {
    if (status < 100 || status > 599) {
      throw new IllegalArgumentException("status must be 100..599, was " + status);
    }
    return new Reply(Kind.RESPOND, status, List.of(), new byte[0], Duration.ZERO);
  }

  /** 200 with this body. */
  public static Reply ok(String body) {
    return status(200).withBody(body);
  }

  /**
   * For {@link CountingServer#answerWith}: the first request of each target (path and query) gets
   * {@code first}, every later one 200 {@code fine}, so a call retried once succeeds.
   */
  public static java.util.function.Function<RecordedRequest, Reply> firstOfEachTarget(Reply first) {
    java.util.Set<String> seen = new java.util.HashSet<>();
    return r -> {
      synchronized (seen) {
        return seen.add(r.target()) ? first : ok("fine");
      }
    };
  }

  /** Reads the request, then resets the connection. */
  public static Reply reset() {
    return new Reply(Kind.RESET, 0, List.of(), new byte[0], Duration.ZERO);
  }

  /** Reads the request, then closes the connection without a byte of response. */
  public static Reply closeWithoutResponse() {
    return new Reply(Kind.CLOSE, 0, List.of(), new byte[0], Duration.ZERO);
  }

  /** Reads the request and never answers (the client's timeout decides). */
  public static Reply hang() {
    return new Reply(Kind.HANG, 0, List.of(), new byte[0], Duration.ZERO);
  }

  /** Accepts a WebSocket opening handshake and holds the connection open (no frames are sent). */
  public static Reply webSocketAccept() {
    return new Reply(Kind.UPGRADE, 101, List.of(), new byte[0], Duration.ZERO);
  }

  /**
   * A {@code 200} whose body ({@code length} bytes, announced by {@code Content-Length}) breaks off
   * after a tenth: the connection is reset.
   */
  public static Reply resetMidBody(int length) {
    return new Reply(Kind.RESET_MID_BODY, 200, List.of(), new byte[length], Duration.ZERO);
  }

  /** A {@code 200}, chunked, whose second chunk-size line is not a number; then the close. */
  public static Reply malformedChunk() {
    return new Reply(Kind.MALFORMED_CHUNK, 200, List.of(), new byte[0], Duration.ZERO);
  }

  /** 256 bytes that are not HTTP, then the close. */
  public static Reply garbage() {
    return new Reply(Kind.GARBAGE, 0, List.of(), GARBAGE_BYTES, Duration.ZERO);
  }

  /** A {@code 200} whose {@code length}-byte body comes one byte every {@code every}. */
  public static Reply dribble(int length, Duration every) {
    return new Reply(Kind.DRIBBLE, 200, List.of(), new byte[length], every);
  }

  /**
   * Adds {@code Retry-After} as an HTTP-date {@code fromNow} after the moment the response is
   * written (in the past for a negative duration), rounded down to the second as the format is.
   */
  public Reply withRetryAfterDate(Duration fromNow) {
    return new Reply(kind, status, headers, body, delay, fromNow);
  }

  /** The headers as written now: those set, and a {@code Retry-After} date computed now. */
  public List<Map.Entry<String, String>> headersNow() {
    if (retryAfterDateIn == null) {
      return headers;
    }
    List<Map.Entry<String, String>> h = new ArrayList<>(headers);
    h.add(
        Map.entry(
            "Retry-After",
            java.time.format.DateTimeFormatter.RFC_1123_DATE_TIME.format(
                java.time.ZonedDateTime.now(java.time.ZoneOffset.UTC).plus(retryAfterDateIn))));
    return h;
  }

  /**
   * Writes {@code response} as it is, one byte per char (ISO-8859-1), then closes the connection:
   * for responses no well-behaved server sends (control characters in a status line, 10,000
   * headers).
   */
  public static Reply raw(String response) {
    return new Reply(
        Kind.RAW, 0, List.of(), response.getBytes(StandardCharsets.ISO_8859_1), Duration.ZERO);
  }

  /** Adds a response header. */
  public Reply withHeader(String name, String value) {
    List<Map.Entry<String, String>> h = new ArrayList<>(headers);
    h.add(Map.entry(name, value));
    return new Reply(kind, status, h, body, delay, retryAfterDateIn);
  }

  /**
   * This response, sent to a request that expects {@code 100 Continue} before its body (see {@link
   * Kind#BEFORE_BODY}). Without it, the server answers {@code 100 Continue} and reads the body.
   */
  public Reply beforeBody() {
    return new Reply(Kind.BEFORE_BODY, status, headers, body, delay, retryAfterDateIn);
  }

  /** Sets the response body (UTF-8). */
  public Reply withBody(String text) {
    return new Reply(
        kind, status, headers, text.getBytes(StandardCharsets.UTF_8), delay, retryAfterDateIn);
  }

  /** The body gzipped, sent with {@code Content-Encoding: gzip} (its length the gzipped one's). */
  public Reply gzipped() {
    java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream();
    try (java.util.zip.GZIPOutputStream gz = new java.util.zip.GZIPOutputStream(out)) {
      gz.write(body);
    } catch (java.io.IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
    List<Map.Entry<String, String>> h = new ArrayList<>(headers);
    h.add(Map.entry("Content-Encoding", "gzip"));
    return new Reply(kind, status, h, out.toByteArray(), delay, retryAfterDateIn);
  }

  /**
   * Waits this long after reading the request before acting (for {@link Kind#DRIBBLE}: between
   * bytes).
   */
  public Reply after(Duration wait) {
    return new Reply(kind, status, headers, body, wait, retryAfterDateIn);
  }

  public Kind kind() {
    return kind;
  }

  public int statusCode() {
    return status;
  }

  public List<Map.Entry<String, String>> headers() {
    return headers;
  }

  public byte[] body() {
    return body.clone();
  }

  public Duration delay() {
    return delay;
  }

  @Override
  public String toString() {
    return kind == Kind.RESPOND
        ? "Reply[" + status + "]"
        : kind == Kind.BEFORE_BODY
            ? "Reply[" + status + " before the body]"
            : "Reply[" + kind + "]";
  }

  /** Sent before the body of a {@link Kind#MALFORMED_CHUNK}: one good chunk, then a bad size. */
  static final String MALFORMED_CHUNKS = "5\r\nhello\r\nzz\r\nworld\r\n";

  /** Whether {@link #delay()} is a wait between the body's bytes rather than before acting. */
  boolean dribbles() {
    return kind == Kind.DRIBBLE;
  }
}
