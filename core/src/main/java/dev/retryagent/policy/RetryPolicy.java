package dev.retryagent.policy;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.Collections;
import java.util.EnumSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.Set;

/**
 * What is retried, how often and how long to wait: the {@code retry} section of the contract.
 * Immutable and thread-safe; defaults are the named constants below.
 */
public final class RetryPolicy {
  public static final int DEFAULT_MAX_ATTEMPTS = 3;

  /** Most attempts of one call, the first included: the contract's range is 1..10. */
  public static final int MAX_ATTEMPTS_LIMIT = 10;

  public static final List<String> DEFAULT_STATUSES = List.of("429", "502", "503", "504");
  public static final Set<TransportFailure> DEFAULT_TRANSPORT =
      Collections.unmodifiableSet(EnumSet.allOf(TransportFailure.class));
  public static final Set<String> DEFAULT_METHODS =
      Collections.unmodifiableSet(
          new LinkedHashSet<>(Arrays.asList("GET", "HEAD", "OPTIONS", "TRACE", "PUT", "DELETE")));
  public static final UnsafeMethods DEFAULT_UNSAFE_METHODS = UnsafeMethods.IF_NOT_SENT;
  public static final String DEFAULT_IDEMPOTENCY_KEY_HEADER = "Idempotency-Key";
  public static final Duration DEFAULT_RETRY_AFTER_MAX = Duration.ofSeconds(30);
  public static final Duration DEFAULT_DEADLINE = Duration.ofSeconds(30);
  public static final long DEFAULT_REPLAY_BODY_LIMIT = 64 * 1024;

  /** Longest deadline, and so longest perAttemptTimeout: a day; a call is not a batch job. */
  public static final Duration MAX_DEADLINE = Duration.ofDays(1);

  /** Longest {@code retryAfter.max}: a server asking for more than a day is not retried. */
  public static final Duration RETRY_AFTER_MAX_LIMIT = Duration.ofDays(1);

  /** Largest replayBodyLimit, in bytes (1 GiB): the agent may hold this much of one body. */
  public static final long MAX_REPLAY_BODY_LIMIT = 1L << 30;

  private static final RetryPolicy DEFAULTS = builder().build();

  private final boolean enabled;
  private final int maxAttempts;
  private final BackoffPolicy backoff;
  private final StatusSet retryOnStatuses;
  private final Set<TransportFailure> retryOnTransport;
  private final List<String> retryOnExceptions;
  private final Set<String> methods;
  private final UnsafeMethods unsafeMethods;
  private final String idempotencyKeyHeader;
  private final boolean retryAfterEnabled;
  private final Duration retryAfterMax;
  private final Duration deadline;
  private final Duration perAttemptTimeout;
  private final String attemptHeader;
  private final long replayBodyLimit;

  private RetryPolicy(Builder b) {
    this.enabled = b.enabled;
    this.maxAttempts = b.maxAttempts;
    this.backoff = b.backoff;
    this.retryOnStatuses = b.retryOnStatuses;
    this.retryOnTransport = Collections.unmodifiableSet(EnumSet.copyOf(b.retryOnTransport));
    this.retryOnExceptions = List.copyOf(b.retryOnExceptions);
    this.methods = Collections.unmodifiableSet(new LinkedHashSet<>(b.methods));
    this.unsafeMethods = b.unsafeMethods;
    this.idempotencyKeyHeader = b.idempotencyKeyHeader;
    this.retryAfterEnabled = b.retryAfterEnabled;
    this.retryAfterMax = b.retryAfterMax;
    this.deadline = b.deadline;
    this.perAttemptTimeout = b.perAttemptTimeout;
    this.attemptHeader = b.attemptHeader;
    this.replayBodyLimit = b.replayBodyLimit;
  }

  public static RetryPolicy defaults() {
    return DEFAULTS;
  }

  public static Builder builder() {
    return new Builder();
  }

  public Builder toBuilder() {
    Builder b = new Builder();
    b.enabled = enabled;
    b.maxAttempts = maxAttempts;
    b.backoff = backoff;
    b.retryOnStatuses = retryOnStatuses;
    b.retryOnTransport = EnumSet.copyOf(retryOnTransport);
    b.retryOnExceptions = new ArrayList<>(retryOnExceptions);
    b.methods = new LinkedHashSet<>(methods);
    b.unsafeMethods = unsafeMethods;
    b.idempotencyKeyHeader = idempotencyKeyHeader;
    b.retryAfterEnabled = retryAfterEnabled;
    b.retryAfterMax = retryAfterMax;
    b.deadline = deadline;
    b.perAttemptTimeout = perAttemptTimeout;
    b.attemptHeader = attemptHeader;
    b.replayBodyLimit = replayBodyLimit;
    return b;
  }

  /** False: calls pass through untouched by retries. */
  public boolean enabled() {
    return enabled;
  }

  /** Attempts in all, the first included; 1..{@value #MAX_ATTEMPTS_LIMIT}. */
  public int maxAttempts() {
    return maxAttempts;
  }

