package dev.retryagent.demo.server;

import java.nio.charset.StandardCharsets;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;

/** What a demo server does with a request: answer it, or reset the connection. */
public final class ServerReply {
  private static final ServerReply RESET = new ServerReply(0, "", Map.of(), new byte[0]);

  private final int status;
  private final String reason;
  private final Map<String, String> headers;
  private final byte[] body;

  private ServerReply(int status, String reason, Map<String, String> headers, byte[] body) {
    this.status = status;
    this.reason = reason;
    this.headers = Collections.unmodifiableMap(new LinkedHashMap<>(headers));
    this.body = body;
  }

  /** A JSON answer; {@code headers} come before Content-Type and Content-Length. */
  public static ServerReply json(int status, String reason, Map<String, String> headers, String j) {
    Map<String, String> h = new LinkedHashMap<>(headers);
    h.put("Content-Type", "application/json");
    return new ServerReply(status, reason, h, j.getBytes(StandardCharsets.UTF_8));
  }

  /**
   * Abort the connection with a TCP reset (SO_LINGER 0) after the request was read: the client sent
   * its request and gets no response at all.
   */
  public static ServerReply reset() {
    return RESET;
  }

  public boolean isReset() {
    return this == RESET;
  }

  public int status() {
    return status;
  }

  public String reason() {
    return reason;
  }

  public Map<String, String> headers() {
    return headers;
  }

  byte[] body() {
    return body;
  }
}
