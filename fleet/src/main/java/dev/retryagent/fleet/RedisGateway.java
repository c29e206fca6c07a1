package dev.retryagent.fleet;

import dev.retryagent.config.RedisUrl;
import dev.retryagent.engine.Clock;
import dev.retryagent.fleet.FleetUnavailableException.Kind;
import dev.retryagent.internal.observe.Sanitizer;
import java.io.FilterInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketException;
import java.net.SocketTimeoutException;
import java.net.UnknownHostException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.Iterator;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedDeque;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.LongAdder;
import javax.net.ssl.SSLParameters;
import javax.net.ssl.SSLSocket;
import javax.net.ssl.SSLSocketFactory;
import redis.clients.jedis.ClientSetInfoConfig;
import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.JedisClientConfig;
import redis.clients.jedis.JedisSocketFactory;
import redis.clients.jedis.SSLSocketWrapper;
import redis.clients.jedis.exceptions.JedisAccessControlException;
import redis.clients.jedis.exceptions.JedisConnectionException;
import redis.clients.jedis.exceptions.JedisDataException;
import redis.clients.jedis.exceptions.JedisNoScriptException;

/**
 * The only class that knows the Redis client (Jedis): a small bounded set of blocking connections,
 * each command bounded by the command timeout, each connect by the connect timeout. Swapping the
 * client means rewriting this class alone.
 *
 * <p>Thread-safe. Every failure comes out as a {@link FleetUnavailableException} whose message
 * holds neither the password nor the URL's user-info.
 */
final class RedisGateway implements AutoCloseable {
  static final String CLIENT_NAME = "retry-agent-fleet";

  /** The set-up's deadline on the fleet's own thread, which no application call waits for. */
  private static final long UNBOUNDED = Long.MIN_VALUE;

  private final Clock clock;
  private final Resolver resolver;
  private final RedisUrl url;
  private final HostAndPort address;

  /** The settings every connection is made with (package-private: RedisGatewayTest reads them). */
  final JedisClientConfig config;

  private final JedisSocketFactory lookUpFactory;
  private final JedisSocketFactory lookedUpFactory;
  private final long commandTimeoutNanos;
  private final long connectTimeoutNanos;
  private final int commandTimeoutMillis;
  private final int maxConnections;
  private final Semaphore slots;
  private final ConcurrentLinkedDeque<Jedis> idle = new ConcurrentLinkedDeque<>();
  private final LongAdder scriptReloads = new LongAdder();
  private volatile boolean closed;

  /**
   * The sockets the fleet's thread opened (its connect, its warm-up) since its last connect
   * succeeded: {@link #abort} closes them, so that a close while it connects ends its wait for a
   * slow or silent Redis at once, not a connect and a command timeout per step later.
   */
  private final Set<Socket> connecting = ConcurrentHashMap.newKeySet();

  /**
   * Every socket opened and not yet closed (closed ones go at the next open): {@link #expire}
   * closes them, whoever waits on them.
   */
  private final Set<Socket> sockets = ConcurrentHashMap.newKeySet();

  private volatile boolean expired;

  /** Set when a call that must not block found no idle connection ({@link #openWanted}). */
  private volatile boolean connectionWanted;

  /** The host's addresses, as the fleet's thread last looked them up; null before it has. */
  private volatile InetAddress[] addresses;

  RedisGateway(FleetSettings settings, Clock clock) {
    this(settings, clock, new SystemResolver());
  }

  /**
   * @param resolver how the host name becomes addresses (a test's, to make the look-up slow)
   */
  RedisGateway(FleetSettings settings, Clock clock, Resolver resolver) {
    this.clock = clock;
    this.resolver = resolver;
    this.url = settings.redis();
    this.address = new HostAndPort(url.host(), url.port());
    this.commandTimeoutNanos = settings.commandTimeout().toNanos();
    this.connectTimeoutNanos = settings.connectTimeout().toNanos();
    this.commandTimeoutMillis = (int) settings.commandTimeout().toMillis();
    this.maxConnections = settings.maxConnections();
    this.slots = new Semaphore(maxConnections);
    DefaultJedisClientConfig.Builder b =
        DefaultJedisClientConfig.builder()
            .connectionTimeoutMillis((int) settings.connectTimeout().toMillis())
            .socketTimeoutMillis(commandTimeoutMillis)
            .ssl(url.tls())
            // CLIENT SETINFO costs two round trips per connection, and Redis before 7.2 refuses it.
            .clientSetInfoConfig(ClientSetInfoConfig.DISABLED)
            // RESP2 without HELLO: negotiation sends HELLO 3 first, before the AUTH open sends
            // (refused by a Redis that needs AUTH first, unknown to one before 6). Jedis 8.0's
            // Jedis turns it off itself, with a warning and a copy of these settings per
            // connection; a later client might not. Not resp2(): that sends HELLO 2.
            .autoNegotiateProtocol(false);
    // No password, user, client name or database here: Jedis would send AUTH, CLIENT SETNAME and
    // SELECT while connecting, each with a whole commandTimeout; open sends them within
    // connectTimeout.
    this.config = b.build();
    this.lookUpFactory = new BoundedSocketFactory(this, true);
    this.lookedUpFactory = new BoundedSocketFactory(this, false);
  }

