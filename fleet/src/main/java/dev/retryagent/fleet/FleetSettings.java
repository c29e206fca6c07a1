package dev.retryagent.fleet;

import dev.retryagent.config.RedisUrl;
import dev.retryagent.policy.RateLimitPolicy;
import java.time.Duration;
import java.util.Objects;

/**
 * How a JVM joins its fleet: the Redis to share limits in, how long it may wait for it, and what it
 * does without it. The {@code fleet} section of the configuration maps onto it: {@code redis.url},
 * {@code redis.connectTimeout}, {@code redis.commandTimeout}, {@code keyPrefix}, {@code
 * fallbackShare}. The other settings have no configuration key; their defaults are meant to stay.
 * Immutable; built by a validating {@link Builder}.
 */
public final class FleetSettings {
  /** The longest wait for a TCP (and TLS) connection to Redis. */
  public static final Duration DEFAULT_CONNECT_TIMEOUT = Duration.ofMillis(200);

  /**
   * The longest wait for one Redis command: an acquisition never waits longer for Redis. 50 ms is a
   * hundred times a Redis round trip inside one data centre, and short next to an HTTP call.
   */
  public static final Duration DEFAULT_COMMAND_TIMEOUT = Duration.ofMillis(50);

  public static final String DEFAULT_KEY_PREFIX = "retry-agent";

  /**
   * The share of a fleet limit one JVM uses while Redis is unreachable: four JVMs together keep to
   * the fleet limit, a larger fleet exceeds it for the outage rather than stopping.
   */
  public static final double DEFAULT_FALLBACK_SHARE = 0.25;

  /**
   * How often a JVM says it is alive (and checks Redis when idle); 3 missed beats and it is gone.
   */
  public static final Duration DEFAULT_HEARTBEAT_INTERVAL = Duration.ofSeconds(1);

  /**
   * The first wait before reconnecting to Redis; it doubles up to {@link #DEFAULT_RECONNECT_MAX}.
   */
  public static final Duration DEFAULT_RECONNECT_MIN = Duration.ofMillis(100);

  public static final Duration DEFAULT_RECONNECT_MAX = Duration.ofSeconds(5);

  /** Connections to Redis per JVM: as many acquisitions can be on the wire at once. */
  public static final int DEFAULT_MAX_CONNECTIONS = 16;

  /** {@link Builder#leasePermits}: chosen from the rate (see {@link #leaseFor}). */
  public static final int LEASE_AUTO = 0;

  /**
   * Below this rate a lease is one permit (an exact fleet limit); above, one permit per this many
   * per second, up to {@link #MAX_AUTO_LEASE}: at 1,000/s a JVM asks Redis at most every tenth
   * call.
   */
  static final double AUTO_LEASE_RATE = 100;

  static final int MAX_AUTO_LEASE = 10;

  private final RedisUrl redis;
  private final Duration connectTimeout;
  private final Duration commandTimeout;
  private final String keyPrefix;
  private final double fallbackShare;
  private final boolean fallbackPerLiveInstance;
  private final Duration heartbeatInterval;
  private final Duration reconnectMin;
  private final Duration reconnectMax;
  private final int maxConnections;
  private final int leasePermits;

  private FleetSettings(Builder b) {
    this.redis = b.redis;
    this.connectTimeout = b.connectTimeout;
    this.commandTimeout = b.commandTimeout;
    this.keyPrefix = b.keyPrefix;
    this.fallbackShare = b.fallbackShare;
    this.fallbackPerLiveInstance = b.fallbackPerLiveInstance;
    this.heartbeatInterval = b.heartbeatInterval;
    this.reconnectMin = b.reconnectMin;
    this.reconnectMax = b.reconnectMax;
    this.maxConnections = b.maxConnections;
    this.leasePermits = b.leasePermits;
  }

  /** A builder for the Redis at {@code url} ({@link RedisUrl#parse}). */
  public static Builder builder(String url) {
    return new Builder(RedisUrl.parse(url));
  }

  /** A builder for the Redis at {@code url}, already parsed (the configuration's value). */
  public static Builder builder(RedisUrl url) {
    return new Builder(url);
  }

  public RedisUrl redis() {
    return redis;
  }

  public Duration connectTimeout() {
    return connectTimeout;
  }

  public Duration commandTimeout() {
    return commandTimeout;
  }

  /** Redis keys are {@code <keyPrefix>:<route>:...}, the route as {@link #routeKeyPart}. */
  public String keyPrefix() {
    return keyPrefix;
  }

