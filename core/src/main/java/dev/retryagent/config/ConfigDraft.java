package dev.retryagent.config;

import dev.retryagent.policy.BackoffPolicy;
import dev.retryagent.policy.BudgetPolicy;
import dev.retryagent.policy.CircuitBreakerPolicy;
import dev.retryagent.policy.Mode;
import dev.retryagent.policy.RateLimitPolicy;
import dev.retryagent.policy.RetryPolicy;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;

/**
 * A configuration being built: everything one part of a file can set, as policy builders and plain
 * fields. The key statements of the section files write here ({@link KeyVisitor}), then the
 * assembler builds immutable values from it. One instance per policy, route or file; not shared.
 */
final class ConfigDraft {
  // Policy sections (defaults and each route).
  final RetryPolicy.Builder retry = RetryPolicy.builder();
  final BackoffPolicy.Builder backoff = BackoffPolicy.builder();
  final BudgetPolicy.Builder budget = BudgetPolicy.builder();
  final CircuitBreakerPolicy.Builder circuitBreaker = CircuitBreakerPolicy.builder();
  final RateLimitPolicy.Builder rateLimit = RateLimitPolicy.builder();
  CircuitBreakerPolicy.WindowType windowType = CircuitBreakerPolicy.DEFAULT_WINDOW_TYPE;

  // Route identity and match.
  String routeName;
  List<HostPattern> hosts = new ArrayList<>();
  Set<String> methods = new LinkedHashSet<>();
  List<PathPattern> paths = new ArrayList<>();

  // File level.
  int version = 1;
  Mode mode = Mode.ENFORCE;
  boolean strict;
  boolean reload = true;
  boolean jdkHttp = true;
  boolean okhttp = true;
  boolean urlConnection = true;
  boolean apacheHttpClient = true;
  LogLevel logLevel = LogLevel.INFO;
  boolean jmx = true;
  boolean prometheusEnabled;
  String prometheusHost = MetricsSettings.DEFAULT_PROMETHEUS_HOST;
  int prometheusPort = MetricsSettings.DEFAULT_PROMETHEUS_PORT;
  String deadLetterPath;
  long deadLetterMaxBytes; // 0: none
  List<String> redactPathSegments = new ArrayList<>();
  RedisUrl fleetRedis;
  Duration fleetConnectTimeout = FleetConfig.DEFAULT_CONNECT_TIMEOUT;
  Duration fleetCommandTimeout = FleetConfig.DEFAULT_COMMAND_TIMEOUT;
  String fleetKeyPrefix = FleetConfig.DEFAULT_KEY_PREFIX;
  double fleetFallbackShare = FleetConfig.DEFAULT_FALLBACK_SHARE;
}
