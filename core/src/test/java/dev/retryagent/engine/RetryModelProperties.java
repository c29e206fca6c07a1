package dev.retryagent.engine;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retryagent.policy.BackoffPolicy;
import dev.retryagent.policy.BudgetPolicy;
import dev.retryagent.policy.CircuitBreakerPolicy;
import dev.retryagent.policy.Policy;
import dev.retryagent.policy.RateLimitPolicy;
import dev.retryagent.policy.RetryPolicy;
import dev.retryagent.policy.StatusSet;
import dev.retryagent.policy.TransportFailure;
import dev.retryagent.policy.UnsafeMethods;
import dev.retryagent.testing.FakeRequest;
import java.net.ConnectException;
import java.net.SocketException;
import java.net.http.HttpTimeoutException;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;

/**
 * The retry section's rules as a model, checked against the engine's loops (sync and async) on
 * generated policies and scripts: which attempts are made, how long each wait is (backoff, jitter
 * at the dice's extremes, {@code Retry-After} in every form), where the deadline stops them, and
 * that the caller gets the last attempt's own outcome. Breaker, budget and rate limit are off: each
 * has properties of its own.
 */
class RetryModelProperties {
  private static final long MS = 1_000_000L;

  /** One attempt's outcome and length; a status may carry a Retry-After (null: none). */
  static final class Step {
    final String kind; // "status", "connect", "reset", "timeout"
    final int status;
    final String retryAfter; // for a status; "DATE+n" is an HTTP-date n seconds after the attempt
    final long takesNanos;

    Step(String kind, int status, String retryAfter, long takesNanos) {
      this.kind = kind;
      this.status = status;
      this.retryAfter = retryAfter;
      this.takesNanos = takesNanos;
    }

    @Override
    public String toString() {
      return (kind.equals("status")
              ? status + (retryAfter == null ? "" : " RA=" + retryAfter)
              : kind)
          + " in "
          + takesNanos / MS
          + "ms";
    }
  }

  static final class Case {
    final RetryPolicy retry;
    final String method;
    final String key; // null: none
    final double dice;
    final List<Step> steps;

    Case(RetryPolicy retry, String method, String key, double dice, List<Step> steps) {
      this.retry = retry;
      this.method = method;
      this.key = key;
      this.dice = dice;
      this.steps = steps;
    }

    @Override
    public String toString() {
      return method
          + (key == null ? "" : " key=[" + key + "]")
          + " dice="
          + dice
          + " "
          + retry
          + " "
          + steps;
    }
  }

