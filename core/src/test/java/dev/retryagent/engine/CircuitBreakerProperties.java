package dev.retryagent.engine;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retryagent.policy.CircuitBreakerPolicy;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;

/**
 * The breaker under random sequences of acquire, result, release and time passing, checked against
 * a model of its contract. For count windows the model also decides exactly when it must open.
 */
class CircuitBreakerProperties {
  private static final long MS = 1_000_000L;

  enum Kind {
    ACQUIRE,
    RESULT,
    RELEASE,
    ADVANCE
  }

  static final class Op {
    final Kind kind;
    final int pick;
    final boolean failure;
    final long nanos;

    Op(Kind kind, int pick, boolean failure, long nanos) {
      this.kind = kind;
      this.pick = pick;
      this.failure = failure;
      this.nanos = nanos;
    }

    @Override
    public String toString() {
      switch (kind) {
        case ADVANCE:
          return "+" + nanos / MS + "ms";
        case RESULT:
          return "result#" + pick + (failure ? "F" : "S") + "(" + nanos / MS + "ms)";
        case RELEASE:
          return "release#" + pick;
        default:
          return "acquire";
      }
    }
  }

  static final class Case {
    final CircuitBreakerPolicy policy;
    final List<Op> ops;

    Case(CircuitBreakerPolicy policy, List<Op> ops) {
      this.policy = policy;
      this.ops = ops;
    }

    @Override
    public String toString() {
      return policy + " " + ops;
    }
  }

  @Provide
  Arbitrary<Case> cases() {
    Arbitrary<CircuitBreakerPolicy> policies =
        Combinators.combine(
                Arbitraries.integers().between(0, 12), // 0 = time window
                Arbitraries.integers().between(1, 12),
                Arbitraries.doubles().between(0.05, 1.0).ofScale(2),
                Arbitraries.integers().between(0, 300), // 0 = no slow-call tracking
                Arbitraries.integers().between(1, 2_000),
                Arbitraries.integers().between(1, 4))
            .as(
                (size, min, threshold, slowMs, openMs, halfOpen) -> {
                  CircuitBreakerPolicy.Builder b =
                      CircuitBreakerPolicy.builder()
                          .minimumCalls(min)
                          .failureRateThreshold(threshold)
                          .openFor(Duration.ofMillis(openMs))
                          .halfOpenCalls(halfOpen);
                  if (size == 0) {
                    b.timeWindow(Duration.ofMillis(1_000));
                  } else {
                    b.countWindow(size);
                  }
                  if (slowMs > 0) {
                    b.slowCallDuration(Duration.ofMillis(slowMs)).slowCallRateThreshold(threshold);
                  }
                  return b.build();
                });
    Arbitrary<Op> op =
        Arbitraries.frequencyOf(
                net.jqwik.api.Tuple.of(4, Arbitraries.just(Kind.ACQUIRE)),
                net.jqwik.api.Tuple.of(4, Arbitraries.just(Kind.RESULT)),
                net.jqwik.api.Tuple.of(1, Arbitraries.just(Kind.RELEASE)),
                net.jqwik.api.Tuple.of(2, Arbitraries.just(Kind.ADVANCE)))
            .flatMap(
                kind ->
                    Combinators.combine(
                            Arbitraries.integers().between(0, 1000),
                            Arbitraries.integers().between(0, 9),
                            Arbitraries.longs().between(0, 2_500).map(ms -> ms * MS))
                        .as((pick, f, nanos) -> new Op(kind, pick, f < 4, nanos)));
    return Combinators.combine(policies, op.list().ofMaxSize(200)).as(Case::new);
  }

  /** A permit the model holds: its value and the episode (transition count) it was issued in. */
  static final class Held {
    final long permit;
    final long episode;

    Held(long permit, long episode) {
      this.permit = permit;
      this.episode = episode;
    }
  }

