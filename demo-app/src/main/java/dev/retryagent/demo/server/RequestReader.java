package dev.retryagent.demo.server;

import java.io.ByteArrayOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;

/**
 * Reads HTTP/1.1 requests off a connection: request line, headers, and a body framed by
 * Content-Length or chunked transfer coding. Bounded everywhere, since it reads from a socket.
 */
final class RequestReader {
  static final int MAX_LINE = 8 * 1024;
  static final int MAX_HEADERS = 100;
  static final int MAX_BODY = 1024 * 1024;

  /** The request is not valid HTTP/1.1 (or exceeds the bounds): answer 400 and close. */
  static final class BadRequest extends IOException {
    private static final long serialVersionUID = 1L;

    BadRequest(String message) {
      super(message);
    }
  }

  private final InputStream in;

  RequestReader(InputStream in) {
    this.in = in;
  }

  /** The next request, or null when the client closed the connection between requests. */
  ServerRequest next() throws IOException {
    String requestLine = line(true);
    while (requestLine != null && requestLine.isEmpty()) {
      requestLine = line(true); // RFC 9112 2.2: ignore empty lines before a request line
    }
    if (requestLine == null) {
      return null;
    }
    String[] parts = requestLine.split(" ");
    if (parts.length != 3 || !parts[2].startsWith("HTTP/1.")) {
      throw new BadRequest("bad request line");
    }
    Map<String, String> headers = new LinkedHashMap<>();
    for (String h = line(false); !h.isEmpty(); h = line(false)) {
      int colon = h.indexOf(':');
      if (colon <= 0 || headers.size() >= MAX_HEADERS) {
        throw new BadRequest("bad header");
      }
      headers.put(h.substring(0, colon).trim(), h.substring(colon + 1).trim());
    }
    return new ServerRequest(parts[0], parts[1], headers, body(headers));
  }

  private byte[] body(Map<String, String> headers) throws IOException {
    String te = get(headers, "Transfer-Encoding");
    if (te != null) {
      if (!te.toLowerCase(Locale.ROOT).endsWith("chunked")) {
        throw new BadRequest("unsupported transfer coding");
      }
      return chunked();
    }
    String cl = get(headers, "Content-Length");
    if (cl == null) {
      return new byte[0];
    }
    long n;
    try {
      n = Long.parseLong(cl);
    } catch (NumberFormatException e) {
      throw new BadRequest("bad Content-Length");
    }
    if (n < 0 || n > MAX_BODY) {
      throw new BadRequest("bad Content-Length");
    }
    return exactly((int) n);
  }

  private byte[] chunked() throws IOException {
    ByteArrayOutputStream body = new ByteArrayOutputStream();
    while (true) {
      String sizeLine = line(false);
      int semi = sizeLine.indexOf(';');
      int size;
      try {
        size = Integer.parseInt((semi < 0 ? sizeLine : sizeLine.substring(0, semi)).trim(), 16);
      } catch (NumberFormatException e) {
        throw new BadRequest("bad chunk size");
      }
      if (size < 0 || body.size() + size > MAX_BODY) {
        throw new BadRequest("chunked body too large");
      }
      if (size == 0) {
        while (!line(false).isEmpty()) {
          // trailers are read and ignored
        }
        return body.toByteArray();
      }
      body.write(exactly(size));
      if (!line(false).isEmpty()) {
        throw new BadRequest("bad chunk end");
      }
    }
  }

  private byte[] exactly(int n) throws IOException {
    byte[] b = in.readNBytes(n);
    if (b.length != n) {
      throw new EOFException("body cut short");
    }
    return b;
  }

  /** A CRLF (or LF) terminated line; null at a clean end of stream only if {@code eofOk}. */
  private String line(boolean eofOk) throws IOException {
    ByteArrayOutputStream b = new ByteArrayOutputStream(64);
    while (true) {
      int c = in.read();
      if (c < 0) {
        if (eofOk && b.size() == 0) {
          return null;
        }
        throw new EOFException("connection closed mid-request");
      }
      if (c == '\n') {
        byte[] bytes = b.toByteArray();
        int len =
            bytes.length > 0 && bytes[bytes.length - 1] == '\r' ? bytes.length - 1 : bytes.length;
        return new String(bytes, 0, len, StandardCharsets.ISO_8859_1);
      }
      if (b.size() >= MAX_LINE) {
        throw new BadRequest("line too long");
      }
      b.write(c);
    }
  }

  private static String get(Map<String, String> headers, String name) {
    for (Map.Entry<String, String> e : headers.entrySet()) {
      if (e.getKey().equalsIgnoreCase(name)) {
        return e.getValue();
      }
    }
    return null;
  }
}
