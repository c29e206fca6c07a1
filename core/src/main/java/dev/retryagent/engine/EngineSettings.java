package dev.retryagent.engine;

import dev.retryagent.config.PathMask;
import dev.retryagent.policy.Mode;
import dev.retryagent.policy.Policy;
import java.util.Collection;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * One configuration: its mode, its policies, and the {@link HostState} of each target and policy
 * seen under it (a reload starts a new map: a state holds its policy by identity).
 */
final class EngineSettings {
  /** States kept before the map is cleared and filled again as calls come. */
  private static final int MAX_STATES = 4096;

  private static final AtomicLong GENERATIONS = new AtomicLong();

  /** Orders configurations: a later one has a larger number ({@link HostBucket#usedBy}). */
  final long generation = GENERATIONS.incrementAndGet();

  final Mode mode;
  final PolicyResolver policies;
  // Asked once: a resolver that reads no path gets null, and no request is asked for its path.
  final boolean readsPath;
  // Asked once, as readsPath: RetryEvent.toString masks with it.
  final PathMask pathMask;

  // all(), asked at the first reload, not before: the agent builds its engine before main, and
  // listing the policies there would build the built-in ones too (issue 13's start-up).
  private volatile Collection<Policy> all;
  private volatile boolean listed;

  final HostState passThrough;
  private final ConcurrentHashMap<String, HostState[]> hosts = new ConcurrentHashMap<>();
  private int states;

  EngineSettings(RetryEngine engine, Mode mode, PolicyResolver policies) {
    this.mode = Objects.requireNonNull(mode, "mode");
    this.policies = Objects.requireNonNull(policies, "policies");
    this.readsPath = policies.readsPath();
    this.pathMask = Objects.requireNonNull(policies.pathMask(), "pathMask");
    this.passThrough = HostState.passThrough(engine);
  }

  /**
   * Every policy of this configuration ({@link PolicyResolver#policies()}), or null when the
   * resolver cannot list them: the breakers of other sections are not tracked under it. No lock: it
   * is asked under the breakers' registry lock, and two threads that list at once list the same.
   */
  Collection<Policy> all() {
    if (!listed) {
      all = policies.policies();
      listed = true;
    }
    return all;
  }

  /** The state kept for {@code policy} and the target, or null; marks it used. */
  HostState find(Policy policy, String scheme, String hostKey, int port) {
    HostState[] known = hosts.get(hostKey);
    if (known != null) {
      for (HostState h : known) {
        if (h.isFor(policy, scheme, port) && h.current()) {
          h.touch();
          return h;
        }
      }
    }
    return null;
  }

  /** Keeps {@code fresh}, replacing an older state of its target and policy. */
  synchronized void keep(String hostKey, HostState fresh) {
    if (states >= MAX_STATES) {
      hosts.clear();
      states = 0;
    }
    HostState[] known = hosts.get(hostKey);
    int n = 0;
    HostState[] next = new HostState[known == null ? 1 : known.length + 1];
    if (known != null) {
      for (HostState h : known) {
        if (h.current() && !h.isFor(fresh.policy, fresh.scheme, fresh.port)) {
          next[n++] = h;
        }
      }
    }
    next[n++] = fresh;
    states += n - (known == null ? 0 : known.length);
    hosts.put(hostKey, n == next.length ? next : java.util.Arrays.copyOf(next, n));
  }
}
