package dev.retryagent.okhttp;

import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A map whose {@code isEmpty()} answers empty {@link #readsEmpty} times, whatever it holds, then
 * truly: what a {@code ConcurrentHashMap} may answer while other threads put and remove other keys
 * (it sums counts they change as it reads them), made deterministic.
 */
final class UndercountingMap<K, V> extends ConcurrentHashMap<K, V> {
  private static final long serialVersionUID = 1L;

  final AtomicInteger readsEmpty = new AtomicInteger();

  @Override
  public boolean isEmpty() {
    return readsEmpty.getAndUpdate(n -> Math.max(0, n - 1)) > 0 || super.isEmpty();
  }
}
