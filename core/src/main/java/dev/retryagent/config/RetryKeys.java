package dev.retryagent.config;

import static dev.retryagent.config.ValueType.BOOLEAN;
import static dev.retryagent.config.ValueType.duration;
import static dev.retryagent.config.ValueType.enumOf;
import static dev.retryagent.config.ValueType.integer;
import static dev.retryagent.config.ValueType.listOf;

import dev.retryagent.config.ConfigSchema.KeyRef;
import dev.retryagent.policy.RetryPolicy;
import dev.retryagent.policy.TransportFailure;
import dev.retryagent.policy.UnsafeMethods;
import java.time.Duration;
import java.util.Locale;

/**
 * The {@code retry} section of a policy, with its {@code retryOn} and {@code retryAfter} maps
 * ({@code backoff} is {@link BackoffKeys}). Each key is written once, with where its value goes
 * ({@link KeyVisitor}); bounds are {@link RetryPolicy}'s, defaults and meanings are in
 * docs/configuration.md.
 */
final class RetryKeys {
  private RetryKeys() {}

  /** Read by the cross-key checks ({@link CrossChecks}): these bound each other. */
  static final KeyRef RETRY_AFTER_MAX = new KeyRef();

  static final KeyRef DEADLINE = new KeyRef();
  static final KeyRef PER_ATTEMPT_TIMEOUT = new KeyRef();

  static final ValueType CLASS_NAME = new ClassNameType();

  static final ValueType KEY_HEADER = new KeyHeaderType();

  /**
   * The header of {@code idempotencyKeyHeader}. A header that nearly every request carries (its
   * credentials, {@code Authorization} or {@code Cookie}, or one the client adds itself) is valid,
   * but it marks every such request as safe to repeat: with {@code unsafeMethods:
   * if-idempotency-key}, a POST without any idempotency key would be retried, a payment sent twice.
   * A warning, the value applied as written (the contract's key keeps its meaning).
   */
  private static final class KeyHeaderType extends ValueType.StringType {
    /**
     * Headers (lower case) that requests carry for reasons other than an idempotency key. Not a
     * request id ({@code X-Request-Id}): some APIs take it as their idempotency key.
     */
    private static final java.util.Set<String> EVERY_REQUEST =
        java.util.Set.of(
            "authorization",
            "proxy-authorization",
            "cookie",
            "host",
            "user-agent",
            "accept",
            "accept-encoding",
            "accept-language",
            "content-type",
            "content-length",
            "connection",
            "transfer-encoding");

    KeyHeaderType() {
      super("[!#$%&'*+.^_`|~0-9A-Za-z-]{1,256}", "an HTTP header name such as Idempotency-Key");
    }

    @Override
    String caution(Object value) {
      String name = (String) value;
      if (!EVERY_REQUEST.contains(name.toLowerCase(Locale.ROOT))) {
        return null;
      }
      return "found "
          + ConfigProblem.shown(name)
          + ", a header most requests carry for another reason: every request with it counts as"
          + " carrying an idempotency key, so with unsafeMethods: if-idempotency-key its POSTs"
          + " are retried as safe to repeat (a payment could be sent twice); name the header that"
          + " carries only the key, such as Idempotency-Key";
    }
  }

  /**
   * A class name of {@code retryOn.exceptions}. A name without a package ({@code IOException}) is
   * valid (the default package) but names no exception a client throws: it never matches, which the
   * contract keeps, so it is a warning that names the likely full name.
   */
  private static final class ClassNameType extends ValueType.StringType {
    /** The JDK's exceptions a name without its package most likely meant. */
    private static final String[] KNOWN = {
      "java.io.IOException",
      "java.io.EOFException",
      "java.io.InterruptedIOException",
      "java.io.UncheckedIOException",
      "java.net.SocketTimeoutException",
      "java.net.SocketException",
      "java.net.ConnectException",
      "java.net.UnknownHostException",
      "java.net.NoRouteToHostException",
      "java.net.PortUnreachableException",
      "java.net.ProtocolException",
      "java.net.http.HttpTimeoutException",
      "java.net.http.HttpConnectTimeoutException",
      "java.nio.channels.ClosedChannelException",
      "java.util.concurrent.TimeoutException",
      "javax.net.ssl.SSLException",
      "javax.net.ssl.SSLHandshakeException",
    };