  /**
   * Runs {@code script}: {@code EVALSHA} by its SHA-1, and {@code EVAL} (which caches it again)
   * when Redis answers {@code NOSCRIPT} because its script cache was flushed or it restarted.
   *
   * @return the script's array reply (or single integer) as longs
   */
  long[] eval(Scripts.Script script, List<String> keys, List<String> args)
      throws FleetUnavailableException {
    return eval(script, keys, args, Long.MAX_VALUE);
  }

  /**
   * {@link #eval(Scripts.Script, List, List)} for an application's call with {@code budgetNanos}
   * left of its deadline: the round trip ends within it (a call never waits for Redis past the time
   * it would have failed without the agent), its wait for a connection and the connect included.
   * Cut short by the budget, it fails as {@link Kind#BUSY}: the call's own, no outage.
   */
  long[] eval(Scripts.Script script, List<String> keys, List<String> args, long budgetNanos)
      throws FleetUnavailableException {
    return eval(script, keys, args, budgetNanos, true);
  }

  /**
   * {@link #eval(Scripts.Script, List, List, long)}; {@code mayBlock} false for a call on a thread
   * of many calls' work ({@link dev.retryagent.engine.SharedThreads}): it takes an idle connection
   * or none, never waiting for one another call holds nor opening one (a connect is up to {@code
   * connectTimeout} more), and fails as {@link Kind#BUSY} without one. The fleet's thread opens the
   * connection it lacked ({@link #openWanted}).
   */
  long[] eval(
      Scripts.Script script,
      List<String> keys,
      List<String> args,
      long budgetNanos,
      boolean mayBlock)
      throws FleetUnavailableException {
    Jedis jedis = mayBlock ? borrow(true, budgetNanos) : borrowIdle(budgetNanos);
    boolean unknownState = false;
    try {
      Object reply;
      long sent = clock.nanoTime();
      try {
        reply = jedis.evalsha(script.sha1, keys, args);
      } catch (JedisNoScriptException e) {
        scriptReloads.increment();
        // The second round trip has what the first left of the budget.
        int budget = jedis.getConnection().getSoTimeout();
        long left = budget * 1_000_000L - (clock.nanoTime() - sent);
        if (left <= 0) {
          throw new FleetUnavailableException(
              Kind.BUSY, "no time left of commandTimeout to send the script again");
        }
        jedis.getConnection().setSoTimeout(ceilMillis(left));
        reply = jedis.eval(script.text, keys, args);
      }
      long[] values = longs(reply);
      if (values.length < script.replyLength) {
        // Read past its end, it would fail the application's call (or end the fleet's thread).
        throw new FleetUnavailableException(
            Kind.ERROR, "unexpected script reply of " + values.length + " values");
      }
      return values;
    } catch (RuntimeException | LinkageError e) {
      FleetUnavailableException failure = translate(e, jedis);
      // An error that says the connection is down though the socket is fine (READONLY: a
      // failover left it on a replica) must not go back to the pool, or the next call takes it
      // again: only a new connection reaches the new primary.
      unknownState = failure.kind().connectionDown;
      throw failure;
    } catch (Error e) {
      // A reply no Redis gives (a proxy's 2 GiB length: OutOfMemoryError, nothing allocated), read
      // in the application's call: Redis must never fail the call. The connection is left in the
      // middle of a reply, so it goes, and so does the fleet until it reconnects (an outage).
      unknownState = true;
      throw new FleetUnavailableException(
          Kind.UNREACHABLE, "unexpected " + e.getClass().getName() + " reading a reply");
    } finally {
      if (unknownState) {
        closeQuietly(jedis);
        slots.release();
      } else {
        giveBack(jedis);
      }
    }
  }

