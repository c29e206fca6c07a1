package dev.retryagent.fleet;

import static org.awaitility.Awaitility.await;

import dev.retryagent.engine.Clock;
import dev.retryagent.internal.observe.Sinks;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.io.PrintStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;

/**
 * One JVM of the fleet, forked by {@link FleetForkedJvmsTest}: uses the module directly (no agent),
 * and for each permit sends one line to the test's counting server, which counts by its own clock.
 *
 * <p>Arguments: redisUrl keyPrefix perSecond burst threads durationMillis serverPort name.
 */
public final class FleetWorker {
  private FleetWorker() {}

  public static void main(String[] args) throws Exception {
    String url = args[0];
    String prefix = args[1];
    double perSecond = Double.parseDouble(args[2]);
    int burst = Integer.parseInt(args[3]);
    int threads = Integer.parseInt(args[4]);
    long durationNanos = Long.parseLong(args[5]) * 1_000_000L;
    int port = Integer.parseInt(args[6]);
    String name = args[7];

    FleetConnection fleet =
        FleetConnection.start(
            TestFleet.settings(url).keyPrefix(prefix).build(), Clock.SYSTEM, Sinks.stderr());
    FleetRateLimiter limiter =
        fleet.limiter("llm", TestFleet.limit(perSecond, burst), Duration.ofSeconds(60));
    try (Socket socket = new Socket()) {
      socket.connect(new InetSocketAddress("127.0.0.1", port), 5_000);
      socket.setSoTimeout(60_000);
      OutputStream raw = socket.getOutputStream();
      PrintStream out = new PrintStream(raw, true, StandardCharsets.US_ASCII.name());
      BufferedReader in =
          new BufferedReader(
              new InputStreamReader(socket.getInputStream(), StandardCharsets.US_ASCII));

      await().atMost(Duration.ofSeconds(20)).until(fleet::isUp);
      out.println("ready " + name);
      if (!"go".equals(in.readLine())) {
        throw new IllegalStateException("no go from the test");
      }
      long end = System.nanoTime() + durationNanos;
      PermitLoad load =
          new PermitLoad(
                  name,
                  limiter,
                  threads,
                  5_000_000_000L,
                  end,
                  t -> {
                    synchronized (out) {
                      out.println("p");
                    }
                  })
              .start();
      load.join(durationNanos / 1_000_000 + 20_000);
      FleetMetrics m = limiter.metrics();
      synchronized (out) {
        out.println(
            "done errors="
                + load.errors.size()
                + " refused="
                + load.refused.get()
                + " granted="
                + m.granted()
                + " fallbacks="
                + m.fallbacks());
      }
    } finally {
      fleet.close();
    }
  }
}
