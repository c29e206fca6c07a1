package dev.retryagent.internal.observe;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * One route's series by host key, and a cache by host name that finds an admitted host's series
 * without building its key (the hot path allocates nothing). The cache holds admitted hosts only,
 * and at most a bound of names as written (one host has as many as case spellings of its name);
 * hosts past the bound take the slower way to the other host.
 */
final class RouteSeries {
  final Map<String, Counters> byKey = new ConcurrentHashMap<>();
  private final Map<String, HostEntry[]> byHostName = new ConcurrentHashMap<>();
  private final int maxCached;
  private int cached; // guarded by this

  /**
   * @param maxCached host names as written the cache keeps at most
   */
  RouteSeries(int maxCached) {
    this.maxCached = maxCached;
  }

  Counters cached(String scheme, String host, int port) {
    HostEntry[] entries = byHostName.get(host);
    if (entries != null) {
      for (HostEntry h : entries) {
        if (h.port == port && h.scheme.equals(scheme)) {
          return h.counters;
        }
      }
    }
    return null;
  }

  synchronized void cache(String scheme, String host, int port, Counters c) {
    if (cached(scheme, host, port) != null) {
      return; // another thread cached it first
    }
    if (cached >= maxCached) {
      // Hosts are bounded, their spellings are not ("API.example.com", "api.Example.com", ...):
      // a name past the bound finds its series by its key, as an event always may.
      return;
    }
    cached++;
    HostEntry[] old = byHostName.get(host);
    int n = old == null ? 0 : old.length;
    HostEntry[] next = new HostEntry[n + 1];
    if (old != null) {
      System.arraycopy(old, 0, next, 0, n);
    }
    next[n] = new HostEntry(scheme, port, c);
    byHostName.put(host, next);
  }

  Counters counters(String key) {
    Counters c = byKey.get(key);
    if (c == null) {
      Counters fresh = new Counters();
      c = byKey.putIfAbsent(key, fresh);
      if (c == null) {
        c = fresh;
      }
    }
    return c;
  }

  synchronized int spellingsCached() {
    return cached;
  }

  private static final class HostEntry {
    final String scheme;
    final int port;
    final Counters counters;

    HostEntry(String scheme, int port, Counters counters) {
      this.scheme = scheme;
      this.port = port;
      this.counters = counters;
    }
  }
}
