package dev.retryagent.internal.observe;

/**
 * The scalar counters of one series, with their exported names: one table, so the Prometheus
 * endpoint, the MBeans and the snapshot cannot drift apart.
 */
enum Stat {
  CALLS("calls_total", "Calls", "Calls that ended, succeeded or failed."),
  SUCCEEDED(
      "successes_total", "Succeeded", "Calls that ended with a response that is not a failure."),
  FAILED(
      "failures_total",
      "Failed",
      "Calls that ended in a failure: an exception, a retryable status or a 5xx."),
  ATTEMPTS("attempts_total", "Attempts", "Attempts made, first attempts included."),
  RETRIES("retries_total", "Retries", "Retries made."),
  WOULD_RETRY("would_retry_total", "WouldRetry", "Retries observe mode decided but did not make."),
  BREAKER_REJECTIONS(
      "breaker_rejections_total",
      "BreakerRejections",
      "Calls and retries failed fast by an open circuit breaker."),
  WOULD_FAIL_FAST(
      "would_fail_fast_total",
      "WouldFailFast",
      "Calls an open circuit breaker would have failed fast (observe mode)."),
  RATE_LIMIT_WAITS(
      "rate_limit_waits_total",
      "RateLimitWaits",
      "Attempts delayed by the client-side rate limit."),
  RATE_LIMIT_REJECTIONS(
      "rate_limit_rejections_total",
      "RateLimitRejections",
      "Calls rejected by the client-side rate limit."),
  WOULD_RATE_LIMIT(
      "would_rate_limit_total",
      "WouldRateLimit",
      "Attempts the rate limit would have delayed or rejected (observe mode).");

  /** Name after {@code retryagent_}. */
  final String prometheusName;

  /** MBean attribute name. */
  final String attribute;

  final String help;

  Stat(String prometheusName, String attribute, String help) {
    this.prometheusName = prometheusName;
    this.attribute = attribute;
    this.help = help;
  }
}
