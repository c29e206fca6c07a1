package dev.retryagent.fleet;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.retryagent.engine.Clock;
import dev.retryagent.internal.observe.Sanitizer;
import java.net.InetAddress;
import java.time.Duration;
import java.util.Arrays;
import java.util.Collections;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import redis.clients.jedis.exceptions.JedisDataException;

/** The gateway's own bounds, against a fake Redis whose replies the test holds and releases. */
@Timeout(60)
class RedisGatewayTest {
  private static final long MS = 1_000_000L;

  @Test
  void aCallThatWaitedForABusyConnectionHasOnlyTheRestOfCommandTimeoutForItsReply()
      throws Exception {
    TestFleet.ManualClock clock = new TestFleet.ManualClock();
    CountDownLatch firstArrived = new CountDownLatch(1);
    CountDownLatch releaseFirst = new CountDownLatch(1);
    CountDownLatch end = new CountDownLatch(1);
    AtomicInteger scripts = new AtomicInteger();
    ExecutorService pool = Executors.newSingleThreadExecutor();
    try (FakeRedis fake = new FakeRedis()) {
      fake.scriptReply =
          sha -> {
            // The first call holds the only connection until the test lets it go; the second
            // gets no reply for as long as the test runs.
            CountDownLatch wait = scripts.incrementAndGet() == 1 ? releaseFirst : end;
            firstArrived.countDown();
            TestFleet.holdUntil(wait);
            return ":1\r\n";
          };
      FleetSettings settings =
          FleetSettings.builder(fake.url())
              .maxConnections(1)
              .commandTimeout(Duration.ofSeconds(2))
              .build();
      RedisGateway gateway = new RedisGateway(settings, clock);
      try {
        Future<long[]> first = pool.submit(() -> eval(gateway));
        assertThat(firstArrived.await(10, TimeUnit.SECONDS)).isTrue();

        AtomicReference<FleetUnavailableException> failure = new AtomicReference<>();
        Thread second =
            new Thread(
                () -> {
                  try {
                    eval(gateway);
                  } catch (FleetUnavailableException e) {
                    failure.set(e);
                  }
                },
                "second");
        second.start();
        // Waiting for the only connection: 1.5 s of its 2 s pass meanwhile.
        await()
            .atMost(Duration.ofSeconds(10))
            .until(() -> second.getState() == Thread.State.TIMED_WAITING);
        clock.advance(Duration.ofMillis(1500));
        long released = System.nanoTime();
        releaseFirst.countDown();
        second.join(10_000);
        long secondWaitedAfter = System.nanoTime() - released;

        assertThat(first.get(10, TimeUnit.SECONDS)).containsExactly(1L);
        // The 0.5 s left, not another whole commandTimeout (2 s) for the reply.
        assertThat(secondWaitedAfter).isLessThan(1500 * MS);
        assertThat(failure.get()).isNotNull();
        // Cut short by the wait, not proof that Redis is down: this call only, no outage.
        assertThat(failure.get().kind()).isEqualTo(FleetUnavailableException.Kind.BUSY);
      } finally {
        end.countDown();
        releaseFirst.countDown();
        gateway.close();
      }
    } finally {
      pool.shutdownNow();
    }
  }

  /** Redis answers AUTH, CLIENT SETNAME and SELECT {@code each} later, by the fleet's clock. */
  private static void slowSetUp(FakeRedis fake, TestFleet.ManualClock clock, Duration each) {
    fake.onCommand =
        command -> {
          String name = command.get(0).toUpperCase(java.util.Locale.ROOT);
          if (name.equals("AUTH") || name.equals("CLIENT") || name.equals("SELECT")) {
            clock.advance(each);
          }
        };
  }

  /**
   * The fake's URL with a password and database 2 (a set-up of three round trips), connectTimeout 1
   * s, commandTimeout 2 s.
   */
  private static FleetSettings withPasswordAndDatabase(FakeRedis fake) {
    return FleetSettings.builder(fake.url().replace("redis://", "redis://:s3cret@") + "/2")
        .connectTimeout(Duration.ofSeconds(1))
        .commandTimeout(Duration.ofSeconds(2))
        .build();
  }