  /** One {@code PING}: opens a connection when none is idle, so it also checks the credentials. */
  void ping() throws FleetUnavailableException {
    // Only the fleet's thread pings (to connect): the first set-up of a JVM, its classes loading,
    // is not held to connectTimeout.
    Jedis jedis = borrow(false, Long.MAX_VALUE);
    boolean down = false;
    try {
      jedis.ping();
    } catch (RuntimeException | LinkageError e) {
      FleetUnavailableException failure = translate(e, jedis);
      down = failure.kind().connectionDown; // as eval's: never pooled again
      throw failure;
    } finally {
      if (down) {
        closeQuietly(jedis);
        slots.release();
      } else {
        giveBack(jedis);
      }
    }
  }

  /**
   * Opens connections until {@code count} are idle, so that callers after an outage find one ready
   * rather than paying the connect themselves. Best effort.
   */
  void warmUp(int count) {
    warmUp(count, false);
  }

  /**
   * {@link #warmUp(int)}; {@code bounded}: one connection at most, opened within {@code
   * connectTimeout} in all, its set-up included, on the addresses last looked up (the fleet's
   * thread while up, between its heartbeats).
   */
  private void warmUp(int count, boolean bounded) {
    int target = Math.min(count, maxConnections);
    while (!closed && idle.size() < target) {
      // Within maxConnections: each opened with a slot held, and only while the connections in use
      // (calls from before an outage may still hold theirs) and the idle ones leave room for it.
      if (!slots.tryAcquire()) {
        return;
      }
      try {
        // The others' slots are connections in use: with this one, in use + idle stays <= max.
        if (idle.size() > slots.availablePermits()) {
          return;
        }
        idle.offerLast(open(bounded));
        if (bounded) {
          // One, for the call that wanted it: a busy pool borrows each new idle connection at
          // once, so "until idle reaches the target" opened up to maxConnections - 1 of them, each
          // within connectTimeout, and held the heartbeat that long (r17).
          return;
        }
      } catch (FleetUnavailableException e) {
        return;
      } finally {
        slots.release();
      }
    }
  }

  /**
   * Puts the idle connection used longest ago first, where the next round trip takes it: for the
   * heartbeat, so that each idle connection sees a command every few beats. Connections go back
   * first and are taken from there (the last used, most likely alive), so one the calls do not need
   * idled until Redis's client {@code timeout} (or a proxy's, a load balancer's idle cut) closed
   * it, and the calls that next took it found it dead: an outage that was none.
   */
  void rotateIdle() {
    Jedis oldest = idle.pollLast();
    if (oldest != null) {
      idle.offerFirst(oldest);
    }
  }

  /** Closes the idle connections: after an outage they may be dead, or paused mid-reply. */
  void dropIdle() {
    Jedis jedis;
    while ((jedis = idle.pollFirst()) != null) {
      closeQuietly(jedis);
    }
  }

  /** How often Redis had lost a script (NOSCRIPT) and it was sent again. */
  long scriptReloads() {
    return scriptReloads.sum();
  }

  @Override
  public void close() {
    closed = true;
    dropIdle();
  }

  /**
   * {@link #close}, and the sockets the fleet's thread is connecting or setting up are closed under
   * it: its connect fails at once (a connect, a TLS handshake or a reply it waits for), and any it
   * would open next is closed as it is made. For a close while not up, where nothing is left to
   * write.
   */
  void abort() {
    closed = true;
    for (Socket s : connecting) {
      closeSocket(s);
    }
    dropIdle();
  }

  /**
   * {@link #abort}, and every socket still open is closed under whoever waits on it (the fleet's
   * last writes, a call from before the close): for a close whose wait ran out. A socket opened
   * after is closed as it is made. Calls fail over to their local share, as in an outage.
   */
  void expire() {
    expired = true;
    for (Socket s : sockets) {
      closeSocket(s);
    }
    abort();
  }

  /** Keeps {@code s} for {@link #expire}; closed at once when it already ran. */
  private void register(Socket s) {
    // A loop, not removeIf: no lambda classes in the fleet's code (see track).
    for (Iterator<Socket> i = sockets.iterator(); i.hasNext(); ) {
      if (i.next().isClosed()) {
        i.remove();
      }
    }
    sockets.add(s);
    if (expired) {
      // expire() ran before the add: it may not have seen this one.
      closeSocket(s);
    }
  }

  /** The fleet's thread is connected: the sockets it opened are the callers' connections now. */
  void connected() {
    connecting.clear();
  }