  @Provide
  Arbitrary<Case> cases() {
    // Up to 2 s and 5 s more: delays short enough that several retries fit a deadline.
    Arbitrary<BackoffPolicy> backoff = JitterProperties.backoffs(2_000 * MS, 5_000 * MS);
    Arbitrary<RetryPolicy> retry =
        Combinators.combine(
                backoff,
                Arbitraries.integers().between(1, 6),
                Arbitraries.longs().between(100, 20_000).map(ms -> ms * MS),
                Arbitraries.doubles().between(0, 1),
                Arbitraries.of(true, false),
                Arbitraries.of(UnsafeMethods.class),
                Arbitraries.of(-1.0, 0.01, 0.3, 1.0),
                Arbitraries.<List<String>>of(
                    List.of("429", "502", "503", "504"),
                    List.of("5xx"),
                    List.of("429"),
                    List.<String>of()))
            .as(
                (b, attempts, deadline, raShare, raOn, unsafe, perAttemptShare, statuses) ->
                    RetryPolicy.builder()
                        .backoff(b)
                        .maxAttempts(attempts)
                        .deadline(Duration.ofNanos(deadline))
                        .retryAfterMax(Duration.ofMillis((long) (raShare * deadline / MS)))
                        .retryAfterEnabled(raOn)
                        .unsafeMethods(unsafe)
                        .perAttemptTimeout(
                            perAttemptShare < 0
                                ? null
                                : Duration.ofMillis(
                                    Math.max(1, (long) (perAttemptShare * deadline / MS))))
                        .retryOnStatuses(StatusSet.of(statuses))
                        .retryOnTransport(
                            statuses.isEmpty()
                                ? EnumSet.of(TransportFailure.CONNECT)
                                : EnumSet.allOf(TransportFailure.class))
                        .build());
    Arbitrary<String> retryAfters =
        Arbitraries.of(
            null,
            "0",
            "1",
            "3",
            "12",
            "40",
            "-1",
            "1.5",
            " 2 ",
            "soon",
            "99999999999999999999",
            "DATE+2",
            "DATE+25",
            "DATE-5");
    Arbitrary<Step> statusSteps =
        Combinators.combine(
                Arbitraries.of(200, 404, 429, 500, 502, 503),
                retryAfters,
                Arbitraries.longs().between(0, 3_000).map(ms -> ms * MS))
            .as((s, ra, t) -> new Step("status", s, ra, t));
    Arbitrary<Step> failures =
        Combinators.combine(
                Arbitraries.of("connect", "reset", "timeout"),
                Arbitraries.longs().between(0, 3_000).map(ms -> ms * MS))
            .as((k, t) -> new Step(k, 0, null, t));
    Arbitrary<List<Step>> steps =
        Arbitraries.frequencyOf(
                net.jqwik.api.Tuple.of(3, statusSteps), net.jqwik.api.Tuple.of(2, failures))
            .list()
            .ofMinSize(6)
            .ofMaxSize(6);
    return Combinators.combine(
            retry,
            Arbitraries.of("GET", "PUT", "POST", "PATCH"),
            Arbitraries.of(null, "k-1", "", " "),
            Arbitraries.of(0.0, 0.5, Math.nextDown(1.0), 0.999),
            steps)
        .as(Case::new);
  }

  @Property(tries = 500)
  void theSyncLoopFollowsTheModel(@ForAll("cases") Case c) {
    check(c, Driver.SYNC);
  }

  @Property(tries = 500)
  void theAsyncLoopFollowsTheModel(@ForAll("cases") Case c) {
    check(c, Driver.ASYNC);
  }

  private static TransportFailure transportOf(String kind) {
    switch (kind) {
      case "connect":
        return TransportFailure.CONNECT;
      case "reset":
        return TransportFailure.RESET;
      default:
        return TransportFailure.TIMEOUT;
    }
  }