  @Test
  void aNewConnectionSpeaksResp2AndSendsNoHelloBeforeItsAuth() throws Exception {
    try (FakeRedis fake = new FakeRedis()) {
      // A Redis before 6 (or a proxy) answers HELLO with an error; one with ACLs refuses it before
      // AUTH. The gateway sends AUTH, CLIENT SETNAME and SELECT itself (open), in RESP2.
      fake.otherReply =
          command ->
              command.get(0).equalsIgnoreCase("HELLO") ? "-ERR unknown command 'HELLO'\r\n" : null;
      RedisGateway gateway = new RedisGateway(withPasswordAndDatabase(fake), Clock.SYSTEM);
      try {
        // Negotiation off in the gateway's own settings: Jedis 8.0's Jedis turns it off itself,
        // with a warning and a copy of the settings per connection; a later client (its
        // RedisClient does) would send HELLO 3 before the AUTH the gateway sends.
        assertThat(gateway.config.isAutoNegotiateProtocol()).isFalse();
        assertThat(gateway.config.getRedisProtocol()).isNull();
        assertThat(eval(gateway)).containsExactly(1L);
        assertThat(fake.received).doesNotContain("HELLO").startsWith("AUTH");
      } finally {
        gateway.close();
      }
    }
  }

  @Test
  void aConnectionAnsweredReadOnlyIsClosedNotPooled() throws Exception {
    try (FakeRedis fake = new FakeRedis()) {
      // A failover behind one address left the connection on a replica: only a new connection
      // reaches the new primary, so the next call must not take this one from the pool again.
      fake.scriptReply = sha -> "-READONLY You can't write against a read only replica.\r\n";
      RedisGateway gateway = new RedisGateway(withPasswordAndDatabase(fake), Clock.SYSTEM);
      try {
        assertThatThrownBy(() -> eval(gateway))
            .isInstanceOfSatisfying(
                FleetUnavailableException.class,
                e -> assertThat(e.kind()).isEqualTo(FleetUnavailableException.Kind.UNREACHABLE));
        fake.scriptReply = sha -> ":1\r\n";
        assertThat(eval(gateway)).containsExactly(1L);
        // One AUTH per connection set up: the second call had a new one.
        assertThat(fake.received.stream().filter("AUTH"::equals).count()).isEqualTo(2);
      } finally {
        gateway.close();
      }
    }
  }

  @Test
  void theRoundTripsThatSetUpANewConnectionShareTheConnectTimeout() throws Exception {
    TestFleet.ManualClock clock = new TestFleet.ManualClock();
    try (FakeRedis fake = new FakeRedis()) {
      // A slow Redis: AUTH, CLIENT SETNAME and SELECT each answered after 0.6 of connectTimeout
      // (by the fleet's clock), each well within commandTimeout.
      slowSetUp(fake, clock, Duration.ofMillis(600));
      FleetSettings settings = withPasswordAndDatabase(fake);
      RedisGateway gateway = new RedisGateway(settings, clock);
      try {
        FleetUnavailableException failure = null;
        try {
          eval(gateway);
        } catch (FleetUnavailableException e) {
          failure = e;
        }
        assertThat(fake.received).contains("AUTH");
        // The set-up spent the whole connectTimeout: the call decides locally rather than wait on
        // (1.8 s of set-up, then up to 2 s for the reply, is past commandTimeout + connectTimeout).
        assertThat(fake.received).doesNotContain("EVALSHA", "EVAL");
        assertThat(failure).isNotNull();
        // No connection within connectTimeout: as a connect that times out, an outage.
        assertThat(failure.kind()).isEqualTo(FleetUnavailableException.Kind.TIMEOUT);
        assertThat(failure.getMessage()).doesNotContain("s3cret");
      } finally {
        gateway.close();
      }
    }
  }

  @Test
  void aSetUpWithinConnectTimeoutLeavesTheReplyTheWholeCommandTimeout() throws Exception {
    TestFleet.ManualClock clock = new TestFleet.ManualClock();
    try (FakeRedis fake = new FakeRedis()) {
      slowSetUp(fake, clock, Duration.ofMillis(300));
      FleetSettings settings = withPasswordAndDatabase(fake);
      RedisGateway gateway = new RedisGateway(settings, clock);
      try {
        assertThat(eval(gateway)).containsExactly(1L);
        assertThat(fake.received).containsExactly("AUTH", "CLIENT", "SELECT", "EVALSHA");
      } finally {
        gateway.close();
      }
    }
  }

