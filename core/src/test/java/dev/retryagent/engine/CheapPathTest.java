package dev.retryagent.engine;

import static dev.retryagent.engine.Script.respond;
import static org.assertj.core.api.Assertions.assertThat;

import dev.retryagent.testing.FakeRequest;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * What makes a call cheap (issue 13) keeps the rules: events only for listeners that want them,
 * counters instead of routine events, per-host state found again once the registry dropped it, and
 * the breaker's exception still saying everything.
 */
class CheapPathTest {
  private static void call(EngineFixture f, String host, int status) {
    Driver.SYNC.run(f, FakeRequest.of("GET", host), new Script(f.clock, respond(status)));
  }

  /** Wants nothing but give-ups; keeps every event it is told about anyway. */
  private static final class GiveUpsOnly implements RetryListener {
    final List<RetryEvent.Type> told = new ArrayList<>();

    @Override
    public boolean wants(RetryEvent.Type type, int attempt, boolean succeeded) {
      return type == RetryEvent.Type.GIVE_UP;
    }

    @Override
    public void onAttempt(RetryEvent e) {
      told.add(e.type());
    }

    @Override
    public void onCallComplete(RetryEvent e) {
      told.add(e.type());
    }

    @Override
    public void onRetry(RetryEvent e) {
      told.add(e.type());
    }

    @Override
    public void onGiveUp(RetryEvent e) {
      told.add(e.type());
    }
  }

  /** Counts through a counter per route and target. */
  private static final class Counting implements RetryListener {
    final AtomicInteger asked = new AtomicInteger();
    final AtomicInteger attempts = new AtomicInteger();
    final AtomicInteger succeeded = new AtomicInteger();
    final AtomicInteger failed = new AtomicInteger();
    final List<RetryEvent.Type> told = new ArrayList<>();

    @Override
    public CallCounter counterFor(String route, String scheme, String host, int port) {
      asked.incrementAndGet();
      return new CallCounter() {
        @Override
        public void attempt() {
          attempts.incrementAndGet();
        }

        @Override
        public void callEnded(boolean ok) {
          (ok ? succeeded : failed).incrementAndGet();
        }
      };
    }

    @Override
    public void onAttempt(RetryEvent e) {
      told.add(e.type());
    }

    @Override
    public void onCallComplete(RetryEvent e) {
      told.add(e.type());
    }

    @Override
    public void onGiveUp(RetryEvent e) {
      told.add(e.type());
    }
  }

  @Test
  void aListenerIsToldOnlyWhatItWants() {
    TestPolicy p = TestPolicy.create();
    p.retry.maxAttempts(1);
    GiveUpsOnly l = new GiveUpsOnly();
    EngineFixture f = EngineFixture.withListener(p.build(), l);
    call(f, "a.example", 200);
    call(f, "a.example", 503);
    assertThat(l.told).containsExactly(RetryEvent.Type.GIVE_UP);
    // The recording listener wants everything and still gets it.
    assertThat(f.listener.events()).hasSizeGreaterThanOrEqualTo(5);
  }

  @Test
  void aCounterCountsAttemptsAndCallEndsInsteadOfTheirEvents() {
    TestPolicy p = TestPolicy.create();
    p.retry.maxAttempts(2);
    Counting l = new Counting();
    EngineFixture f = EngineFixture.withListener(p.build(), l);
    call(f, "a.example", 200);
    Driver.SYNC.run(
        f, FakeRequest.of("GET", "a.example"), new Script(f.clock, respond(503), respond(503)));
    assertThat(l.attempts).hasValue(3);
    assertThat(l.succeeded).hasValue(1);
    assertThat(l.failed).hasValue(1);
    // Asked once for the route and target; the give-up still comes as an event.
    assertThat(l.asked).hasValue(1);
    assertThat(l.told).containsExactly(RetryEvent.Type.GIVE_UP);
  }

  /** Counts a first-attempt success as one; attempts and call ends as they come. */
  private static final class CountingFirstSuccesses implements RetryListener {
    final List<String> told = new ArrayList<>();

    @Override
    public CallCounter counterFor(String route, String scheme, String host, int port) {
      return new CallCounter() {
        @Override
        public void attempt() {
          told.add("attempt");
        }

        @Override
        public void callEnded(boolean ok) {
          told.add(ok ? "succeeded" : "failed");
        }

        @Override
        public void firstAttemptSucceeded() {
          told.add("first-attempt success");
        }
      };
    }
  }

