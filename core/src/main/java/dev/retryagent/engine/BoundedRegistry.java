package dev.retryagent.engine;

import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import java.util.function.Predicate;

/**
 * Per-host state (breakers, budgets, limiters) with a bound: past {@code maxSize} entries, the
 * least recently used idle one among the {@value #IDLE_SEARCH} least recently used is dropped (or,
 * when none of them is idle, the least recently used one), so a service that calls millions of
 * distinct hosts cannot grow the agent's memory without limit. Thread-safe; lookups take a short
 * lock, and a new entry costs the same whatever the bound.
 */
final class BoundedRegistry<K, V> {
  /**
   * Entries looked at for an idle one before the least recently used is dropped. Looking at all of
   * them cost O(maxSize) per new host under the lock once every tracked host was busy (each with a
   * failure in its window: a service calling 100,000 distinct failing hosts spent 0.2 ms per new
   * host, serialising every call); a bounded sample keeps the cost constant, as Redis samples
   * {@code maxmemory-samples} keys for its approximated LRU eviction.
   */
  static final int IDLE_SEARCH = 16;

  private final LinkedHashMap<K, V> entries = new LinkedHashMap<>(16, 0.75f, true);
  private final Predicate<V> idle;
  private long evictions;

  BoundedRegistry(Predicate<V> idle) {
    this.idle = idle;
  }

  /** The entry for {@code key}, created by {@code create} when absent. */
  synchronized V get(K key, Function<K, V> create, int maxSize) {
    V v = entries.get(key);
    if (v == null) {
      v = create.apply(key);
      entries.put(key, v);
      evict(maxSize, key);
    }
    return v;
  }

  private void evict(int maxSize, K keep) {
    while (entries.size() > maxSize) {
      K victim = null;
      int looked = 0;
      for (Map.Entry<K, V> e : entries.entrySet()) {
        if (looked++ == IDLE_SEARCH) {
          break;
        }
        if (!e.getKey().equals(keep) && idle.test(e.getValue())) {
          victim = e.getKey();
          break;
        }
      }
      if (victim == null) {
        Iterator<K> it = entries.keySet().iterator();
        victim = it.next();
        if (victim.equals(keep)) {
          victim = it.hasNext() ? it.next() : null;
        }
      }
      if (victim == null) {
        return;
      }
      entries.remove(victim);
      evictions++;
    }
  }

  synchronized int size() {
    return entries.size();
  }

  synchronized long evictions() {
    return evictions;
  }

  /** A copy of the values, least recently used first. */
  synchronized List<V> values() {
    return new ArrayList<>(entries.values());
  }
}
