package dev.retryagent.demo.server;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;

/** A bare socket client for tests that must see exactly what goes over the wire. */
final class RawClient implements AutoCloseable {
  private final Socket socket;

  RawClient(int port) throws IOException {
    socket = new Socket(InetAddress.getLoopbackAddress(), port);
    socket.setSoTimeout(5_000); // a test never waits longer for a byte
  }

  static String post(String path, String body, String... headers) {
    StringBuilder b = new StringBuilder("POST " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\n");
    for (String h : headers) {
      b.append(h).append("\r\n");
    }
    byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
    return b.append("Content-Length: ")
        .append(bytes.length)
        .append("\r\n\r\n")
        .append(body)
        .toString();
  }

  void send(String raw) throws IOException {
    socket.getOutputStream().write(raw.getBytes(StandardCharsets.UTF_8));
    socket.getOutputStream().flush();
  }

  /** Reads one response with a Content-Length body; returns head and body as text. */
  String readResponse() throws IOException {
    InputStream in = socket.getInputStream();
    ByteArrayOutputStream head = new ByteArrayOutputStream();
    while (!head.toString(StandardCharsets.ISO_8859_1).endsWith("\r\n\r\n")) {
      int c = in.read();
      if (c < 0) {
        throw new IOException("EOF in response head");
      }
      head.write(c);
    }
    String h = head.toString(StandardCharsets.ISO_8859_1);
    int at = h.toLowerCase().indexOf("content-length:");
    int len = Integer.parseInt(h.substring(at + 15, h.indexOf("\r\n", at)).trim());
    return h + new String(in.readNBytes(len), StandardCharsets.UTF_8);
  }

  /** The next byte, or -1 at a clean end of stream. */
  int read() throws IOException {
    return socket.getInputStream().read();
  }

  @Override
  public void close() throws IOException {
    socket.close();
  }
}
