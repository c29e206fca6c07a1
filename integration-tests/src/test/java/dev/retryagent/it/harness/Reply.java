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
     * The request is read, then exactly the reply's bytes are written, whatever they are (a
     * malformed or hostile response), and the connection is closed.
     */
    RAW
  }

  private final Kind kind;
  private final int status;
  private final List<Map.Entry<String, String>> headers;
  private final byte[] body;
  private final Duration delay;

  private Reply(
      Kind kind, int status, List<Map.Entry<String, String>> headers, byte[] body, Duration delay) {
    this.kind = kind;
    this.status = status;
    this.headers = List.copyOf(headers);
    this.body = body;
    this.delay = delay;
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
    return new Reply(kind, status, h, body, delay);
  }

  /** Sets the response body (UTF-8). */
  public Reply withBody(String text) {
    return new Reply(kind, status, headers, text.getBytes(StandardCharsets.UTF_8), delay);
  }

  /** Waits this long after reading the request before acting. */
  public Reply after(Duration wait) {
    return new Reply(kind, status, headers, body, wait);
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
    return kind == Kind.RESPOND ? "Reply[" + status + "]" : "Reply[" + kind + "]";
  }
}