  @Test
  void aRedisThatAcceptsAndThenHangsIsAnOutageWhenTheSetUpHadTheWholeCommandTimeout()
      throws Exception {
    CountDownLatch end = new CountDownLatch(1);
    try (FakeRedis fake = new FakeRedis()) {
      fake.onCommand =
          command -> {
            TestFleet.holdUntil(end);
          };
      FleetSettings settings =
          FleetSettings.builder(fake.url().replace("redis://", "redis://:s3cret@"))
              .commandTimeout(Duration.ofMillis(300))
              .build();
      RedisGateway gateway = new RedisGateway(settings, new TestFleet.ManualClock());
      try {
        FleetUnavailableException failure = null;
        try {
          eval(gateway);
        } catch (FleetUnavailableException e) {
          failure = e;
        }
        assertThat(failure).isNotNull();
        assertThat(failure.kind()).isEqualTo(FleetUnavailableException.Kind.TIMEOUT);
      } finally {
        end.countDown();
        gateway.close();
      }
    }
  }

  @Test
  void aReplyTheClientCannotReadWhileSettingUpAConnectionIsAnOutageNeverTheCallsError()
      throws Exception {
    try (FakeRedis fake = new FakeRedis()) {
      // A reply no Redis gives CLIENT SETNAME (a proxy's, say): a string of 2 GiB, which the
      // client cannot even allocate (OutOfMemoryError), read in the application's call.
      fake.otherReply =
          command -> command.get(0).equalsIgnoreCase("CLIENT") ? "$2147483647\r\n" : null;
      RedisGateway gateway =
          new RedisGateway(FleetSettings.builder(fake.url()).build(), new TestFleet.ManualClock());
      try {
        Throwable failure = null;
        try {
          eval(gateway);
        } catch (Throwable e) {
          failure = e;
        }
        assertThat(failure).isInstanceOf(FleetUnavailableException.class);
        assertThat(((FleetUnavailableException) failure).kind())
            .isEqualTo(FleetUnavailableException.Kind.UNREACHABLE);
        // The slot went back: the next call waits for no connection.
        fake.otherReply = command -> null;
        assertThat(eval(gateway)).containsExactly(1L);
      } finally {
        gateway.close();
      }
    }
  }

  @Test
  void theWarmUpNeverOpensMoreThanMaxConnectionsWithCallsInFlight() throws Exception {
    CountDownLatch arrived = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    ExecutorService pool = Executors.newSingleThreadExecutor();
    try (FakeRedis fake = new FakeRedis()) {
      fake.scriptReply =
          sha -> {
            // A call from before an outage, still waiting for its reply when Redis is back.
            arrived.countDown();
            TestFleet.holdUntil(release);
            return ":1\r\n";
          };
      FleetSettings settings =
          FleetSettings.builder(fake.url())
              .maxConnections(2)
              .commandTimeout(Duration.ofSeconds(10))
              .build();
      RedisGateway gateway = new RedisGateway(settings, new TestFleet.ManualClock());
      try {
        Future<long[]> inFlight = pool.submit(() -> eval(gateway));
        assertThat(arrived.await(10, TimeUnit.SECONDS)).isTrue();

        gateway.warmUp(FleetConnection.WARM_CONNECTIONS);

        // Each connection sends CLIENT SETNAME once: the one in flight and one warm, not three.
        assertThat(fake.received.stream().filter("CLIENT"::equals).count()).isEqualTo(2);
        release.countDown();
        assertThat(inFlight.get(10, TimeUnit.SECONDS)).containsExactly(1L);
      } finally {
        release.countDown();
        gateway.close();
      }
    } finally {
      pool.shutdownNow();
    }
  }