  private static void check(Case c, Driver driver) {
    Policy policy =
        new Policy(
            TestPolicy.ROUTE,
            c.retry,
            BudgetPolicy.builder().enabled(false).build(),
            CircuitBreakerPolicy.builder().enabled(false).build(),
            RateLimitPolicy.builder().enabled(false).build());
    // Every draw is the same value: the model computes each delay with it.
    EngineFixture f = EngineFixture.of(policy, c.dice);
    FakeRequest request = FakeRequest.of(c.method);
    if (c.key != null) {
      request.header("Idempotency-Key", c.key);
    }
    List<Throwable> errors = new ArrayList<>();
    Script.Step[] steps = new Script.Step[c.steps.size()];
    for (int i = 0; i < steps.length; i++) {
      Step s = c.steps.get(i);
      Throwable error;
      switch (s.kind) {
        case "connect":
          error = new ConnectException("Connection refused");
          break;
        case "reset":
          error = new SocketException("Connection reset");
          break;
        case "timeout":
          error = new HttpTimeoutException("request timed out");
          break;
        default:
          error = null;
      }
      errors.add(error);
      if (error != null) {
        steps[i] = Script.fail(error).takes(s.takesNanos);
      } else if (s.retryAfter != null && s.retryAfter.startsWith("DATE")) {
        // Written as the attempt ends: the fake wall clock then.
        steps[i] = Script.respond(s.status).takes(s.takesNanos);
        final FakeResponse served = steps[i].response;
        final long offset = Long.parseLong(s.retryAfter.substring(4));
        steps[i].during(
            () -> {
              Instant at = f.clock.wallNow().plusNanos(s.takesNanos).plusSeconds(offset);
              served.header(
                  "Retry-After",
                  DateTimeFormatter.RFC_1123_DATE_TIME.format(at.atOffset(ZoneOffset.UTC)));
            });
      } else if (s.retryAfter != null) {
        steps[i] = Script.respond(s.status, s.retryAfter).takes(s.takesNanos);
      } else {
        steps[i] = Script.respond(s.status).takes(s.takesNanos);
      }
    }
    Script script = new Script(f.clock, steps);
    long start = f.clock.nanoTime();
    CallResult result = driver.run(f, request, script);

    // The model.
    RetryPolicy p = c.retry;
    boolean idempotent = p.isIdempotent(c.method);
    boolean keyed = c.key != null && !c.key.trim().isEmpty();
    long t = start;
    long previous = 0;
    int made = 0;
    List<Long> expectedStarts = new ArrayList<>();
    for (int k = 1; k <= c.steps.size(); k++) {
      expectedStarts.add(t);
      made = k;
      Step s = c.steps.get(k - 1);
      long wallAtEnd = FakeClock.WALL_START.toEpochMilli() + (t + s.takesNanos - start) / MS;
      t += s.takesNanos;
      boolean response = s.kind.equals("status");
      boolean retryable =
          response
              ? p.retryOnStatuses().contains(s.status)
              : p.retryOnTransport().contains(transportOf(s.kind));
      if (!retryable) {
        break;
      }
      boolean safe;
      if (idempotent) {
        safe = true;
      } else if (p.unsafeMethods() == UnsafeMethods.NEVER) {
        safe = false;
      } else if (s.kind.equals("connect")) {
        safe = true;
      } else if (p.unsafeMethods() == UnsafeMethods.ALWAYS) {
        safe = true;
      } else {
        safe = p.unsafeMethods() == UnsafeMethods.IF_IDEMPOTENCY_KEY && keyed;
      }
      if (!safe || k >= p.maxAttempts()) {
        break;
      }
      long ra = RetryAfter.NONE;
      if (response && p.retryAfterEnabled() && s.retryAfter != null) {
        String value = s.retryAfter;
        if (value.startsWith("DATE")) {
          // As written: the wall clock at the attempt's end plus the offset, whole seconds.
          long offset = Long.parseLong(value.substring(4));
          long wallSecondsAt = (wallAtEnd / 1000 + offset) * 1000;
          ra = Math.max(0, wallSecondsAt - wallAtEnd) * MS;
        } else {
          ra = RetryAfter.parseNanos(value, wallAtEnd);
        }
      }
      if (ra != RetryAfter.NONE && ra > p.retryAfterMax().toNanos()) {
        break;
      }
      long d = Backoff.delayNanos(p.backoff(), k, previous, c.dice);
      if (ra != RetryAfter.NONE) {
        d = Math.max(d, ra);
      }
      if (t + d - (start + p.deadline().toNanos()) >= 0) {
        break;
      }
      previous = d;
      t += d;
    }

    assertThat(script.attemptCount()).as("attempts of %s", c).isEqualTo(made);
    List<Script.Attempt> attempts = script.attempts();
    long perAttempt = p.perAttemptTimeout() == null ? -1 : p.perAttemptTimeout().toNanos();
    for (int k = 0; k < attempts.size(); k++) {
      long at = expectedStarts.get(k);
      assertThat(attempts.get(k).startNanos)
          .as("start of attempt %d of %s", k + 1, c)
          .isEqualTo(at);
      // The first attempt is the caller's own: only perAttemptTimeout bounds it. A retry never
      // runs past the deadline.
      long left = start + p.deadline().toNanos() - at;
      long bound = k == 0 ? perAttempt : perAttempt < 0 ? left : Math.min(perAttempt, left);
      assertThat(attempts.get(k).timeoutNanos)
          .as("timeout of attempt %d of %s", k + 1, c)
          .isEqualTo(bound);
    }
    Step last = c.steps.get(made - 1);
    if (last.kind.equals("status")) {
      assertThat(result.response).as("the caller's response, %s", c).isNotNull();
      assertThat(result.response).isSameAs(steps[made - 1].response);
    } else {
      assertThat(result.error).as("the caller's failure, %s", c).isSameAs(errors.get(made - 1));
    }
  }
}