  @Property(tries = 400)
  void theBreakerOnlyMakesLegalMovesAndKeepsItsPromises(@ForAll("cases") Case c) {
    CircuitBreakerPolicy p = c.policy;
    List<CircuitTransition> seen = new ArrayList<>();
    CircuitBreaker breaker = new CircuitBreaker("http://h:80", p, (b, t) -> seen.add(t));
    long slowNanos = p.slowCallDuration() == null ? Long.MAX_VALUE : p.slowCallDuration().toNanos();
    boolean countWindow = p.windowType() == CircuitBreakerPolicy.WindowType.COUNT;
    // As set: above a count window's size (a window that never holds that many) it never opens on
    // rates; a minimumCalls left unset already follows a smaller count window down in the policy.
    long minimum = p.minimumCalls();

    long now = 5_000 * MS;
    List<Held> held = new ArrayList<>();
    Deque<boolean[]> closedWindow = new ArrayDeque<>(); // {failure, slow} of this CLOSED episode
    long episode = 0;
    int trialSuccesses = 0; // successful trials of this HALF_OPEN episode, slow ones included
    int trialSlows = 0; // slow successful trials of this HALF_OPEN episode
    boolean expectReopen = false; // the last trial's outcome reopens the breaker
    long lastTrialAt = 0; // when the last trial permit of this HALF_OPEN episode was issued

    for (Op op : c.ops) {
      CircuitState before = breaker.state();
      long openUntil = breaker.openUntilNanos();
      int seenBefore = seen.size();
      long lastTrialBefore = lastTrialAt;
      boolean expectOpen = false;
      boolean countsHere = false;

      switch (op.kind) {
        case ADVANCE:
          now += op.nanos;
          break;
        case ACQUIRE:
          {
            long permit = breaker.tryAcquire(now);
            if (before == CircuitState.OPEN && now < openUntil) {
              assertThat(permit).as("no permit while open").isEqualTo(CircuitBreaker.REJECTED);
            }
            if (permit != CircuitBreaker.REJECTED) {
              held.add(new Held(permit, breaker.transitions()));
              if (breaker.state() == CircuitState.HALF_OPEN) {
                lastTrialAt = now;
              }
            }
            break;
          }
        case RELEASE:
          if (!held.isEmpty()) {
            Held h = held.remove(op.pick % held.size());
            breaker.release(h.permit);
          }
          break;
        case RESULT:
          if (!held.isEmpty()) {
            Held h = held.remove(op.pick % held.size());
            boolean slow = op.nanos > slowNanos;
            countsHere = h.episode == episode;
            if (countsHere && before == CircuitState.CLOSED && countWindow) {
              closedWindow.addLast(new boolean[] {op.failure, slow});
              if (closedWindow.size() > p.windowSize()) {
                closedWindow.removeFirst();
              }
              long total = closedWindow.size();
              long failures = closedWindow.stream().filter(o -> o[0]).count();
              long slows = closedWindow.stream().filter(o -> o[1]).count();
              expectOpen =
                  total >= minimum
                      && ((double) failures / total >= p.failureRateThreshold()
                          || (slowNanos != Long.MAX_VALUE
                              && (double) slows / total >= p.slowCallRateThreshold()));
            }
            if (countsHere && before == CircuitState.HALF_OPEN) {
              // A failed trial reopens; slow ones succeeded, and reopen only when they reach the
              // slow-call rate threshold of all halfOpenCalls trials.
              if (!op.failure && slow) {
                trialSlows++;
              }
              expectReopen =
                  op.failure
                      || (slow
                          && (double) trialSlows / p.halfOpenCalls() >= p.slowCallRateThreshold());
              if (!expectReopen) {
                trialSuccesses++;
              }
            }
            breaker.onResult(h.permit, op.failure, op.nanos, now);
            if (!countsHere) {
              assertThat(seen.size()).as("a stale outcome moves nothing").isEqualTo(seenBefore);
            }
          }
          break;
        default:
          throw new AssertionError(op.kind);
      }

      List<CircuitTransition> moved = new ArrayList<>(seen.subList(seenBefore, seen.size()));
      CircuitState state = before;
      long halfOpenEpisode = episode;
      long trialsOut = held.stream().filter(h -> h.episode == halfOpenEpisode).count();
      for (CircuitTransition t : moved) {
        assertThat(t.from()).as("transitions chain").isEqualTo(state);
        state = t.to();
        episode++;
        switch (t) {
          case OPEN_TO_HALF_OPEN:
            assertThat(op.kind).isEqualTo(Kind.ACQUIRE);
            assertThat(now)
                .as("half-open only once openFor has passed")
                .isGreaterThanOrEqualTo(openUntil);
            trialSuccesses = 0;
            trialSlows = 0;
            break;
          case HALF_OPEN_TO_CLOSED:
            assertThat(trialSuccesses).as("all trials succeeded").isEqualTo(p.halfOpenCalls());
            closedWindow.clear();
            break;
          case HALF_OPEN_TO_OPEN:
            if (op.kind == Kind.ACQUIRE) {
              // Trials that never answered: every slot out, the last one openFor ago.
              assertThat(trialsOut + trialSuccesses)
                  .as("every trial slot was taken")
                  .isGreaterThanOrEqualTo(p.halfOpenCalls());
              assertThat(now - lastTrialBefore)
                  .as("the trials ran out of time")
                  .isGreaterThanOrEqualTo(p.openFor().toNanos());
              openUntil = lastTrialBefore + 2 * p.openFor().toNanos();
            } else {
              assertThat(op.kind).isEqualTo(Kind.RESULT);
              assertThat(expectReopen)
                  .as("a trial reopened it: failed, or slow at the threshold")
                  .isTrue();
              assertThat(breaker.openUntilNanos()).isEqualTo(now + p.openFor().toNanos());
            }
            break;
          case CLOSED_TO_OPEN:
            assertThat(op.kind).isEqualTo(Kind.RESULT);
            if (countWindow) {
              assertThat(expectOpen).as("opened without reaching a threshold").isTrue();
            }
            assertThat(breaker.openUntilNanos()).isEqualTo(now + p.openFor().toNanos());
            break;
          default:
            throw new AssertionError(t);
        }
      }
      if (countWindow && op.kind == Kind.RESULT && countsHere && before == CircuitState.CLOSED) {
        assertThat(!moved.isEmpty())
            .as("opens exactly when the window says so")
            .isEqualTo(expectOpen);
      }
      if (op.kind == Kind.RESULT && countsHere && before == CircuitState.HALF_OPEN) {
        assertThat(!moved.isEmpty())
            .as("a trial moves the breaker exactly when it reopens it or is the last success")
            .isEqualTo(expectReopen || trialSuccesses == p.halfOpenCalls());
      }
      assertThat(breaker.state()).isEqualTo(state);
      if (state == CircuitState.HALF_OPEN) {
        long outstanding = held.stream().filter(h -> h.episode == breaker.transitions()).count();
        assertThat(outstanding + trialSuccesses)
            .as("trial permits out at once")
            .isLessThanOrEqualTo(p.halfOpenCalls());
      }
      assertThat(breaker.transitions()).isEqualTo(episode);
    }
  }
}
