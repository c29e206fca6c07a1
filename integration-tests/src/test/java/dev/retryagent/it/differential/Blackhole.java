package dev.retryagent.it.differential;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.net.URI;
import java.util.ArrayList;
import java.util.List;

/**
 * A loopback port where connections are never made: a listening socket that never accepts, its
 * accept queue filled by connections of its own, so that the kernel drops every further SYN and a
 * client's connect runs into its connect timeout (the network is never touched).
 */
final class Blackhole implements AutoCloseable {
  private static final int PROBE_MILLIS = 200;

  private final ServerSocket server;
  private final List<Socket> fillers = new ArrayList<>();

  private Blackhole(ServerSocket server) {
    this.server = server;
  }

  static Blackhole start() throws IOException {
    ServerSocket server = new ServerSocket();
    server.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 1);
    Blackhole hole = new Blackhole(server);
    for (int i = 0; i < 16; i++) {
      Socket s = new Socket();
      try {
        s.connect(server.getLocalSocketAddress(), PROBE_MILLIS);
        hole.fillers.add(s);
      } catch (SocketTimeoutException full) {
        s.close();
        return hole;
      }
    }
    hole.close();
    throw new IOException("the accept queue of " + server + " never filled up");
  }

  int port() {
    return server.getLocalPort();
  }

  URI uri() {
    return URI.create("http://127.0.0.1:" + port());
  }

  @Override
  public void close() throws IOException {
    for (Socket s : fillers) {
      s.close();
    }
    server.close();
  }
}
