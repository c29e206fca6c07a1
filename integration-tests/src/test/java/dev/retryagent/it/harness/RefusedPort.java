package dev.retryagent.it.harness;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * A loopback port where every connection is refused, for as long as the test JVM runs: a socket is
 * bound to it but never listens, so the kernel answers each connect with a reset, and no other
 * server (of this run, or another process on a shared machine) can take the port meanwhile. A port
 * found free and then closed could be taken again before the application connects, and the
 * "refused" connection would then reach someone else's server.
 */
public final class RefusedPort {
  /** Held, never closed: each port stays refused until the test JVM exits. */
  private static final List<Socket> HELD = new CopyOnWriteArrayList<>();

  private RefusedPort() {}

  /** A new port of its own, so what is counted on one is never mixed with another's. */
  public static int port() {
    try {
      Socket s = new Socket();
      s.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
      HELD.add(s);
      return s.getLocalPort();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