  /** Tracks a socket of the fleet's thread; closed at once when the gateway was aborted. */
  private void track(Socket s) {
    // A loop, not removeIf with a method reference: the fleet's code spins no lambda classes (its
    // thread may run before the application's main).
    for (Iterator<Socket> i = connecting.iterator(); i.hasNext(); ) {
      if (i.next().isClosed()) {
        i.remove();
      }
    }
    connecting.add(s);
    if (closed) {
      // abort() ran before the add: it may not have seen this one.
      closeSocket(s);
    }
  }

  private static void closeSocket(Socket s) {
    try {
      s.close();
    } catch (IOException ignored) {
      // closed to end a wait: nothing was owed on it
    }
  }

  /**
   * For a call that must not block ({@link #eval(Scripts.Script, List, List, long, boolean)}): an
   * idle connection with a free slot, at once, its socket timeout the command timeout within {@code
   * budgetNanos}; else {@link Kind#BUSY}, and a connection is wanted ({@link #openWanted}).
   */
  private Jedis borrowIdle(long budgetNanos) throws FleetUnavailableException {
    if (closed) {
      throw new FleetUnavailableException(Kind.UNREACHABLE, "the fleet connection is closed");
    }
    long limit = Math.min(commandTimeoutNanos, budgetNanos);
    if (limit <= 0) {
      throw new FleetUnavailableException(Kind.BUSY, "no time left of the call's deadline");
    }
    if (!slots.tryAcquire()) {
      throw new FleetUnavailableException(
          Kind.BUSY, "all " + maxConnections + " connections to Redis busy");
    }
    Jedis jedis = idle.pollFirst();
    if (jedis == null) {
      slots.release();
      connectionWanted = true;
      throw new FleetUnavailableException(
          Kind.BUSY, "no connection to Redis idle, and none is opened on a shared thread");
    }
    try {
      jedis.getConnection().setSoTimeout(Math.min(commandTimeoutMillis, ceilMillis(limit)));
    } catch (RuntimeException e) {
      closeQuietly(jedis);
      slots.release();
      throw translate(e);
    }
    return jedis;
  }

  /** Whether a call that must not block found no idle connection since {@link #openWanted}. */
  boolean connectionWanted() {
    return connectionWanted;
  }

  /**
   * On the fleet's thread: opens one more idle connection when a call that must not block found
   * none ({@link #borrowIdle}), within {@code maxConnections}. Best effort.
   */
  void openWanted() {
    if (!connectionWanted) {
      return;
    }
    connectionWanted = false;
    // Within connectTimeout: unbounded, its connect and each step of its set-up (AUTH, CLIENT
    // SETNAME, SELECT) had a whole timeout, seconds in all against a slow Redis, and the heartbeat
    // waited for it (the live count expired meanwhile).
    warmUp(idle.size() + 1, true);
    // Its sockets are the callers' connections: a close while not up must not abort them as a
    // connect's.
    connected();
  }

