package dev.retryagent.fleet;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.File;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The connect's bound when the Redis host name resolves to several addresses (a DNS name with
 * several A records, a dual-stack host), in a forked JVM whose hosts file the test writes.
 */
@Timeout(60)
class RedisGatewayConnectTest {
  private static final int ADDRESSES = 3;
  private static final long CONNECT_MS = 400;
  private static final long COMMAND_MS = 50;

  @Test
  void aHostWithSeveralAddressesThatDoNotAnswerWaitsAtMostConnectTimeoutInAll(@TempDir Path dir)
      throws Exception {
    // Each address a listener whose backlog is full and that never accepts: a connect there gets
    // no answer (as from a dropped route), and times out.
    List<ServerSocket> listeners = new ArrayList<>();
    List<Socket> fillers = new ArrayList<>();
    try {
      int port = 0;
      StringBuilder hosts = new StringBuilder();
      for (int i = 1; i <= ADDRESSES; i++) {
        InetAddress address = InetAddress.getByName("127.0.0." + i);
        ServerSocket listener = new ServerSocket();
        listener.bind(new InetSocketAddress(address, port), 1);
        port = listener.getLocalPort();
        listeners.add(listener);
        fill(listener, fillers);
        hosts.append("127.0.0.").append(i).append(" redis.fleet.test\n");
      }
      Path hostsFile = dir.resolve("hosts");
      Files.write(hostsFile, hosts.toString().getBytes(StandardCharsets.UTF_8));

      int refused;
      try (ServerSocket closed = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
        refused = closed.getLocalPort();
      }
      String out =
          probe(hostsFile, "redis://redis.fleet.test:" + port, "redis://127.0.0.1:" + refused);

      Matcher m = Pattern.compile("waited (\\d+) (\\w+)").matcher(out);
      assertThat(m.find()).as(out).isTrue();
      long waited = Long.parseLong(m.group(1));
      assertThat(m.group(2)).as(out).isNotEqualTo("answered");
      // docs/fleet.md: commandTimeout plus connectTimeout when it opens a connection (450 ms), not
      // a connectTimeout per address (1.2 s).
      assertThat(waited).as(out).isLessThan(2 * CONNECT_MS);
    } finally {
      for (Socket s : fillers) {
        s.close();
      }
      for (ServerSocket l : listeners) {
        l.close();
      }
    }
  }

  /** Connects until the listener's backlog is full: the next connect gets no answer. */
  private static void fill(ServerSocket listener, List<Socket> fillers) throws Exception {
    for (int i = 0; i < 16; i++) {
      Socket s = new Socket();
      try {
        s.connect(listener.getLocalSocketAddress(), 200);
        fillers.add(s);
      } catch (java.net.SocketTimeoutException full) {
        s.close();
        return;
      }
    }
    throw new IllegalStateException("the backlog never filled");
  }

  private static String probe(Path hostsFile, String url, String refusedUrl) throws Exception {
    String java = Paths.get(System.getProperty("java.home"), "bin", "java").toString();
    List<String> cmd =
        Arrays.asList(
            java,
            "-Djdk.net.hosts.file=" + hostsFile,
            "-cp",
            System.getProperty("java.class.path"),
            ConnectProbe.class.getName(),
            url,
            Long.toString(CONNECT_MS),
            Long.toString(COMMAND_MS),
            refusedUrl);
    Process p =
        new ProcessBuilder(cmd)
            .redirectErrorStream(true)
            .redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null")))
            .start();
    byte[] bytes = p.getInputStream().readAllBytes();
    assertThat(p.waitFor(30, TimeUnit.SECONDS)).isTrue();
    return new String(bytes, StandardCharsets.UTF_8);
  }
}