  public BackoffPolicy backoff() {
    return backoff;
  }

  /** {@code retryOn.statuses}. */
  public StatusSet retryOnStatuses() {
    return retryOnStatuses;
  }

  /** {@code retryOn.transport}. */
  public Set<TransportFailure> retryOnTransport() {
    return retryOnTransport;
  }

  /** {@code retryOn.exceptions}: class names matched on the class and its supertypes. */
  public List<String> retryOnExceptions() {
    return retryOnExceptions;
  }

  /** Idempotent methods, upper case. */
  public Set<String> methods() {
    return methods;
  }

  public UnsafeMethods unsafeMethods() {
    return unsafeMethods;
  }

  public String idempotencyKeyHeader() {
    return idempotencyKeyHeader;
  }

  /** {@code retryAfter.enabled}. */
  public boolean retryAfterEnabled() {
    return retryAfterEnabled;
  }

  /** {@code retryAfter.max}: a longer Retry-After is not waited for. */
  public Duration retryAfterMax() {
    return retryAfterMax;
  }

  /** Total time of a call across attempts and delays. */
  public Duration deadline() {
    return deadline;
  }

  /** Timeout of each attempt, or null to keep the client's own. */
  public Duration perAttemptTimeout() {
    return perAttemptTimeout;
  }

  /** Header that carries the 1-based attempt number, or null for none. */
  public String attemptHeader() {
    return attemptHeader;
  }

  /** Most bytes of a streamed body kept to send it again. */
  public long replayBodyLimit() {
    return replayBodyLimit;
  }

  /**
   * True when {@code method}, as the request sends it, is one of the idempotent {@link #methods()}:
   * case-sensitive (RFC 9110 section 9.1), so a request sent as {@code get} is an unknown method,
   * not safe to repeat, whatever the case {@code retry.methods} was written in.
   */
  public boolean isIdempotent(String method) {
    return methods.contains(method);
  }

  @Override
  public boolean equals(Object o) {
    if (!(o instanceof RetryPolicy)) {
      return false;
    }
    RetryPolicy t = (RetryPolicy) o;
    return enabled == t.enabled
        && maxAttempts == t.maxAttempts
        && backoff.equals(t.backoff)
        && retryOnStatuses.equals(t.retryOnStatuses)
        && retryOnTransport.equals(t.retryOnTransport)
        && retryOnExceptions.equals(t.retryOnExceptions)
        && methods.equals(t.methods)
        && unsafeMethods == t.unsafeMethods
        && idempotencyKeyHeader.equalsIgnoreCase(t.idempotencyKeyHeader)
        && retryAfterEnabled == t.retryAfterEnabled
        && retryAfterMax.equals(t.retryAfterMax)
        && deadline.equals(t.deadline)
        && Objects.equals(perAttemptTimeout, t.perAttemptTimeout)
        && Objects.equals(attemptHeader, t.attemptHeader)
        && replayBodyLimit == t.replayBodyLimit;
  }

  @Override
  public int hashCode() {
    return Objects.hash(
        enabled, maxAttempts, backoff, retryOnStatuses, retryOnTransport, methods, deadline);
  }

  @Override
  public String toString() {
    return "retry{enabled="
        + enabled
        + ", maxAttempts="
        + maxAttempts
        + ", "
        + backoff
        + ", retryOn.statuses="
        + retryOnStatuses
        + ", retryOn.transport="
        + retryOnTransport
        + ", retryOn.exceptions="
        + retryOnExceptions
        + ", methods="
        + methods
        + ", unsafeMethods="
        + unsafeMethods.configName()
        + ", idempotencyKeyHeader="
        + idempotencyKeyHeader
        + ", retryAfter.enabled="
        + retryAfterEnabled
        + ", retryAfter.max="
        + retryAfterMax
        + ", deadline="
        + deadline
        + ", perAttemptTimeout="
        + (perAttemptTimeout == null ? "none" : perAttemptTimeout)
        + ", attemptHeader="
        + (attemptHeader == null ? "none" : attemptHeader)
        + ", replayBodyLimit="
        + replayBodyLimit
        + "}";
  }

  /**
   * Validating builder. Starts at the defaults. A setter throws {@link IllegalArgumentException},
   * naming the key and the value, for a value outside its documented range or a null; not
   * thread-safe. {@code retryAfter.max} and {@code perAttemptTimeout} may exceed the deadline, each
   * keeping its own meaning: the deadline still ends the call (a retry that could not start before
   * it is not made; a retry's attempt gets at most what is left of it), while {@code
   * retryAfter.max} also bounds a {@code pauseOn429} pause and {@code perAttemptTimeout} the first
   * attempt, which the deadline does not bound (docs/configuration.md, keys that bound each other).
   */
  public static final class Builder {
    private boolean enabled = true;
    private int maxAttempts = DEFAULT_MAX_ATTEMPTS;
    private BackoffPolicy backoff = BackoffPolicy.defaults();
    private StatusSet retryOnStatuses = StatusSet.of(DEFAULT_STATUSES);
    private Set<TransportFailure> retryOnTransport = EnumSet.copyOf(DEFAULT_TRANSPORT);
    private List<String> retryOnExceptions = new ArrayList<>();
    private Set<String> methods = new LinkedHashSet<>(DEFAULT_METHODS);
    private UnsafeMethods unsafeMethods = DEFAULT_UNSAFE_METHODS;
    private String idempotencyKeyHeader = DEFAULT_IDEMPOTENCY_KEY_HEADER;
    private boolean retryAfterEnabled = true;
    private Duration retryAfterMax = DEFAULT_RETRY_AFTER_MAX;
    private Duration deadline = DEFAULT_DEADLINE;
    private Duration perAttemptTimeout;
    private String attemptHeader;
    private long replayBodyLimit = DEFAULT_REPLAY_BODY_LIMIT;