  @Test
  void aFirstAttemptIsCountedAtItsEndAndASuccessThereAsOne() {
    TestPolicy p = TestPolicy.create();
    p.retry.maxAttempts(3);
    CountingFirstSuccesses l = new CountingFirstSuccesses();
    EngineFixture f = EngineFixture.withListener(p.build(), l);
    call(f, "a.example", 200);
    assertThat(l.told).containsExactly("first-attempt success");
    l.told.clear();
    call(f, "a.example", 500); // not retried by default, and a failed call: counted as two
    assertThat(l.told).containsExactly("attempt", "failed");
    l.told.clear();
    Driver.SYNC.run(
        f, FakeRequest.of("GET", "a.example"), new Script(f.clock, respond(503), respond(200)));
    // The first attempt is counted as the second starts, then the second, then the end.
    assertThat(l.told).containsExactly("attempt", "attempt", "succeeded");
    l.told.clear();
    Driver.SYNC.run(
        f,
        FakeRequest.of("GET", "a.example"),
        new Script(f.clock, respond(503), respond(503), respond(503)));
    assertThat(l.told).containsExactly("attempt", "attempt", "attempt", "failed");
  }

  /** A request that counts how often it is asked for its path. */
  private static final class PathCounting implements RequestInfo {
    final AtomicInteger asked = new AtomicInteger();

    @Override
    public String method() {
      return "GET";
    }

    @Override
    public String scheme() {
      return "http";
    }

    @Override
    public String host() {
      return "a.example";
    }

    @Override
    public int port() {
      return 80;
    }

    @Override
    public String path() {
      asked.incrementAndGet();
      return "/v1/things";
    }

    @Override
    public String header(String name) {
      return null;
    }

    @Override
    public boolean bodyReplayable() {
      return true;
    }
  }

  @Test
  void theRequestIsAskedForItsPathOnlyWhenTheResolverReadsIt() {
    dev.retryagent.policy.Policy p = TestPolicy.create().build();
    PathCounting request = new PathCounting();
    RetryEngine fixed = RetryEngine.builder().policy(p).build();
    fixed.newCall(request);
    assertThat(request.asked).as("PolicyResolver.always reads no path").hasValue(0);

    List<String> paths = new ArrayList<>();
    RetryEngine byPath =
        RetryEngine.builder()
            .policies(
                (method, host, port, path) -> {
                  paths.add(path);
                  return p;
                })
            .build();
    byPath.newCall(request);
    assertThat(request.asked).hasValue(1);
    assertThat(paths).containsExactly("/v1/things");

    PolicyResolver pathless =
        new PolicyResolver() {
          @Override
          public dev.retryagent.policy.Policy resolve(
              String method, String host, int port, String path) {
            paths.add(path);
            return p;
          }

          @Override
          public boolean readsPath() {
            return false;
          }
        };
    byPath.reconfigure(dev.retryagent.policy.Mode.ENFORCE, pathless);
    byPath.newCall(request);
    assertThat(request.asked).as("a reconfigured resolver is asked again").hasValue(1);
    assertThat(paths).containsExactly("/v1/things", null);
  }

  @Test
  void aHostWhoseBreakerWasDroppedGetsTheRegistrysNewOne() {
    TestPolicy p = TestPolicy.create();
    p.retry.maxAttempts(1);
    p.breaker.maxHosts(1);
    EngineFixture f = EngineFixture.of(p);
    call(f, "a.example", 500);
    CircuitBreaker first = f.engine.breakers().get(0);
    call(f, "b.example", 500); // drops a's breaker
    call(f, "a.example", 500); // a again: a new breaker, tracked by the registry
    assertThat(f.engine.breakers()).hasSize(1);
    CircuitBreaker second = f.engine.breakers().get(0);
    assertThat(second.key()).isEqualTo("http://a.example:80");
    assertThat(second).isNotSameAs(first);
  }

  @Test
  void aHostSeenBeforeIsMarkedUsedForTheBound() {
    TestPolicy p = TestPolicy.create();
    p.retry.maxAttempts(1);
    p.breaker.maxHosts(2);
    EngineFixture f = EngineFixture.of(p);
    call(f, "a.example", 200);
    call(f, "b.example", 200);
    call(f, "a.example", 200); // found without a lookup, still the most recent
    call(f, "c.example", 200);
    assertThat(f.engine.breakers())
        .extracting(CircuitBreaker::key)
        .containsExactly("http://a.example:80", "http://c.example:80");
  }

  @Test
  void theBreakersExceptionNamesItsBreakerAndWhenWithoutAStackTrace() {
    CircuitBreakerOpenException e =
        new CircuitBreakerOpenException("http://a.example:80", 1_700_000_000_000L, 1500);
    assertThat(e.getMessage())
        .isEqualTo(
            "retry-agent: circuit breaker for http://a.example:80 is open; it will be tried"
                + " again at 2023-11-14T22:13:20Z (in 1500 ms)");
    assertThat(e.getStackTrace()).isEmpty();
    assertThat(e.retryAt().toEpochMilli()).isEqualTo(1_700_000_000_000L);
    e.addSuppressed(new IllegalStateException("kept"));
    assertThat(e.getSuppressed()).hasSize(1);
  }
}