  /**
   * A connection whose socket timeout is what the wait for it left of the command timeout: a call
   * waits for Redis at most {@code commandTimeout} in all (docs/fleet.md), plus the connect when it
   * opens one, never a whole timeout for a connection and another for the reply.
   */
  private Jedis borrow(boolean bounded, long budgetNanos) throws FleetUnavailableException {
    if (closed) {
      throw new FleetUnavailableException(Kind.UNREACHABLE, "the fleet connection is closed");
    }
    long limit = Math.min(commandTimeoutNanos, budgetNanos);
    if (limit <= 0) {
      throw new FleetUnavailableException(Kind.BUSY, "no time left of the call's deadline");
    }
    long start = clock.nanoTime();
    boolean got;
    try {
      got = slots.tryAcquire(limit, TimeUnit.NANOSECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new FleetUnavailableException(Kind.BUSY, "interrupted while waiting for Redis");
    }
    if (!got) {
      throw new FleetUnavailableException(
          Kind.BUSY, "all " + maxConnections + " connections to Redis busy");
    }
    long waited = clock.nanoTime() - start;
    long left = limit - waited;
    if (left <= 0) {
      slots.release();
      throw new FleetUnavailableException(
          Kind.BUSY, "all " + maxConnections + " connections to Redis busy");
    }
    Jedis jedis = idle.pollFirst();
    if (jedis == null) {
      if (budgetNanos - waited - left < connectTimeoutNanos) {
        // A connect may take all of connectTimeout: the call's deadline would pass first.
        slots.release();
        throw new FleetUnavailableException(
            Kind.BUSY, "no connection to Redis idle, and no time left to open one");
      }
      try {
        // Set up within connectTimeout: the reply then has what the wait for a slot left.
        jedis = open(bounded);
      } catch (FleetUnavailableException | RuntimeException | Error e) {
        slots.release();
        throw e;
      }
    }
    try {
      jedis.getConnection().setSoTimeout(Math.min(commandTimeoutMillis, ceilMillis(left)));
    } catch (RuntimeException e) {
      closeQuietly(jedis);
      slots.release();
      throw translate(e);
    }
    return jedis;
  }

  /**
   * AUTH, CLIENT SETNAME and SELECT (and the TLS handshake, at the first) on a new connection, all
   * of them before {@code deadline} (by the fleet's clock): each round trip has what the ones
   * before it left, not a whole timeout each. Running out is a connection that timed out, as a
   * connect that does: an outage ({@link Kind#TIMEOUT}).
   */
  private void setUp(Jedis jedis, long deadline) throws FleetUnavailableException {
    try {
      if (url.password() != null) {
        stepBefore(jedis, deadline);
        if (url.user() != null) {
          jedis.auth(url.user(), url.password());
        } else {
          jedis.auth(url.password());
        }
      }
      stepBefore(jedis, deadline);
      try {
        jedis.clientSetname(CLIENT_NAME);
      } catch (JedisDataException e) {
        // Best effort, as Jedis had it: a proxy or an ACL refusing CLIENT is no reason to fail.
      }
      if (url.database() != 0) {
        stepBefore(jedis, deadline);
        jedis.select(url.database());
      }
    } catch (RuntimeException | LinkageError e) {
      throw translate(e);
    } catch (Error e) {
      // As in eval: a reply no Redis gives (a proxy's 2 GiB length), read in the application's
      // call, must not fail it. The connection (left mid-reply) goes: an outage.
      throw new FleetUnavailableException(
          Kind.UNREACHABLE, "unexpected " + e.getClass().getName() + " reading a reply");
    }
  }

  private void stepBefore(Jedis jedis, long deadline) throws FleetUnavailableException {
    if (deadline == UNBOUNDED) {
      // The fleet's thread: each round trip commandTimeout, as Jedis gives it.
      jedis.getConnection().setSoTimeout(commandTimeoutMillis);
      return;
    }
    long left = deadline - clock.nanoTime();
    if (left <= 0) {
      throw new FleetUnavailableException(
          Kind.TIMEOUT, "a new connection not set up within connectTimeout");
    }
    jedis.getConnection().setSoTimeout(ceilMillis(left));
  }

  private static int ceilMillis(long nanos) {
    return (int) Math.max(1, Math.min(Integer.MAX_VALUE, (nanos + 999_999) / 1_000_000));
  }

  private void giveBack(Jedis jedis) {
    try {
      // A connection that timed out may still receive the late reply: never reuse it.
      if (closed || jedis.isBroken()) {
        closeQuietly(jedis);
      } else {
        idle.offerFirst(jedis);
      }
    } finally {
      slots.release();
    }
  }

  /**
   * A new connection, set up: the connect, the TLS handshake, AUTH, CLIENT SETNAME and SELECT, all
   * within {@code connectTimeout} when {@code bounded} (docs/fleet.md: a call that opens a
   * connection waits at most that on top of {@code commandTimeout}). Jedis would give each round
   * trip of the set-up a whole {@code commandTimeout} of its own; so the connection is set up here,
   * not by Jedis. Unbounded on the fleet's thread (its connect, its warm-up), as before: no call
   * waits for it, and a JVM's first set-up loads the client's classes, which no timeout is about.
   */
  private Jedis open(boolean bounded) throws FleetUnavailableException {
    long deadline = bounded ? clock.nanoTime() + connectTimeoutNanos : UNBOUNDED;
    Jedis jedis;
    try {
      // Never the name's look-up in an application's call: nothing bounds it (a name server that
      // does not answer holds the system's resolver seconds per try), so the call uses the
      // addresses the fleet's thread looked up when it last opened one (its connect, after every
      // outage, and its warm-up).
      jedis = new Jedis(bounded ? lookedUpFactory : lookUpFactory, config);
      // Jedis may connect lazily; connect now, where the connect timeout is checked (setUp then
      // checks the credentials).
      jedis.getConnection().connect();
    } catch (RuntimeException | LinkageError e) {
      throw translate(e);
    }
    try {
      setUp(jedis, deadline);
    } catch (FleetUnavailableException | RuntimeException | Error e) {
      closeQuietly(jedis);
      throw e;
    }
    return jedis;
  }

  private FleetUnavailableException translate(Throwable e) {
    return translate(e, null);
  }

  /**
   * @param jedis the connection the call used, or null: a timeout that its wait for the connection
   *     cut short is this call's alone ({@link Kind#BUSY}), not proof that Redis is down
   */
  private FleetUnavailableException translate(Throwable e, Jedis jedis) {
    Kind kind = kindOf(e);
    if (kind == Kind.TIMEOUT
        && jedis != null
        && jedis.getConnection().getSoTimeout() < commandTimeoutMillis) {
      kind = Kind.BUSY;
    }
    return new FleetUnavailableException(kind, describe(rootOf(e)));
  }

  /**
   * The error's class and message, sanitised, without the password or the user. The server's own
   * words never hold the password, but a client's or a proxy's might: they are taken out of the
   * message as it was, before the sanitiser shortens it (which could cut one in two) or folds its
   * blanks (a password with two spaces in a row would no longer match).
   */
  private String describe(Throwable t) {
    String message;
    try {
      message = t.getMessage();
    } catch (RuntimeException e) {
      message = null;
    }
    if (message != null && url.password() != null) {
      message = message.replace(url.password(), "<redacted>");
    }
    if (message != null && url.user() != null) {
      message = message.replace(url.user(), "<redacted>");
    }
    String clean = Sanitizer.message(message, null);
    String name = t.getClass().getSimpleName();
    if (name.isEmpty()) {
      name = t.getClass().getName();
    }
    return clean.isEmpty() ? name : name + ": " + clean;
  }

  static Kind kindOf(Throwable e) {
    for (Throwable t = e; t != null; t = t.getCause() == t ? null : t.getCause()) {
      if (isKeyPermissionError(t)) {
        // The ACL's key patterns refuse this call's keys (one route's, or the live count's): an
        // error of this call, as a key of the wrong type is, not the credentials of every route.
        return Kind.ERROR;
      }
      if (t instanceof JedisAccessControlException || isAuthError(t)) {
        return Kind.AUTH;
      }
      if (t instanceof SocketTimeoutException) {
        return Kind.TIMEOUT;
      }
      if (isReadOnlyReplica(t)) {
        // A failover behind one address left this connection on the old primary, now a replica:
        // only new connections reach the new one, so it is an outage (reconnect), not one error.
        return Kind.UNREACHABLE;
      }
      if (refusesEveryScript(t)) {
        return Kind.REFUSED;
      }
    }
    if (e instanceof JedisConnectionException) {
      return Kind.UNREACHABLE;
    }
    return Kind.ERROR;
  }

  private static boolean isAuthError(Throwable t) {
    if (!(t instanceof JedisDataException) || t.getMessage() == null) {
      return false;
    }
    String m = t.getMessage();
    // WRONGPASS: bad user or password; NOAUTH: a password is required and none was given;
    // "ERR AUTH <password> called without any password configured": one was given, none is set.
    return m.startsWith("WRONGPASS")
        || m.startsWith("NOAUTH")
        || m.startsWith("NOPERM")
        || m.startsWith("ERR AUTH")
        || m.contains("invalid password")
        || m.contains("invalid username-password");
  }

  private static boolean isKeyPermissionError(Throwable t) {
    if (!(t instanceof JedisDataException) || t.getMessage() == null) {
      return false;
    }
    String m = t.getMessage();
    // Redis 6.2: "NOPERM this user has no permissions to access one of the keys used as
    // arguments"; 7.0: "NOPERM No permissions to access a key"; 7.2: "NOPERM User u has no
    // permissions to access the 'k' key". A command the user may not run ("... to run the 'evalsha'
    // command") refuses every route: that stays a credentials problem.
    return m.startsWith("NOPERM") && (m.contains(" key") && !m.contains(" command"));
  }

  private static boolean isReadOnlyReplica(Throwable t) {
    if (!(t instanceof JedisDataException) || t.getMessage() == null) {
      return false;
    }
    String m = t.getMessage();
    // Redis 7 answers "READONLY ..."; 6.2 wraps it: "ERR Error running script ...: -READONLY ...".
    return m.startsWith("READONLY") || m.contains("-READONLY ");
  }

  /**
   * The errors by which Redis refuses the fleet's scripts as such, whichever route's keys they
   * name: a command renamed or disabled by the operator ({@code rename-command}: "ERR unknown
   * command"), a cluster that would have the keys elsewhere (MOVED, ASK, CROSSSLOT, CLUSTERDOWN),
   * no memory for a write (OOM), writes stopped (MISCONF: snapshots failing; NOREPLICAS), a server
   * not serving yet or at all (LOADING, BUSY with another script, MASTERDOWN). The connection
   * itself works, so none is an outage; a wrong type or a key the ACL refuses is one route's
   * (ERROR).
   */
  private static final String[] REFUSING_EVERY_SCRIPT = {
    "ERR unknown command",
    "MOVED ",
    "ASK ",
    "CROSSSLOT ",
    "CLUSTERDOWN ",
    "OOM ",
    "MISCONF ",
    "NOREPLICAS ",
    "LOADING ",
    "BUSY ",
    "MASTERDOWN "
  };

  private static boolean refusesEveryScript(Throwable t) {
    if (!(t instanceof JedisDataException) || t.getMessage() == null) {
      return false;
    }
    String m = t.getMessage();
    for (String code : REFUSING_EVERY_SCRIPT) {
      // As Redis answers the command, or (6.2) wrapped in the script's error: "... -OOM ...".
      if (m.startsWith(code) || m.contains("-" + code)) {
        return true;
      }
    }
    return false;
  }

  private static Throwable rootOf(Throwable e) {
    // Jedis wraps socket errors ("Failed to connect to ..."), as a cause or, for each address a
    // name resolved to, as suppressed exceptions: the innermost says what happened.
    Throwable t = e;
    for (int depth = 0; depth < 8 && t instanceof JedisConnectionException; depth++) {
      Throwable next = t.getCause();
      if (next == null && t.getSuppressed().length > 0) {
        next = t.getSuppressed()[0];
      }
      if (next == null || next == t) {
        break;
      }
      t = next;
    }
    return t;
  }

  private static long[] longs(Object reply) throws FleetUnavailableException {
    if (reply instanceof Long) {
      return new long[] {(Long) reply};
    }
    if (reply instanceof List) {
      List<?> list = (List<?>) reply;
      long[] values = new long[list.size()];
      for (int i = 0; i < values.length; i++) {
        Object v = list.get(i);
        if (!(v instanceof Long)) {
          throw new FleetUnavailableException(Kind.ERROR, "unexpected script reply " + v);
        }
        values[i] = (Long) v;
      }
      return values;
    }
    throw new FleetUnavailableException(Kind.ERROR, "unexpected script reply " + reply);
  }

  private static void closeQuietly(Jedis jedis) {
    try {
      jedis.close();
    } catch (RuntimeException ignored) {
      // a dead connection has nothing left to release
    }
  }

  /**
   * A socket whose reads end by the deadline its last {@link #setSoTimeout} set (then + that
   * timeout), not a whole timeout per read: a server that trickles its reply, each byte within a
   * read's timeout, held a call for as long as the reply took (docs/fleet.md: an acquisition waits
   * for Redis at most {@code commandTimeout}). The gateway sets the timeout before each round trip
   * (and each step of a set-up), so that is the round trip's deadline. Under TLS too: the layered
   * TLS socket reads through this one's stream and sets its timeout here.
   */
  static final class DeadlineSocket extends Socket {
    private volatile long deadline;
    private volatile boolean bounded;
    private InputStream in; // guarded by this

    @Override
    public synchronized void setSoTimeout(int timeout) throws SocketException {
      super.setSoTimeout(timeout);
      deadline = System.nanoTime() + timeout * 1_000_000L;
      bounded = timeout > 0;
    }

    @Override
    public synchronized InputStream getInputStream() throws IOException {
      if (in == null) {
        in = new DeadlineInput(super.getInputStream(), this);
      }
      return in;
    }

    /** Before a read: its timeout is what is left until the deadline; none left, a timeout. */
    void beforeRead() throws IOException {
      if (!bounded) {
        return;
      }
      long left = deadline - System.nanoTime();
      if (left <= 0) {
        throw new SocketTimeoutException("Read timed out");
      }
      // Not this.setSoTimeout: the deadline stays the round trip's.
      super.setSoTimeout(ceilMillis(left));
    }
  }

  /** The stream of a {@link DeadlineSocket}: every read bounded by the socket's deadline. */
  private static final class DeadlineInput extends FilterInputStream {
    private final DeadlineSocket socket;

    DeadlineInput(InputStream in, DeadlineSocket socket) {
      super(in);
      this.socket = socket;
    }

    @Override
    public int read() throws IOException {
      socket.beforeRead();
      return super.read();
    }

    @Override
    public int read(byte[] b, int off, int len) throws IOException {
      socket.beforeRead();
      return super.read(b, off, len);
    }
  }

  /** How the Redis host name becomes addresses. */
  interface Resolver {
    InetAddress[] resolve(String host) throws IOException;
  }

  /** The system's resolver (and the JVM's cache of its answers). */
  private static final class SystemResolver implements Resolver {
    @Override
    public InetAddress[] resolve(String host) throws IOException {
      return InetAddress.getAllByName(host);
    }
  }

  /**
   * Jedis's own socket factory, but with one {@code connectTimeout} for all the addresses a host
   * name resolves to (several A records, a dual-stack host), each trying with what the ones before
   * it left: Jedis gives each address a whole connectTimeout, so a host of three addresses that do
   * not answer kept the application's call three times as long (docs/fleet.md: an acquisition waits
   * at most connectTimeout to open a connection). TLS as Jedis sets it up: the default factory, the
   * host name verified.
   */
  private static final class BoundedSocketFactory implements JedisSocketFactory {
    private final RedisGateway gateway;
    private final HostAndPort address;
    private final boolean lookUp;
    private final long connectTimeoutNanos;
    private final int soTimeoutMillis;
    private final boolean tls;

    /**
     * @param lookUp true on the fleet's thread: look the name up (and keep the addresses for the
     *     application's calls); false: the addresses it last looked up
     */
    BoundedSocketFactory(RedisGateway gateway, boolean lookUp) {
      this.gateway = gateway;
      this.address = gateway.address;
      this.lookUp = lookUp;
      this.connectTimeoutNanos = gateway.connectTimeoutNanos;
      this.soTimeoutMillis = gateway.commandTimeoutMillis;
      this.tls = gateway.url.tls();
    }

    private InetAddress[] addresses() throws IOException {
      if (lookUp) {
        InetAddress[] found = gateway.resolver.resolve(address.getHost());
        gateway.addresses = found;
        return found;
      }
      InetAddress[] known = gateway.addresses;
      if (known != null) {
        return known;
      }
      String host = address.getHost();
      if (host.indexOf(':') >= 0 || host.matches("[0-9]{1,3}(\\.[0-9]{1,3}){3}")) {
        // An address written as one (IPv6, IPv4): nothing to look up.
        return gateway.resolver.resolve(host);
      }
      // Not reached from FleetConnection: it is up only once its thread has connected.
      throw new UnknownHostException(host + ": not yet looked up by the fleet's thread");
    }

    @Override
    public Socket createSocket() throws JedisConnectionException {
      Socket socket = null;
      try {
        // A copy: the shuffle must not reorder the addresses other calls are reading.
        List<InetAddress> addresses = new ArrayList<>(Arrays.asList(addresses()));
        if (addresses.size() > 1) {
          Collections.shuffle(addresses); // as Jedis does: spread over the addresses
        }
        JedisConnectionException failed =
            new JedisConnectionException("Failed to connect to " + address + ".");
        // From the first connect, as Jedis counts it (an application's call has no look-up), by the
        // socket's own time, as its timeouts are: not the fleet's clock.
        long deadline = System.nanoTime() + connectTimeoutNanos;
        for (InetAddress a : addresses) {
          long left = deadline - System.nanoTime();
          if (left <= 0) {
            failed.addSuppressed(new SocketTimeoutException("Connect timed out"));
            break;
          }
          Socket s = new DeadlineSocket();
          gateway.register(s);
          if (lookUp) {
            // The fleet's thread: a close while it connects closes this under it (abort).
            gateway.track(s);
          }
          try {
            s.setReuseAddress(true);
            s.setKeepAlive(true);
            s.setTcpNoDelay(true);
            s.setSoLinger(true, 0);
            s.connect(new InetSocketAddress(a, address.getPort()), ceilMillis(left));
            socket = s;
            break;
          } catch (IOException e) {
            closeQuietly(s);
            failed.addSuppressed(e);
          }
        }
        if (socket == null) {
          throw failed;
        }
        socket.setSoTimeout(soTimeoutMillis);
        if (tls) {
          SSLSocketFactory factory = (SSLSocketFactory) SSLSocketFactory.getDefault();
          SSLSocket ssl =
              (SSLSocket) factory.createSocket(socket, address.getHost(), address.getPort(), true);
          SSLParameters parameters = new SSLParameters();
          parameters.setEndpointIdentificationAlgorithm("HTTPS");
          ssl.setSSLParameters(parameters);
          return new SSLSocketWrapper(ssl, socket);
        }
        return socket;
      } catch (JedisConnectionException e) {
        throw e;
      } catch (Exception e) {
        closeQuietly(socket);
        throw new JedisConnectionException("Failed to create socket.", e);
      }
    }

    private static void closeQuietly(Socket s) {
      if (s == null) {
        return;
      }
      try {
        s.close();
      } catch (IOException ignored) {
        // nothing was sent on it
      }
    }
  }
}
