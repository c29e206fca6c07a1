package dev.retryagent.fleet;

import static org.awaitility.Awaitility.await;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.TimeUnit;
import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.Jedis;

/**
 * A real {@code redis-server} on a free loopback port, started by the test itself: the binary comes
 * out of the {@code com.github.codemonstur:embedded-redis} jar (Maven Central), so {@code mvn
 * verify} needs no Redis installed. It can be killed ({@code SIGKILL}) and started again on the
 * same port.
 */
public final class RedisServerProcess implements AutoCloseable {
  private static final Duration START_TIMEOUT = Duration.ofSeconds(15);

  private final int port;
  private final List<String> extraArgs;
  private final Path dir;
  private final String adminPassword;
  private Process process;

  private RedisServerProcess(int port, String adminPassword, List<String> extraArgs)
      throws IOException {
    this.port = port;
    this.adminPassword = adminPassword;
    this.extraArgs = extraArgs;
    this.dir = Files.createTempDirectory(Paths.get("target"), "redis-" + port + "-");
  }

  /** A server with no password. */
  public static RedisServerProcess start() throws IOException {
    return start(null);
  }

  /** A server whose {@code default} user has {@code password} (none when null). */
  public static RedisServerProcess start(String password) throws IOException {
    return start(password, new ArrayList<>());
  }

  /** A server with more command-line options (e.g. a TLS port beside the plain one). */
  public static RedisServerProcess start(String password, List<String> options) throws IOException {
    List<String> extra = new ArrayList<>(options);
    if (password != null) {
      extra.addAll(Arrays.asList("--requirepass", password));
    }
    RedisServerProcess r = new RedisServerProcess(freePort(), password, extra);
    r.restart();
    return r;
  }

  public int port() {
    return port;
  }

  /** {@code redis://127.0.0.1:<port>}. */
  public String url() {
    return "redis://127.0.0.1:" + port;
  }

  /** Starts the server (again, after {@link #kill}) and waits until it answers. */
  public synchronized void restart() throws IOException {
    List<String> cmd =
        new ArrayList<>(
            Arrays.asList(
                binary().toString(),
                "--port",
                Integer.toString(port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                dir.toAbsolutePath().toString()));
    cmd.addAll(extraArgs);
    process =
        new ProcessBuilder(cmd)
            .redirectErrorStream(true)
            .redirectOutput(ProcessBuilder.Redirect.appendTo(dir.resolve("redis.log").toFile()))
            .start();
    Process started = process;
    await("redis-server on port " + port)
        .atMost(START_TIMEOUT)
        .pollInterval(Duration.ofMillis(20))
        .until(() -> answers() || exited(started));
  }

  /** False while {@code p} runs; when it has exited, the reason, from its log, as an exception. */
  private boolean exited(Process p) throws IOException {
    if (p.isAlive()) {
      return false;
    }
    throw new IllegalStateException(
        "redis-server on port "
            + port
            + " exited with "
            + p.exitValue()
            + ":\n"
            + new String(Files.readAllBytes(dir.resolve("redis.log")), StandardCharsets.UTF_8));
  }

  /** {@code SIGKILL}: no shutdown, sockets reset, state gone (no persistence). */
  public synchronized void kill() throws InterruptedException {
    if (process != null) {
      process.destroyForcibly();
      process.waitFor(10, TimeUnit.SECONDS);
      process = null;
    }
  }

  /** A plain connection for the test's own commands (CLIENT PAUSE, SCRIPT FLUSH, ACL...). */
  public Jedis admin() {
    DefaultJedisClientConfig.Builder b =
        DefaultJedisClientConfig.builder().connectionTimeoutMillis(2000).socketTimeoutMillis(5000);
    if (adminPassword != null) {
      b.password(adminPassword);
    }
    return new Jedis(new HostAndPort("127.0.0.1", port), b.build());
  }

  @Override
  public void close() throws InterruptedException {
    kill();
  }

  /** Any reply to PING (+PONG, or -NOAUTH with a password) means it is serving. */
  private boolean answers() {
    try (Socket s = new Socket()) {
      s.connect(new InetSocketAddress("127.0.0.1", port), 200);
      s.setSoTimeout(500);
      OutputStream out = s.getOutputStream();
      out.write("PING\r\n".getBytes(StandardCharsets.US_ASCII));
      out.flush();
      InputStream in = s.getInputStream();
      int c = in.read();
      return c == '+' || c == '-';
    } catch (IOException e) {
      return false;
    }
  }

  static int freePort() throws IOException {
    // Never the same port twice in this JVM: two ports taken before either is bound (a TLS port
    // beside the plain one) came out equal once, and redis-server could not bind the second.
    synchronized (HANDED_OUT) {
      while (true) {
        try (ServerSocket s = new ServerSocket(0)) {
          s.setReuseAddress(true);
          if (HANDED_OUT.add(s.getLocalPort())) {
            return s.getLocalPort();
          }
        }
      }
    }
  }

  private static final java.util.Set<Integer> HANDED_OUT = new java.util.HashSet<>();

  /** The redis-server binary for this machine, extracted once from the embedded-redis jar. */
  static synchronized Path binary() throws IOException {
    String name = binaryName();
    Path target = Paths.get("target", "redis-bin", name);
    if (Files.isExecutable(target)) {
      return target;
    }
    try (InputStream in = RedisServerProcess.class.getResourceAsStream("/" + name)) {
      if (in == null) {
        throw new IllegalStateException(name + " is not in the embedded-redis jar");
      }
      Files.createDirectories(target.getParent());
      Path tmp = Files.createTempFile(target.getParent(), name, ".tmp");
      Files.copy(in, tmp, StandardCopyOption.REPLACE_EXISTING);
      if (!tmp.toFile().setExecutable(true)) {
        throw new IOException("cannot make " + tmp + " executable");
      }
      Files.move(tmp, target, StandardCopyOption.REPLACE_EXISTING);
    }
    return target;
  }

  private static String binaryName() {
    String os = System.getProperty("os.name").toLowerCase(Locale.ROOT);
    String arch = System.getProperty("os.arch").toLowerCase(Locale.ROOT);
    boolean arm = arch.contains("aarch64") || arch.contains("arm64");
    boolean x64 = arch.contains("amd64") || arch.contains("x86_64");
    if (os.contains("linux") && x64) {
      return "redis-server-6.2.6-v5-linux-amd64";
    }
    if (os.contains("linux") && arm) {
      return "redis-server-6.2.7-linux-arm64";
    }
    if (os.contains("mac") && x64) {
      return "redis-server-6.2.6-v5-darwin-amd64";
    }
    if (os.contains("mac") && arm) {
      return "redis-server-6.2.6-v5-darwin-arm64";
    }
    throw new IllegalStateException(
        "no redis-server binary in embedded-redis for " + os + "/" + arch);
  }
}