    private Builder() {}

    public Builder enabled(boolean enabled) {
      this.enabled = enabled;
      return this;
    }

    public Builder maxAttempts(int maxAttempts) {
      this.maxAttempts = Checks.inRange("retry.maxAttempts", maxAttempts, 1, MAX_ATTEMPTS_LIMIT);
      return this;
    }

    public Builder backoff(BackoffPolicy backoff) {
      this.backoff = Checks.notNull("retry.backoff", backoff);
      return this;
    }

    public Builder retryOnStatuses(StatusSet statuses) {
      this.retryOnStatuses = Checks.notNull("retry.retryOn.statuses", statuses);
      return this;
    }

    public Builder retryOnTransport(Collection<TransportFailure> transport) {
      Checks.notNull("retry.retryOn.transport", transport);
      this.retryOnTransport =
          transport.isEmpty() ? EnumSet.noneOf(TransportFailure.class) : EnumSet.copyOf(transport);
      return this;
    }

    public Builder retryOnExceptions(Collection<String> classNames) {
      Checks.notNull("retry.retryOn.exceptions", classNames);
      for (String name : classNames) {
        if (name == null || name.isBlank()) {
          throw new IllegalArgumentException("retry.retryOn.exceptions must not hold blanks");
        }
      }
      this.retryOnExceptions = new ArrayList<>(classNames);
      return this;
    }

    public Builder methods(Collection<String> methods) {
      Checks.notNull("retry.methods", methods);
      Set<String> upper = new LinkedHashSet<>();
      for (String m : methods) {
        if (m == null || m.isBlank()) {
          throw new IllegalArgumentException("retry.methods must not hold blanks");
        }
        upper.add(m.trim().toUpperCase(Locale.ROOT));
      }
      this.methods = upper;
      return this;
    }

    public Builder unsafeMethods(UnsafeMethods unsafeMethods) {
      this.unsafeMethods = Checks.notNull("retry.unsafeMethods", unsafeMethods);
      return this;
    }

    public Builder idempotencyKeyHeader(String header) {
      Checks.notNull("retry.idempotencyKeyHeader", header);
      if (header.isBlank()) {
        throw new IllegalArgumentException("retry.idempotencyKeyHeader must not be blank");
      }
      this.idempotencyKeyHeader = header.trim();
      return this;
    }

    public Builder retryAfterEnabled(boolean enabled) {
      this.retryAfterEnabled = enabled;
      return this;
    }

    public Builder retryAfterMax(Duration max) {
      this.retryAfterMax =
          Checks.atMost(
              "retry.retryAfter.max",
              Checks.nonNegative("retry.retryAfter.max", max),
              RETRY_AFTER_MAX_LIMIT);
      return this;
    }

    public Builder deadline(Duration deadline) {
      this.deadline =
          Checks.atMost(
              "retry.deadline", Checks.positive("retry.deadline", deadline), MAX_DEADLINE);
      return this;
    }

    /** Null keeps the client's own timeout. */
    public Builder perAttemptTimeout(Duration timeout) {
      this.perAttemptTimeout =
          timeout == null
              ? null
              : Checks.atMost(
                  "retry.perAttemptTimeout",
                  Checks.positive("retry.perAttemptTimeout", timeout),
                  MAX_DEADLINE);
      return this;
    }

    /** Null sends no attempt header. */
    public Builder attemptHeader(String header) {
      if (header != null && header.isBlank()) {
        throw new IllegalArgumentException("retry.attemptHeader must not be blank");
      }
      this.attemptHeader = header == null ? null : header.trim();
      return this;
    }

    public Builder replayBodyLimit(long bytes) {
      if (bytes < 0) {
        throw new IllegalArgumentException(
            "retry.replayBodyLimit must not be negative, was " + bytes);
      }
      if (bytes > MAX_REPLAY_BODY_LIMIT) {
        throw new IllegalArgumentException(
            "retry.replayBodyLimit must be at most " + MAX_REPLAY_BODY_LIMIT + ", was " + bytes);
      }
      this.replayBodyLimit = bytes;
      return this;
    }

    public RetryPolicy build() {
      return new RetryPolicy(this);
    }
  }
}
