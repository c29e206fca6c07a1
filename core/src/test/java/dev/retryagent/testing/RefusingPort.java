package dev.retryagent.testing;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;

/**
 * A loopback port that refuses every connection: bound, never listening, so the kernel answers a
 * connect with a reset, and no other server can take the port while the test holds it (a port found
 * free and closed could be taken).
 */
public final class RefusingPort implements AutoCloseable {
  private final Socket bound = new Socket();

  public RefusingPort() throws IOException {
    bound.bind(new InetSocketAddress(InetAddress.getByName("127.0.0.1"), 0));
  }

  /** An {@code http} URL of this port with {@code path}. */
  public String url(String path) {
    return "http://127.0.0.1:" + bound.getLocalPort() + path;
  }

  @Override
  public void close() throws IOException {
    bound.close();
  }
}