  @Test
  void expireEndsARoundTripUnderWayOnAConnectionOfTheConnectedGateway() throws Exception {
    CountDownLatch held = new CountDownLatch(1);
    CountDownLatch release = new CountDownLatch(1);
    AtomicBoolean silent = new AtomicBoolean();
    ExecutorService pool = Executors.newSingleThreadExecutor();
    try (FakeRedis fake = new FakeRedis()) {
      fake.onCommand =
          command -> {
            if (silent.get()) {
              held.countDown();
              TestFleet.holdUntil(release);
            }
          };
      FleetSettings settings =
          FleetSettings.builder(fake.url())
              .connectTimeout(Duration.ofSeconds(60))
              .commandTimeout(Duration.ofSeconds(60))
              .build();
      RedisGateway gateway = new RedisGateway(settings, new TestFleet.ManualClock());
      // Connected, as while the fleet is up: abort() leaves the callers' connections alone.
      gateway.ping();
      gateway.connected();
      silent.set(true);
      Future<long[]> write = pool.submit(() -> eval(gateway));
      assertThat(held.await(30, TimeUnit.SECONDS)).isTrue();

      gateway.expire();

      // Not a whole commandTimeout (60 s) later: at once, as a connection that broke.
      assertThatThrownBy(() -> write.get(10, TimeUnit.SECONDS))
          .hasCauseInstanceOf(FleetUnavailableException.class);
      // And no connection opens after it: a step that would is refused at once.
      assertThatThrownBy(() -> eval(gateway)).isInstanceOf(FleetUnavailableException.class);
    } finally {
      release.countDown();
      pool.shutdownNow();
    }
  }

  @Test
  void anApplicationsCallThatOpensAConnectionNeverWaitsForTheNamesLookUp() throws Exception {
    CountDownLatch release = new CountDownLatch(1);
    AtomicBoolean slow = new AtomicBoolean();
    ExecutorService pool = Executors.newSingleThreadExecutor();
    try (FakeRedis fake = new FakeRedis()) {
      RedisGateway.Resolver resolver =
          host -> {
            if (slow.get()) {
              // A name server that does not answer: the system's resolver waits seconds per try.
              TestFleet.holdUntil(release);
            }
            return InetAddress.getAllByName(host);
          };
      FleetSettings settings =
          FleetSettings.builder(fake.url())
              .connectTimeout(Duration.ofSeconds(1))
              .commandTimeout(Duration.ofSeconds(1))
              .build();
      RedisGateway gateway = new RedisGateway(settings, new TestFleet.ManualClock(), resolver);
      try {
        // The fleet's thread connects (its look-up, which no call waits for), then drops its
        // connections (after an outage, say): the next call opens one.
        gateway.ping();
        gateway.dropIdle();
        slow.set(true);

        Future<long[]> call = pool.submit(() -> eval(gateway));

        // Not held for the look-up (it has no timeout): within commandTimeout + connectTimeout.
        assertThat(call.get(10, TimeUnit.SECONDS)).containsExactly(1L);
      } finally {
        release.countDown();
        gateway.close();
      }
    } finally {
      pool.shutdownNow();
    }
  }

  @Test
  void aCallWhoseDeadlineComesBeforeAConnectCouldEndOpensNone() throws Exception {
    try (FakeRedis fake = new FakeRedis()) {
      FleetSettings settings =
          FleetSettings.builder(fake.url())
              .connectTimeout(Duration.ofSeconds(1))
              .commandTimeout(Duration.ofSeconds(2))
              .build();
      RedisGateway gateway = new RedisGateway(settings, new TestFleet.ManualClock());
      try {
        gateway.ping(); // the fleet's thread has connected (and looked the name up) first
        gateway.dropIdle();
        int before = fake.received.size();

        // 1.5 s left: 1 s to connect and 2 s for the reply would not fit.
        FleetUnavailableException e =
            org.junit.jupiter.api.Assertions.assertThrows(
                FleetUnavailableException.class,
                () ->
                    gateway.eval(
                        Scripts.HEARTBEAT,
                        Collections.singletonList("k"),
                        Arrays.asList("id", "600", "1"),
                        1_500 * MS));

        assertThat(e.kind()).isEqualTo(FleetUnavailableException.Kind.BUSY);
        assertThat(fake.received.size()).isEqualTo(before);
        // With the time for both, it opens one.
        assertThat(
                gateway.eval(
                    Scripts.HEARTBEAT,
                    Collections.singletonList("k"),
                    Arrays.asList("id", "600", "1"),
                    3_000 * MS))
            .containsExactly(1L);
      } finally {
        gateway.close();
      }
    }
  }

