package dev.retryagent.fleet;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;

/**
 * The Lua scripts the fleet runs in Redis, each one atomic and one round trip. fleet/README.md
 * explains them line by line. Times are microseconds of Redis's own clock ({@code TIME}), so the
 * JVMs' clocks never matter. Kept in Java strings rather than resources: the agent may load these
 * classes from the bootstrap path, where resources are not reliably found.
 *
 * <p>The keys and what they hold are the store format that every version of the agent shares: a
 * rolling upgrade runs old and new JVMs on the same keys. A script's arguments and reply may change
 * between versions (a new text is a new SHA-1, so each JVM runs its own version's scripts side by
 * side in Redis's script cache); what a key holds may not.
 */
final class Scripts {
  private Scripts() {}

  // Redis before 5 refuses writes after TIME unless the script asks for its effects to be
  // replicated instead of its text; from 5 on that is the default, and 7 keeps the call as a no-op.
  private static final String NOW =
      "if redis.replicate_commands then pcall(redis.replicate_commands) end\n"
          + "local clock = redis.call('TIME')\n"
          + "local now = tonumber(clock[1]) * 1000000 + tonumber(clock[2])\n";

  /**
   * One acquisition, GCRA with reservations and leases.
   *
   * <pre>
   * KEYS[1] the route's theoretical arrival time (TAT), µs     KEYS[2] the route's pause deadline, µs
   * ARGV[1] emission interval T = 1e6 / perSecond, µs          ARGV[2] burst B
   * ARGV[3] permits wanted (a lease; 1 = one)                  ARGV[4] longest wait for a permit, µs
   * ARGV[5] longest wait in all, pause included, µs            ARGV[6] a pause this JVM knows of, µs
   * ARGV[7] longest pause this JVM honours (its retryAfter.max), µs
   * ARGV[8] the last pause deadline this JVM took on (a reply's fourth value), µs; 0 for none
   * returns {granted, wait µs, pause µs, the pause deadline taken on (µs, 0 for none)};
   * granted = 0 is a refusal and changes nothing
   * </pre>
   */
  static final Script ACQUIRE =
      new Script(
          NOW
              + "local interval = tonumber(ARGV[1])\n"
              + "local burst = tonumber(ARGV[2])\n"
              + "local wanted = tonumber(ARGV[3])\n"
              + "local pause = tonumber(ARGV[6])\n"
              + "local deadline = tonumber(redis.call('GET', KEYS[2]) or '0')\n"
              // Another JVM may allow longer pauses (retryAfter.max): this one waits its own at
              // most, once. A deadline it took on before (ARGV[8]) it has held for its bound
              // already, and the JVM holds what is left of that itself (ARGV[6]); only a later
              // deadline, a 429 since, is a pause to take on.
              + "local taken = 0\n"
              + "if deadline > now and deadline > tonumber(ARGV[8]) then\n"
              + "  taken = math.ceil(deadline)\n"
              + "  if deadline - now > pause then pause = math.min(deadline - now, tonumber(ARGV[7])) end\n"
              + "end\n"
              + "if pause > tonumber(ARGV[5]) then\n"
              + "  return {0, math.ceil(pause), math.ceil(pause), taken}\n"
              + "end\n"
              // Times from here on are relative to now: Redis's clock in µs is about 1.8e15, where
              // a
              // double steps by 0.25 µs, so an interval under a microsecond (above a million
              // permits a second) added to the TAT itself was lost. The key holds the TAT in µs as
              // a decimal: its whole part and its fraction are read apart, each exactly.
              + "local rel = -now\n"
              + "local raw = redis.call('GET', KEYS[1])\n"
              + "if raw then\n"
              + "  local whole, frac = string.match(raw, '^(%d+)(%.?%d*)$')\n"
              + "  if whole then\n"
              + "    rel = (tonumber(whole) - now) + (tonumber('0' .. frac) or 0)\n"
              + "  else\n"
              + "    rel = tonumber(raw) - now\n"
              + "  end\n"
              + "end\n"
              // A caller that waits out a pause starts when it ends (now + pause), and takes its
              // permit then.
              + "if pause > 0 then wanted = 1 end\n"
              + "if rel < pause then rel = pause end\n"
              // Permits that conform at start: each moves the TAT on by T, and one conforms while
              // the TAT stays within B * T of start. The epsilon absorbs float rounding of the sum.
              + "local room = math.floor((pause + burst * interval - rel) / interval + 1e-9)\n"
              + "local granted = 1\n"
              + "local wait = pause\n"
              + "if room >= 1 then\n"
              + "  granted = math.min(room, wanted)\n"
              + "  rel = rel + granted * interval\n"
              + "else\n"
              + "  rel = rel + interval\n"
              + "  local permit_wait = rel - burst * interval - pause\n"
              + "  if permit_wait > tonumber(ARGV[4]) or pause + permit_wait > tonumber(ARGV[5]) then\n"
              + "    return {0, math.ceil(pause + permit_wait), math.ceil(pause), taken}\n"
              + "  end\n"
              + "  wait = pause + permit_wait\n"
              + "end\n"
              // Written as now + rel, whole µs and a fraction to the femtosecond (as a decimal,
              // the format every version reads): a double of the sum would drop the fraction again.
              + "local whole = math.floor(rel)\n"
              + "local fs = math.floor((rel - whole) * 1e9 + 0.5)\n"
              + "if fs >= 1e9 then whole = whole + 1; fs = 0 end\n"
              // Once the TAT is past, the state equals a fresh one: the key may go then.
              + "redis.call('SET', KEYS[1], string.format('%.0f.%09d', now + whole, fs),"
              + " 'PX', math.ceil(rel / 1000) + 1)\n"
              + "return {granted, math.ceil(wait), math.ceil(pause), taken}\n",
          4);