    ClassNameType() {
      super(
          "[A-Za-z_$][A-Za-z0-9_$]*(\\.[A-Za-z_$][A-Za-z0-9_$]*){0,64}",
          "a fully qualified class name such as java.net.UnknownHostException");
    }

    @Override
    String caution(Object value) {
      String name = (String) value;
      if (name.indexOf('.') >= 0) {
        return null;
      }
      String text =
          "found "
              + ConfigProblem.shown(name)
              + ", a class name without its package: it matches no exception (names are compared"
              + " in full, with the package); ";
      for (String known : KNOWN) {
        if (known.toLowerCase(Locale.ROOT).endsWith("." + name.toLowerCase(Locale.ROOT))) {
          return text + "did you mean " + known + "?";
        }
      }
      return text + "write the fully qualified name, such as java.io.IOException";
    }
  }

  static void visit(KeyVisitor parent, ConfigDraft d) {
    KeyVisitor k = parent.section("retry", "What is retried, how often and how long to wait.");
    if (k.key("enabled", BOOLEAN)) {
      d.retry.enabled(k.bool());
    }
    if (k.key("maxAttempts", integer(1, RetryPolicy.MAX_ATTEMPTS_LIMIT))) {
      d.retry.maxAttempts(k.intValue());
    }
    BackoffKeys.visit(k, d);
    KeyVisitor retryOn = k.section("retryOn", "Which outcomes are retryable.");
    if (retryOn.key("statuses", listOf(ValueType.STATUS))) {
      d.retry.retryOnStatuses(retryOn.statuses());
    }
    if (retryOn.key("transport", listOf(enumOf(TransportFailure.class)))) {
      d.retry.retryOnTransport(retryOn.<TransportFailure>list());
    }
    if (retryOn.key("exceptions", listOf(CLASS_NAME))) {
      d.retry.retryOnExceptions(retryOn.<String>list());
    }
    if (k.key("methods", listOf(ValueType.METHOD))) {
      d.retry.methods(k.<String>list());
    }
    if (k.key("unsafeMethods", enumOf(UnsafeMethods.class))) {
      d.retry.unsafeMethods((UnsafeMethods) k.value());
    }
    if (k.key("idempotencyKeyHeader", KEY_HEADER)) {
      d.retry.idempotencyKeyHeader(k.text());
    }
    KeyVisitor retryAfter =
        k.section("retryAfter", "The Retry-After header of a retryable status.");
    if (retryAfter.key("enabled", BOOLEAN)) {
      d.retry.retryAfterEnabled(retryAfter.bool());
    }
    Duration retryAfterLimit = RetryPolicy.RETRY_AFTER_MAX_LIMIT;
    if (retryAfter.key("max", duration(Duration.ZERO, false, retryAfterLimit), RETRY_AFTER_MAX)) {
      d.retry.retryAfterMax(retryAfter.duration());
    }
    if (k.key("deadline", duration(Duration.ZERO, true, RetryPolicy.MAX_DEADLINE), DEADLINE)) {
      d.retry.deadline(k.duration());
    }
    if (k.noneOr(
        "perAttemptTimeout",
        duration(Duration.ZERO, true, RetryPolicy.MAX_DEADLINE),
        PER_ATTEMPT_TIMEOUT)) {
      d.retry.perAttemptTimeout(k.duration());
    }
    if (k.noneOr("attemptHeader", ValueType.HEADER_NAME)) {
      d.retry.attemptHeader(k.text());
    }
    if (k.key("replayBodyLimit", ValueType.size(RetryPolicy.MAX_REPLAY_BODY_LIMIT))) {
      d.retry.replayBodyLimit((Long) k.value());
    }
  }
}