  @Test
  void anErrorThatQuotesThePasswordNeverKeepsAnyOfItThoughItIsCutShort() throws Exception {
    String password = "s3cret-0123456789";
    try (FakeRedis fake = new FakeRedis()) {
      // A proxy's error that quotes the password where the sanitiser cuts a message (300 chars):
      // only its first part would be left, which no longer matched the whole password.
      String pad = "x".repeat(Sanitizer.MAX_MESSAGE_CHARS - "ERR ".length() - 6);
      fake.scriptReply = sha -> "-ERR " + pad + password + "\r\n";
      FleetSettings settings =
          FleetSettings.builder(fake.url().replace("redis://", "redis://:" + password + "@"))
              .build();
      RedisGateway gateway = new RedisGateway(settings, new TestFleet.ManualClock());
      try {
        gateway.ping();
        FleetUnavailableException e =
            org.junit.jupiter.api.Assertions.assertThrows(
                FleetUnavailableException.class, () -> eval(gateway));

        assertThat(e.kind()).isEqualTo(FleetUnavailableException.Kind.ERROR);
        assertThat(e.getMessage()).contains("ERR xxx").doesNotContain("s3cret");
      } finally {
        gateway.close();
      }
    }
  }

  /**
   * A server that trickles its reply, each byte well within a read's timeout: the socket's timeout
   * bounds each read, and the call waited for the whole reply, however long it took (here a bulk of
   * 100000 bytes, 20 ms apart: half an hour). It ends by commandTimeout, a timeout.
   */
  @Test
  void aReplyTrickledAByteAtATimeEndsByTheCommandTimeoutNotByItsLastByte() throws Exception {
    ExecutorService pool = Executors.newSingleThreadExecutor();
    try (FakeRedis fake = new FakeRedis()) {
      fake.scriptReply = sha -> "$100000\r\n" + "x".repeat(100_000) + "\r\n";
      fake.trickleMillis = 20;
      FleetSettings settings =
          FleetSettings.builder(fake.url()).commandTimeout(Duration.ofMillis(500)).build();
      RedisGateway gateway = new RedisGateway(settings, new TestFleet.ManualClock());
      try {
        Future<FleetUnavailableException> call =
            pool.submit(
                () -> {
                  try {
                    eval(gateway);
                    return null;
                  } catch (FleetUnavailableException e) {
                    return e;
                  }
                });
        // Generous: it ends half a second after it asked, where it went on for half an hour.
        FleetUnavailableException failure = call.get(30, TimeUnit.SECONDS);
        assertThat(failure).isNotNull();
        assertThat(failure.kind()).isEqualTo(FleetUnavailableException.Kind.TIMEOUT);
      } finally {
        gateway.expire();
      }
    } finally {
      pool.shutdownNow();
    }
  }

  @Test
  void anErrorThatRefusesEveryScriptIsTheFleetsAndOneOfARoutesKeysIsThatRoutes() {
    // Whatever the keys: the fleet is not shared while Redis answers these.
    for (String refused :
        Arrays.asList(
            "ERR unknown command 'EVALSHA', with args beginning with: 'abc' ",
            "MOVED 3999 127.0.0.1:7001",
            "CROSSSLOT Keys in request don't hash to the same slot",
            "OOM command not allowed when used memory > 'maxmemory'.",
            // Redis 6.2 wraps what a script's call was answered.
            "ERR Error running script (call to f_1): @user_script:9: @user_script: 9:"
                + " -OOM command not allowed when used memory > 'maxmemory'.",
            "MISCONF Redis is configured to save RDB snapshots, but it's currently unable to persist",
            "LOADING Redis is loading the dataset in memory")) {
      assertThat(RedisGateway.kindOf(new JedisDataException(refused)))
          .as(refused)
          .isEqualTo(FleetUnavailableException.Kind.REFUSED);
    }
    // One route's keys (or the live count's): the other routes are shared.
    for (String routes :
        Arrays.asList(
            "WRONGTYPE Operation against a key holding the wrong kind of value",
            "ERR Error running script (call to f_1): @user_script:9: WRONGTYPE Operation against a"
                + " key holding the wrong kind of value",
            "NOPERM No permissions to access a key")) {
      assertThat(RedisGateway.kindOf(new JedisDataException(routes)))
          .as(routes)
          .isEqualTo(FleetUnavailableException.Kind.ERROR);
    }
  }

  private static long[] eval(RedisGateway gateway) throws FleetUnavailableException {
    return gateway.eval(
        Scripts.HEARTBEAT, Collections.singletonList("k"), Arrays.asList("id", "600", "1"));
  }
}
