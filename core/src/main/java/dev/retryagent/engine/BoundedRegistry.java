package dev.retryagent.engine;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import java.util.function.Predicate;

/**
 * Per-host state (breakers, budgets, limiters) with a bound: past {@code maxSize} entries, the
 * least recently used idle one among the {@value #IDLE_SEARCH} entries at the front of the map is
 * dropped; when none of them is idle, the first idle one further on, up to {@value
 * #IDLE_SEARCH_MAX} entries looked at; when none of those is idle either, the least recently used
 * of the first {@value #IDLE_SEARCH}. So a service that calls millions of distinct hosts cannot
 * grow the agent's memory without limit. Thread-safe; lookups take a short lock, and a new entry
 * costs the same whatever the bound.
 *
 * <p>Each bound counts the entries made under it (a {@link Partition}): routes whose {@code
 * circuitBreaker.maxHosts} differ share the registry, and a route's small bound must not drop the
 * hosts of a route with a larger one (their open breakers among them), only its own. A bound no
 * configuration passes any more is folded into one that does ({@link #retainBounds}).
 *
 * <p>A caller may keep an {@link Entry} and use its value without a lookup (the engine's {@link
 * HostState} does, so a host seen before costs no lock here): it then marks each use with {@link
 * #touch}, and looks the key up again once the entry says it was {@linkplain Entry#evicted()
 * evicted}.
 */
final class BoundedRegistry<K, V> {
  /**
   * Entries looked at per eviction. Looking at all of them cost O(maxSize) per new host under the
   * lock (a service calling 100,000 distinct failing hosts spent 0.2 ms per new host, serialising
   * every call); a bounded sample keeps the cost constant, as Redis samples {@code
   * maxmemory-samples} keys for its approximated LRU eviction. The entries looked at and kept go to
   * the back of the map (a second chance, as in the CLOCK algorithm), so the next eviction looks at
   * others and a host in use is not sampled again and again.
   */
  static final int IDLE_SEARCH = 16;

  /**
   * Entries looked at, at most, for an idle one when none of the first {@value #IDLE_SEARCH} is:
   * with 16 busy entries at the front (the open breakers of dead webhook endpoints) a busy one was
   * dropped while idle ones stood behind them, and the host it tracked got a fresh closed breaker.
   * Bounded, so that a registry of busy entries only (every host failing) still costs a constant
   * per new host.
   */
  static final int IDLE_SEARCH_MAX = 64;

  /**
   * Orders uses across the registries of one engine: "recently used" is a count of uses, not a
   * time, so an engine on a fake clock orders them too. Incremented without a lock by {@link
   * #touch}: concurrent uses may share a number, which only blurs which of two hosts used at the
   * same moment was used last.
   */
  static final class UseClock {
    private long uses;

    long tick() {
      return ++uses;
    }
  }

  /** One value, when it was last used, and whether it is still the registry's. */
  static final class Entry<V> {
    final V value;
    private long lastUse;
    private volatile boolean evicted;

    Entry(V value) {
      this.value = value;
    }

    /** True once the registry dropped this entry: whoever kept it must look the key up again. */
    boolean evicted() {
      return evicted;
    }
  }

  /** The entries made under one bound, in the order evictions sample them. */
  private static final class Partition<K, V> {
    final int bound;
    final LinkedHashMap<K, Entry<V>> entries = new LinkedHashMap<>();

    Partition(int bound) {
      this.bound = bound;
    }
  }

  /** One per bound in use; most configurations have one bound, so a list is walked. */
  private final List<Partition<K, V>> partitions = new ArrayList<>(1);

  private final Predicate<V> idle;
  private final UseClock clock;
  private long evictions;

  /** The group of each key ({@link #group}), or null when the registry keeps no groups. */
  private final Function<? super K, ?> grouping;

  /**
   * Each group's entries, kept with the map's: one group is found without a walk of them all, and
   * read without a look-up of each of its keys (every 429 reads its host's group under the lock).
   */
  private final HashMap<Object, List<Entry<V>>> groups;

