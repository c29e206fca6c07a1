package dev.retryagent.demo.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.net.SocketException;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

class MiniHttpServerTest {
  private final List<ServerRequest> seen = new CopyOnWriteArrayList<>();
  private MiniHttpServer server;

  private MiniHttpServer start(Handler h) throws IOException {
    server = MiniHttpServer.start("test", h);
    return server;
  }

  @AfterEach
  void stop() {
    if (server != null) {
      server.close();
    }
  }

  private ServerReply echo(ServerRequest r) {
    seen.add(r);
    if (r.path().equals("/reset")) {
      return ServerReply.reset();
    }
    return ServerReply.json(
        201, "Created", Map.of("X-Path", r.path()), "{\"body\":\"" + r.bodyText() + "\"}");
  }

  @Test
  void servesSeveralRequestsOnOneKeepAliveConnection() throws IOException {
    start(this::echo);
    try (RawClient c = new RawClient(server.port())) {
      c.send(RawClient.post("/a?q=secret", "one", "Idempotency-Key: k1"));
      String first = c.readResponse();
      c.send(RawClient.post("/b", "two"));
      String second = c.readResponse();

      assertThat(first)
          .startsWith("HTTP/1.1 201 Created\r\n")
          .contains("X-Path: /a")
          .endsWith("{\"body\":\"one\"}");
      assertThat(second).contains("X-Path: /b").endsWith("{\"body\":\"two\"}");
    }
    assertThat(seen).extracting(ServerRequest::path).containsExactly("/a", "/b");
    assertThat(seen.get(0).header("idempotency-key")).isEqualTo("k1");
  }

  @Test
  void readsChunkedRequestBodies() throws IOException {
    start(this::echo);
    try (RawClient c = new RawClient(server.port())) {
      c.send(
          "POST /c HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
              + "3\r\nabc\r\n4;ext=1\r\ndefg\r\n0\r\nTrailer: t\r\n\r\n");

      assertThat(c.readResponse()).endsWith("{\"body\":\"abcdefg\"}");
    }
  }

  @Test
  void answersGarbageWith400AndClosesTheConnection() throws IOException {
    start(this::echo);
    try (RawClient c = new RawClient(server.port())) {
      c.send("NONSENSE\r\n\r\n");

      assertThat(c.readResponse()).startsWith("HTTP/1.1 400 ");
      assertThat(c.read()).isEqualTo(-1);
    }
    assertThat(seen).isEmpty();
  }

  @Test
  void aResetReplyAbortsTheConnectionWithATcpReset() throws IOException {
    start(this::echo);
    try (RawClient c = new RawClient(server.port())) {
      c.send(RawClient.post("/reset", "x"));

      // A graceful close would read -1; an abortive close (RST) fails the read instead.
      assertThatThrownBy(c::read).isInstanceOf(SocketException.class).hasMessageContaining("reset");
    }
    assertThat(seen).hasSize(1); // the request was read before the reset
  }

  @Test
  void closeDropsOpenKeepAliveConnections() throws IOException {
    // (Whether the port then refuses connections is not asserted: on a shared machine another
    // process may bind the freed ephemeral port at once.)
    start(this::echo);
    try (RawClient c = new RawClient(server.port())) {
      c.send(RawClient.post("/a", "x"));
      c.readResponse();

      server.close();

      assertThat(c.read()).isEqualTo(-1);
    }
  }

  @Test
  void bindsToLoopbackOnAnEphemeralPort() throws IOException {
    start(this::echo);

    assertThat(server.port()).isPositive();
    assertThat(server.baseUri().toString()).isEqualTo("http://127.0.0.1:" + server.port());
  }
}
