package dev.retryagent.testing;

import java.lang.reflect.Field;
import java.lang.reflect.Modifier;

/**
 * An object's size on HotSpot with compressed references (heaps under 32 GiB, the default): a
 * 12-byte header, each instance field of the class and its superclasses at its own size (a
 * reference 4 bytes), rounded up to 8. Since JDK 15 HotSpot packs fields into the gaps, so this is
 * the size {@code AllocSitesRun} counts; a model, for tests that keep an object within its budget.
 */
public final class ShallowSize {
  private ShallowSize() {}

  public static long of(Class<?> type) {
    long bytes = 12;
    for (Class<?> c = type; c != null; c = c.getSuperclass()) {
      for (Field f : c.getDeclaredFields()) {
        if (!Modifier.isStatic(f.getModifiers())) {
          bytes += size(f.getType());
        }
      }
    }
    return (bytes + 7) & ~7L;
  }

  private static int size(Class<?> t) {
    if (t == long.class || t == double.class) {
      return 8;
    } else if (t == int.class || t == float.class) {
      return 4;
    } else if (t == short.class || t == char.class) {
      return 2;
    } else if (t == byte.class || t == boolean.class) {
      return 1;
    }
    return 4;
  }
}
