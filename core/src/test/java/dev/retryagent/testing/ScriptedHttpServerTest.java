package dev.retryagent.testing;

import static dev.retryagent.testing.ScriptedHttpServer.requests;
import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** What the test server counts: the whole requests, and the ones begun (a cut one among them). */
class ScriptedHttpServerTest {
  private ScriptedHttpServer server;

  @BeforeEach
  void start() throws IOException {
    server = new ScriptedHttpServer();
  }

  @AfterEach
  void stop() throws IOException {
    server.close();
  }

  @Test
  void aRequestCutOffInItsBodyIsBegunNotWhole() throws IOException {
    try (Socket s = connect()) {
      send(s, "PUT /files/7 HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nst");
    }
    server.awaitDoneWithConnectionsFrom(0);

    assertThat(server.requestCount()).isZero();
    assertThat(server.requestsStarted()).isEqualTo(1);
    assertThat(server.awaitRequests(0))
        .isEqualTo("0 requests, 1 started")
        .isNotEqualTo(requests(0));
  }

  @Test
  void aWholeRequestIsCountedBothWaysAndACutOneAfterItStillShows() throws IOException {
    try (Socket s = connect()) {
      send(s, "GET /items HTTP/1.1\r\nHost: x\r\n\r\n");
      // Not waiting for the answer: awaitRequests waits for the server to count it.
      assertThat(server.awaitRequests(1)).isEqualTo(requests(1)).isEqualTo("1 request, 1 started");
      assertThat(answer(s)).startsWith("HTTP/1.1 200 OK");
    }
    try (Socket s = connect()) {
      send(s, "POST /pay HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n{}");
      s.shutdownOutput(); // the body ends 8 bytes short of its length
      // The server's reader takes a body short of its length whole (what came of it).
      assertThat(answer(s)).startsWith("HTTP/1.1 200 OK");
    }
    try (Socket s = connect()) {
      send(s, "PUT /files/7 HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n");
    }
    server.awaitDoneWithConnectionsFrom(0);

    assertThat(server.awaitRequests(2)).isEqualTo("2 requests, 3 started");
  }

  private Socket connect() throws IOException {
    Socket s = new Socket(InetAddress.getLoopbackAddress(), server.port());
    s.setSoTimeout(10_000);
    return s;
  }

  private static void send(Socket s, String bytes) throws IOException {
    OutputStream out = s.getOutputStream();
    out.write(bytes.getBytes(StandardCharsets.ISO_8859_1));
    out.flush();
  }

  /** The answer's first line. */
  private static String answer(Socket s) throws IOException {
    InputStream in = s.getInputStream();
    StringBuilder line = new StringBuilder();
    for (int c = in.read(); c != -1 && c != '\r'; c = in.read()) {
      line.append((char) c);
    }
    return line.toString();
  }
}
