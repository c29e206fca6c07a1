package dev.retryagent.internal;

import java.lang.reflect.Field;
import java.util.function.Predicate;

/**
 * Reaches through HttpClient's decompressing entity wrappers (4.5 and 5.x alike) to the entity they
 * wrap, whose field neither HttpCore exposes: the body as it came on the wire, for a retried
 * response's release ({@link Discards#release}). Reflection, found once per adapter; when it cannot
 * be had (a security manager) the entity is used as it is.
 */
public final class Unwrapping {
  private Unwrapping() {}

  /** The field {@code name} of {@code declaring}, made readable, when it holds a {@code type}. */
  public static Field field(Class<?> declaring, String name, Class<?> type) {
    try {
      Field f = declaring.getDeclaredField(name);
      f.setAccessible(true);
      return type.isAssignableFrom(f.getType()) ? f : null;
    } catch (ReflectiveOperationException | RuntimeException | LinkageError e) {
      return null;
    }
  }

  /**
   * {@code entity} with every outer {@code layer} taken off through {@code wrapped} (nested when a
   * response names several codings); {@code entity} itself when a layer cannot be read.
   */
  public static <T> T innermost(T entity, Class<T> type, Field wrapped, Predicate<Object> layer) {
    if (wrapped == null) {
      return entity;
    }
    T e = entity;
    try {
      while (layer.test(e)) {
        Object inner = wrapped.get(e);
        if (!type.isInstance(inner)) {
          return entity;
        }
        e = type.cast(inner);
      }
      return e;
    } catch (IllegalAccessException | RuntimeException ex) {
      return entity;
    }
  }
}