  /**
   * {@code <keyPrefix>:<route>}, the route as {@link #routeKeyPart}: its limit's keys are this and
   * {@code :gcra}, {@code :pause}.
   */
  public String routeKey(String route) {
    return keyPrefix + ":" + routeKeyPart(route);
  }

  /**
   * A route's name as its Redis keys hold it: letters, digits, {@code .}, {@code _} and {@code -}
   * as they are, any other character as the {@code %XX} of its UTF-8 bytes ({@code openai:chat} is
   * {@code openai%3Achat}). A name may hold any character but a control one (RouteKeys), so written
   * as it is a {@code :} could make two routes, or a route of two fleets whose key prefixes differ
   * by a {@code :}, share keys, and a {@code {...}} would pick a Redis Cluster hash slot. Every
   * name of the earlier rule ({@code [A-Za-z0-9][A-Za-z0-9._-]{0,63}}) is its own key part, as
   * before; {@code %} was never in a name and is itself encoded, so no two names share one. A lone
   * surrogate is written as the three bytes UTF-8 would give its code (no valid UTF-8 has them),
   * not as {@code ?}.
   */
  public static String routeKeyPart(String route) {
    int i = 0;
    while (i < route.length() && isKeyPlain(route.charAt(i))) {
      i++;
    }
    if (i == route.length()) {
      return route;
    }
    StringBuilder b = new StringBuilder(route.length() + 16).append(route, 0, i);
    while (i < route.length()) {
      int c = route.codePointAt(i);
      i += Character.charCount(c);
      if (c < 0x80 && isKeyPlain((char) c)) {
        b.append((char) c);
      } else if (c < 0x80) {
        percent(b, c);
      } else if (c < 0x800) {
        percent(b, 0xc0 | c >> 6);
        percent(b, 0x80 | c & 0x3f);
      } else if (c < 0x10000) {
        percent(b, 0xe0 | c >> 12);
        percent(b, 0x80 | c >> 6 & 0x3f);
        percent(b, 0x80 | c & 0x3f);
      } else {
        percent(b, 0xf0 | c >> 18);
        percent(b, 0x80 | c >> 12 & 0x3f);
        percent(b, 0x80 | c >> 6 & 0x3f);
        percent(b, 0x80 | c & 0x3f);
      }
    }
    return b.toString();
  }

  private static boolean isKeyPlain(char c) {
    return c >= 'a' && c <= 'z'
        || c >= 'A' && c <= 'Z'
        || c >= '0' && c <= '9'
        || c == '.'
        || c == '_'
        || c == '-';
  }

  private static void percent(StringBuilder b, int octet) {
    b.append('%').append(HEX.charAt(octet >> 4)).append(HEX.charAt(octet & 0xf));
  }

  private static final String HEX = "0123456789ABCDEF";

  /** In (0, 1]: the share of a fleet limit one JVM uses while Redis is unreachable. */
  public double fallbackShare() {
    return fallbackShare;
  }

  /**
   * True when the share without Redis is one over the live instances last seen, and {@link
   * #fallbackShare()} only until a count was seen.
   */
  public boolean fallbackPerLiveInstance() {
    return fallbackPerLiveInstance;
  }

  public Duration heartbeatInterval() {
    return heartbeatInterval;
  }

  public Duration reconnectMin() {
    return reconnectMin;
  }

  public Duration reconnectMax() {
    return reconnectMax;
  }

  public int maxConnections() {
    return maxConnections;
  }

  /** The lease size asked for, or {@link #LEASE_AUTO}. */
  public int leasePermits() {
    return leasePermits;
  }

  /**
   * The share of a fleet limit this JVM takes without Redis, given the live instances last seen (0
   * when none was seen yet).
   */
  public double shareWithout(int liveInstancesSeen) {
    if (fallbackPerLiveInstance && liveInstancesSeen > 0) {
      return 1.0 / liveInstancesSeen;
    }
    return fallbackShare;
  }

  /**
   * How many permits one acquisition may take from Redis at once for a limit: {@link
   * #leasePermits()} when set, else one per {@value #AUTO_LEASE_RATE}/s of the rate (one below it),
   * at most {@value #MAX_AUTO_LEASE}; never more than a quarter of the burst, so that one JVM's
   * lease cannot take the fleet's whole burst.
   */
  public int leaseFor(RateLimitPolicy limit) {
    int wanted =
        leasePermits != LEASE_AUTO
            ? leasePermits
            : (int) Math.min(MAX_AUTO_LEASE, Math.floor(limit.perSecond() / AUTO_LEASE_RATE));
    return Math.max(1, Math.min(wanted, limit.burst() / 4));
  }