  BoundedRegistry(Predicate<V> idle) {
    this(idle, new UseClock());
  }

  BoundedRegistry(Predicate<V> idle, UseClock clock) {
    this(idle, clock, null);
  }

  /** A registry that can list the values of one group of keys, {@code grouping} saying which. */
  BoundedRegistry(Predicate<V> idle, UseClock clock, Function<? super K, ?> grouping) {
    this.idle = idle;
    this.clock = clock;
    this.grouping = grouping;
    this.groups = grouping == null ? null : new HashMap<Object, List<Entry<V>>>();
  }

  /** The value for {@code key}, created by {@code create} when absent. */
  V get(K key, Function<K, V> create, int maxSize) {
    return entry(key, create, maxSize).value;
  }

  /** The entry for {@code key}, created by {@code create} when absent; counts as a use. */
  synchronized Entry<V> entry(K key, Function<K, V> create, int maxSize) {
    Partition<K, V> home = partition(maxSize);
    Entry<V> e = home.entries.get(key);
    if (e == null && partitions.size() > 1) {
      e = find(key); // made under another bound (two routes share a section)
    }
    if (e == null) {
      e = new Entry<>(create.apply(key));
      home.entries.put(key, e);
      if (groups != null) {
        Object g = grouping.apply(key);
        List<Entry<V>> members = groups.get(g);
        if (members == null) {
          members = new ArrayList<>(2);
          groups.put(g, members);
        }
        members.add(e);
      }
      e.lastUse = clock.tick();
      evict(home, e);
    } else {
      e.lastUse = clock.tick();
    }
    return e;
  }

  /** A use of a kept entry (null: none), without the lock (see {@link UseClock}). */
  void touch(Entry<V> e) {
    if (e != null) {
      e.lastUse = clock.tick();
    }
  }

  /** The partition of {@code bound}, made when none is. Caller holds the lock. */
  private Partition<K, V> partition(int bound) {
    for (int i = 0; i < partitions.size(); i++) {
      Partition<K, V> p = partitions.get(i);
      if (p.bound == bound) {
        return p;
      }
    }
    Partition<K, V> p = new Partition<>(bound);
    partitions.add(p);
    return p;
  }

  /** The entry of {@code key} under any bound, or null. Caller holds the lock. */
  private Entry<V> find(K key) {
    for (int i = 0; i < partitions.size(); i++) {
      Entry<V> e = partitions.get(i).entries.get(key);
      if (e != null) {
        return e;
      }
    }
    return null;
  }

  /**
   * Keeps the partitions of {@code bounds} (the bounds of the configuration now), and folds every
   * other into the largest of them, evicting it down to its bound: a reload that changes {@code
   * maxHosts} leaves no state counted under the old bound for good. An empty {@code bounds} keeps
   * every partition.
   */
  synchronized void retainBounds(java.util.Collection<Integer> bounds) {
    int largest = 0;
    for (Integer b : bounds) {
      largest = Math.max(largest, b);
    }
    if (largest == 0) {
      return;
    }
    Partition<K, V> into = partition(largest);
    boolean folded = false;
    for (java.util.Iterator<Partition<K, V>> i = partitions.iterator(); i.hasNext(); ) {
      Partition<K, V> p = i.next();
      if (!bounds.contains(p.bound)) {
        into.entries.putAll(p.entries);
        i.remove();
        folded = true;
      }
    }
    if (folded) {
      evict(into, null);
    }
  }

