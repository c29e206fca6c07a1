package dev.retryagent.testing;

import static org.assertj.core.api.Assertions.catchThrowable;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketTimeoutException;

/**
 * A loopback port whose connects never complete, as to a host that does not answer: a listening
 * socket whose backlog (1) is full and that never accepts. Linux drops further SYNs ({@code
 * tcp_abort_on_overflow} 0), so a connect waits until its own timeout; a kernel that refuses them
 * instead skips the test (an assumption, checked once with a connect of 300 ms).
 */
public final class UnansweredPort implements AutoCloseable {
  private final ServerSocket full;
  private final Socket first = new Socket();
  private final Socket second = new Socket();

  public UnansweredPort() throws IOException {
    InetAddress loopback = InetAddress.getLoopbackAddress();
    full = new ServerSocket(0, 1, loopback);
    try (Socket probe = new Socket()) {
      InetSocketAddress at = new InetSocketAddress(loopback, full.getLocalPort());
      first.connect(at, 5000);
      second.connect(at, 5000);
      assumeTrue(
          catchThrowable(() -> probe.connect(at, 300)) instanceof SocketTimeoutException,
          "this kernel drops a SYN to a full backlog rather than refusing it");
    } catch (IOException | RuntimeException e) {
      close();
      throw e;
    }
  }

  /** An {@code http} URL of this port with {@code path}. */
  public String url(String path) {
    return "http://" + full.getInetAddress().getHostAddress() + ":" + full.getLocalPort() + path;
  }

  @Override
  public void close() throws IOException {
    try (ServerSocket s = full;
        Socket a = first;
        Socket b = second) {
      // all three closed, each once
    }
  }
}