  @Override
  public String toString() {
    return "fleet{redis="
        + redis
        + ", connectTimeout="
        + connectTimeout
        + ", commandTimeout="
        + commandTimeout
        + ", keyPrefix="
        + keyPrefix
        + ", fallbackShare="
        + (fallbackPerLiveInstance ? "1/live instances, else " : "")
        + fallbackShare
        + "}";
  }

  /** Validating builder; every value has the default named above. */
  public static final class Builder {
    private final RedisUrl redis;
    private Duration connectTimeout = DEFAULT_CONNECT_TIMEOUT;
    private Duration commandTimeout = DEFAULT_COMMAND_TIMEOUT;
    private String keyPrefix = DEFAULT_KEY_PREFIX;
    private double fallbackShare = DEFAULT_FALLBACK_SHARE;
    private boolean fallbackPerLiveInstance;
    private Duration heartbeatInterval = DEFAULT_HEARTBEAT_INTERVAL;
    private Duration reconnectMin = DEFAULT_RECONNECT_MIN;
    private Duration reconnectMax = DEFAULT_RECONNECT_MAX;
    private int maxConnections = DEFAULT_MAX_CONNECTIONS;
    private int leasePermits = LEASE_AUTO;

    private Builder(RedisUrl redis) {
      this.redis = Objects.requireNonNull(redis, "redis");
    }

    public Builder connectTimeout(Duration timeout) {
      this.connectTimeout = millis("fleet.redis.connectTimeout", timeout);
      return this;
    }

    public Builder commandTimeout(Duration timeout) {
      this.commandTimeout = millis("fleet.redis.commandTimeout", timeout);
      return this;
    }

    public Builder keyPrefix(String prefix) {
      if (prefix == null || prefix.isEmpty()) {
        throw new IllegalArgumentException("fleet.keyPrefix must not be empty");
      }
      this.keyPrefix = prefix;
      return this;
    }

    /** A fraction in (0, 1]: {@code 0.25} for the configuration's {@code 25%}. */
    public Builder fallbackShare(double share) {
      if (!(share > 0 && share <= 1)) {
        throw new IllegalArgumentException(
            "fleet.fallbackShare must be above 0% and at most 100%, was " + share * 100 + "%");
      }
      this.fallbackShare = share;
      return this;
    }

    /** Without Redis, take one over the live instances last seen ({@link #shareWithout}). */
    public Builder fallbackPerLiveInstance(boolean perLiveInstance) {
      this.fallbackPerLiveInstance = perLiveInstance;
      return this;
    }

    public Builder heartbeatInterval(Duration interval) {
      this.heartbeatInterval = millis("fleet heartbeatInterval", interval);
      return this;
    }

    /** The reconnect backoff: from {@code min}, doubling, up to {@code max}. */
    public Builder reconnectBackoff(Duration min, Duration max) {
      Duration lo = millis("fleet reconnect backoff", min);
      Duration hi = millis("fleet reconnect backoff", max);
      if (hi.compareTo(lo) < 0) {
        throw new IllegalArgumentException("fleet reconnect backoff: max below min");
      }
      this.reconnectMin = lo;
      this.reconnectMax = hi;
      return this;
    }

    public Builder maxConnections(int connections) {
      if (connections < 1 || connections > 1024) {
        throw new IllegalArgumentException(
            "fleet maxConnections must be between 1 and 1024, was " + connections);
      }
      this.maxConnections = connections;
      return this;
    }

    /** Permits one acquisition may take at once (1 = none leased), or {@link #LEASE_AUTO}. */
    public Builder leasePermits(int permits) {
      if (permits < 0 || permits > 1000) {
        throw new IllegalArgumentException(
            "fleet leasePermits must be between 0 (auto) and 1000, was " + permits);
      }
      this.leasePermits = permits;
      return this;
    }

    public FleetSettings build() {
      return new FleetSettings(this);
    }

    /** Positive, whole milliseconds (what the client takes), at most a day. */
    private static Duration millis(String field, Duration d) {
      if (d == null || d.isNegative() || d.isZero()) {
        throw new IllegalArgumentException(field + " must be positive, was " + d);
      }
      if (d.compareTo(Duration.ofDays(1)) > 0) {
        throw new IllegalArgumentException(field + " must be at most 1d, was " + d);
      }
      return Duration.ofMillis(Math.max(1, (d.toNanos() + 999_999) / 1_000_000));
    }
  }
}