  private void evict(Partition<K, V> home, Entry<V> keep) {
    LinkedHashMap<K, Entry<V>> entries = home.entries;
    int maxSize = home.bound;
    List<K> looked = new ArrayList<>(IDLE_SEARCH_MAX);
    while (entries.size() > maxSize) {
      looked.clear();
      Map.Entry<K, Entry<V>> idleVictim = null;
      Map.Entry<K, Entry<V>> anyVictim = null;
      for (Map.Entry<K, Entry<V>> e : entries.entrySet()) {
        if (looked.size() == IDLE_SEARCH_MAX
            || (looked.size() >= IDLE_SEARCH && idleVictim != null)) {
          break;
        }
        Entry<V> v = e.getValue();
        if (v == keep) {
          continue;
        }
        boolean sampled = looked.size() < IDLE_SEARCH;
        looked.add(e.getKey());
        if (sampled && (anyVictim == null || v.lastUse < anyVictim.getValue().lastUse)) {
          anyVictim = e;
        }
        if ((idleVictim == null || v.lastUse < idleVictim.getValue().lastUse)
            && idle.test(v.value)) {
          idleVictim = e; // past the sample: the first idle one found ends the search
        }
      }
      Map.Entry<K, Entry<V>> victim = idleVictim != null ? idleVictim : anyVictim;
      if (victim == null) {
        return;
      }
      K victimKey = victim.getKey();
      victim.getValue().evicted = true;
      entries.remove(victimKey);
      ungroup(victimKey, victim.getValue());
      evictions++;
      // Second chance, to the back: the sample only. Those looked at past it were never
      // candidates but for being idle; sent back too, they would outlive newer entries, and the
      // least recently used order of a registry of busy entries would be lost.
      for (int i = 0, n = Math.min(IDLE_SEARCH, looked.size()); i < n; i++) {
        K k = looked.get(i);
        if (!k.equals(victimKey)) {
          entries.put(k, entries.remove(k));
        }
      }
    }
  }

  /**
   * Drops the entries whose key {@code unused} accepts. Not marked {@linkplain Entry#evicted()
   * evicted}: a caller that kept one (a call under way) goes on with it rather than making it anew.
   */
  synchronized void removeKeys(Predicate<K> unused) {
    for (Partition<K, V> p : partitions) {
      for (java.util.Iterator<Map.Entry<K, Entry<V>>> i = p.entries.entrySet().iterator();
          i.hasNext(); ) {
        Map.Entry<K, Entry<V>> e = i.next();
        if (unused.test(e.getKey())) {
          i.remove();
          ungroup(e.getKey(), e.getValue());
        }
      }
    }
  }

  /** Takes the entry {@code e} of {@code key} out of its group. Caller holds the lock. */
  private void ungroup(K key, Entry<V> e) {
    if (groups != null) {
      Object g = grouping.apply(key);
      List<Entry<V>> members = groups.get(g);
      if (members != null && members.remove(e) && members.isEmpty()) {
        groups.remove(g);
      }
    }
  }

  /**
   * The values whose keys are of {@code group} (a copy; empty when none is), for a registry made
   * with a grouping. Costs the group's size, not the registry's.
   */
  synchronized List<V> group(Object group) {
    List<Entry<V>> members = groups.get(group);
    if (members == null) {
      return java.util.Collections.emptyList();
    }
    List<V> out = new ArrayList<>(members.size());
    for (Entry<V> e : members) {
      out.add(e.value);
    }
    return out;
  }

  /**
   * Drops the entry of {@code key} if {@code unused} accepts the key, tested under the lock; not
   * marked evicted either (see {@link #removeKeys}).
   */
  synchronized void removeKey(K key, Predicate<K> unused) {
    for (Partition<K, V> p : partitions) {
      Entry<V> e = p.entries.get(key);
      if (e != null) {
        if (unused.test(key)) {
          p.entries.remove(key);
          ungroup(key, e);
        }
        return;
      }
    }
  }

  synchronized int size() {
    int n = 0;
    for (Partition<K, V> p : partitions) {
      n += p.entries.size();
    }
    return n;
  }

  synchronized long evictions() {
    return evictions;
  }

  /** A copy of the values, least recently used first. */
  synchronized List<V> values() {
    List<Entry<V>> sorted = new ArrayList<>();
    for (Partition<K, V> p : partitions) {
      sorted.addAll(p.entries.values());
    }
    sorted.sort(Comparator.comparingLong(e -> e.lastUse));
    List<V> out = new ArrayList<>(sorted.size());
    for (Entry<V> e : sorted) {
      out.add(e.value);
    }
    return out;
  }
}