  /**
   * A fleet-wide pause after a 429, extend-only.
   *
   * <pre>
   * KEYS[1] the route's pause deadline, µs
   * ARGV[1] pause asked for, µs                     ARGV[2] longest pause allowed (retryAfter.max), µs
   * returns {1 if this call moved the deadline, else 0; µs left of the pause; the deadline, µs}
   * </pre>
   */
  static final Script PAUSE =
      new Script(
          NOW
              + "local wanted = now + math.min(tonumber(ARGV[1]), tonumber(ARGV[2]))\n"
              + "local deadline = tonumber(redis.call('GET', KEYS[1]) or '0')\n"
              + "if wanted > deadline then\n"
              + "  redis.call('SET', KEYS[1], string.format('%.17g', wanted),"
              + " 'PX', math.ceil((wanted - now) / 1000) + 1)\n"
              + "  return {1, math.ceil(wanted - now), math.ceil(wanted)}\n"
              + "end\n"
              + "return {0, math.ceil(math.max(0, deadline - now)), math.ceil(deadline)}\n",
          3);

  /**
   * What is left of the route's pause, read only: the look after a caller's wait for a permit
   * (FleetRateLimiter.pauseAfterWaitNanos), for a pause another JVM set during the wait.
   *
   * <pre>
   * KEYS[1] the route's pause deadline, µs
   * returns {µs left of the pause, 0 when none; the deadline, µs}
   * </pre>
   */
  static final Script PAUSE_LEFT =
      new Script(
          NOW
              + "local deadline = tonumber(redis.call('GET', KEYS[1]) or '0')\n"
              + "return {math.ceil(math.max(0, deadline - now)), math.ceil(deadline)}\n",
          2);

  /**
   * A heartbeat: the live instances are the members of one sorted set scored by their last beat, so
   * counting them is one ZCARD (a key per instance would need a SCAN of the key space).
   *
   * <pre>
   * KEYS[1] &lt;keyPrefix&gt;:instances
   * ARGV[1] this instance's id      ARGV[2] time to live, ms      ARGV[3] '1' to beat, '0' to leave
   * returns the number of live instances
   * </pre>
   */
  static final Script HEARTBEAT =
      new Script(
          NOW
              + "local now_ms = math.floor(now / 1000)\n"
              + "local ttl = tonumber(ARGV[2])\n"
              + "redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now_ms - ttl)\n"
              + "if ARGV[3] == '1' then\n"
              + "  redis.call('ZADD', KEYS[1], now_ms, ARGV[1])\n"
              + "  redis.call('PEXPIRE', KEYS[1], ttl)\n"
              + "else\n"
              + "  redis.call('ZREM', KEYS[1], ARGV[1])\n"
              + "end\n"
              + "return redis.call('ZCARD', KEYS[1])\n",
          1);

  /** A script and the SHA-1 Redis names it by in its script cache ({@code EVALSHA}). */
  static final class Script {
    final String text;
    final String sha1;

    /** How many values its reply holds: a shorter one is not this script's (a proxy's, say). */
    final int replyLength;

    Script(String text, int replyLength) {
      this.text = text;
      this.sha1 = sha1(text);
      this.replyLength = replyLength;
    }
  }

  /** Lower-case hex SHA-1, as Redis computes it for {@code SCRIPT LOAD}. */
  static String sha1(String script) {
    try {
      byte[] digest =
          MessageDigest.getInstance("SHA-1").digest(script.getBytes(StandardCharsets.UTF_8));
      StringBuilder hex = new StringBuilder(40);
      for (byte b : digest) {
        hex.append(Character.forDigit((b >> 4) & 0xf, 16)).append(Character.forDigit(b & 0xf, 16));
      }
      return hex.toString();
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("SHA-1 is required of every JVM", e);
    }
  }
}
