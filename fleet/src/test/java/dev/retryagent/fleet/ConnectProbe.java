package dev.retryagent.fleet;

import java.time.Duration;
import java.util.Arrays;
import java.util.Collections;

/**
 * Forked by {@link RedisGatewayConnectTest} with {@code -Djdk.net.hosts.file}, so that a Redis host
 * name resolves to several loopback addresses: one acquisition through a new {@link RedisGateway},
 * printing how long it waited for Redis (ms) and how it ended.
 *
 * <p>Arguments: redisUrl connectTimeoutMillis commandTimeoutMillis refusedUrl.
 */
public final class ConnectProbe {
  private ConnectProbe() {}

  public static void main(String[] args) throws Exception {
    // Classes loaded first (a refused connect), so that the wait timed is Redis's alone.
    acquire(FleetSettings.builder(args[3]).build());
    FleetSettings settings =
        FleetSettings.builder(args[0])
            .connectTimeout(Duration.ofMillis(Long.parseLong(args[1])))
            .commandTimeout(Duration.ofMillis(Long.parseLong(args[2])))
            .build();
    RedisGateway gateway = new RedisGateway(settings, dev.retryagent.engine.Clock.SYSTEM);
    try {
      // The fleet's thread's connect first: it looks the name up (an acquisition never does).
      gateway.ping();
    } catch (FleetUnavailableException expected) {
      // no address answers
    }
    long start = System.nanoTime();
    String outcome = acquire(gateway);
    long waited = (System.nanoTime() - start) / 1_000_000;
    System.out.println("waited " + waited + " " + outcome);
  }

  private static String acquire(FleetSettings settings) {
    return acquire(new RedisGateway(settings, dev.retryagent.engine.Clock.SYSTEM));
  }

  private static String acquire(RedisGateway gateway) {
    try {
      gateway.eval(
          Scripts.HEARTBEAT, Collections.singletonList("k"), Arrays.asList("id", "600", "1"));
      return "answered";
    } catch (FleetUnavailableException e) {
      return e.kind().name();
    } finally {
      gateway.close();
    }
  }
}
