package dev.retryagent.internal.observe;

import dev.retryagent.config.LogLevel;
import dev.retryagent.config.PathMask;
import dev.retryagent.engine.CircuitBreaker;
import dev.retryagent.engine.CircuitTransition;
import dev.retryagent.engine.GiveUpReason;
import dev.retryagent.engine.RetryEvent;
import dev.retryagent.engine.RetryListener;
import java.util.Objects;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;

/**
 * One readable line per thing the engine did, filtered by {@code agent.log.level}:
 *
 * <table>
 *   <caption>Which event is printed at which level</caption>
 *   <tr><th>level</th><th>lines</th></tr>
 *   <tr><td>WARN</td><td>a failed call given up (every reason but circuit-open and cancelled); a
 *       rate-limit rejection (observe mode: would be rejected); a breaker opening or
 *       reopening</td></tr>
 *   <tr><td>INFO</td><td>a retry (observe mode: would retry); a call failed fast by an open
 *       breaker (observe mode: would fail fast) or cancelled; a call that succeeded after
 *       retries; a breaker half-opening or closing</td></tr>
 *   <tr><td>DEBUG</td><td>every attempt; every call's end; rate-limit waits</td></tr>
 * </table>
 *
 * <p>Failing fast is INFO, not WARN: while a breaker is open every call fails fast, and the WARN
 * line of the opening already says so once.
 *
 * <p>In enforce mode a breaker or rate-limit rejection is printed once, as the give-up that follows
 * it. Lines never contain query strings, header values or idempotency keys (see {@link Sanitizer}).
 * Thread-safe if the sink is; never throws.
 */
public final class LogListener implements RetryListener {
  private volatile LogLevel level;
  private volatile PathMask pathMask = PathMask.NONE;
  private final Consumer<String> sink;
  private final BooleanSupplier observing;
  private final ErrorReporter errors;

  /**
   * @param level {@code agent.log.level}
   * @param sink receives each line (without a line break); must be thread-safe, e.g. {@link
   *     Sinks#stderr()}. Never {@link System#out}.
   * @param observing true while the engine is in observe mode: breaker transitions carry no mode,
   *     so this words them as "would open" (e.g. {@code () -> engine.mode() == Mode.OBSERVE}); null
   *     means never
   */
  public LogListener(LogLevel level, Consumer<String> sink, BooleanSupplier observing) {
    this.level = Objects.requireNonNull(level, "level");
    this.sink = Objects.requireNonNull(sink, "sink");
    this.observing = observing == null ? () -> false : observing;
    // A sink that throws cannot be told about it: report on stderr.
    this.errors = new ErrorReporter(Sinks.stderr());
  }

  /** Lines to {@link System#err}. */
  public static LogListener toStderr(LogLevel level, BooleanSupplier observing) {
    return new LogListener(level, Sinks.stderr(), observing);
  }

  public LogLevel level() {
    return level;
  }

  /**
   * Changes the level for lines from now on: a reloaded {@code agent.log.level} applies without a
   * new listener (the engine's listeners are fixed when it is built).
   */
  public void setLevel(LogLevel level) {
    this.level = Objects.requireNonNull(level, "level");
  }

  /**
   * Masks path segments in lines from now on ({@code agent.redact.pathSegments}, reloadable like
   * the level); {@link PathMask#NONE} until set.
   */
  public void setPathMask(PathMask mask) {
    this.pathMask = Objects.requireNonNull(mask, "mask");
  }

  /** True when lines of {@code lineLevel} are printed. */
  public boolean enabled(LogLevel lineLevel) {
    return level.allows(lineLevel);
  }

  /**
   * No event is built for a line this level would not print: at the default {@code info}, a call
   * that succeeds at its first attempt builds none.
   */
  @Override
  public boolean wants(RetryEvent.Type type, int attempt, boolean succeeded) {
    switch (type) {
      case ATTEMPT:
        return enabled(LogLevel.DEBUG);
      case CALL_COMPLETE:
        return enabled(succeeded && attempt > 1 ? LogLevel.INFO : LogLevel.DEBUG);
      case RETRY:
      case BREAKER_REJECTED:
        return enabled(LogLevel.INFO);
      default:
        return enabled(LogLevel.WARN);
    }
  }

  @Override
  public void onAttempt(RetryEvent e) {
    if (enabled(LogLevel.DEBUG)) {
      print(e);
    }
  }

  @Override
  public void onRetry(RetryEvent e) {
    if (enabled(LogLevel.INFO)) {
      print(e);
    }
  }

  @Override
  public void onGiveUp(RetryEvent e) {
    GiveUpReason r = e.reason();
    LogLevel l =
        r == GiveUpReason.CIRCUIT_OPEN
                || r == GiveUpReason.CANCELLED
                || r == GiveUpReason.APPLICATION_FAILED
            ? LogLevel.INFO
            : LogLevel.WARN;
    if (enabled(l)) {
      print(e);
    }
  }

  @Override
  public void onCallComplete(RetryEvent e) {
    LogLevel l = e.succeeded() && e.attempt() > 1 ? LogLevel.INFO : LogLevel.DEBUG;
    if (enabled(l)) {
      print(e);
    }
  }

  @Override
  public void onBreakerRejected(RetryEvent e) {
    // Enforce mode: the give-up that follows says it.
    if (e.observeOnly() && enabled(LogLevel.INFO)) {
      print(e);
    }
  }

  @Override
  public void onRateLimited(RetryEvent e) {
    if (e.reason() == null) {
      if (enabled(LogLevel.DEBUG)) {
        print(e);
      }
    } else if (e.observeOnly() && enabled(LogLevel.WARN)) {
      // Enforce mode: the give-up that follows says it.
      print(e);
    }
  }

  @Override
  public void onBreakerTransition(
      CircuitBreaker breaker, CircuitTransition transition, String route) {
    LogLevel l =
        transition == CircuitTransition.CLOSED_TO_OPEN
                || transition == CircuitTransition.HALF_OPEN_TO_OPEN
            ? LogLevel.WARN
            : LogLevel.INFO;
    if (!enabled(l)) {
      return;
    }
    try {
      sink.accept(LogLines.transition(breaker, transition, observing.getAsBoolean()));
    } catch (RuntimeException | LinkageError | StackOverflowError ex) {
      failed(ex);
    }
  }

  private void print(RetryEvent e) {
    try {
      sink.accept(line(e, pathMask));
    } catch (RuntimeException | LinkageError | StackOverflowError ex) {
      failed(ex);
    }
  }

  private static String line(RetryEvent e, PathMask mask) {
    switch (e.type()) {
      case ATTEMPT:
        return LogLines.attempt(e, mask);
      case RETRY:
        return LogLines.retry(e, mask);
      case GIVE_UP:
        return LogLines.giveUp(e, mask);
      case CALL_COMPLETE:
        return LogLines.complete(e, mask);
      case BREAKER_REJECTED:
        return LogLines.breakerRejected(e, mask);
      default:
        return LogLines.rateLimited(e, mask);
    }
  }

  private void failed(Throwable ex) {
    errors.once(
        "log",
        "retry-agent: could not write a log line ("
            + ex.getClass().getName()
            + "); further failures are not reported");
  }
}
