package dev.retryagent.okhttp;

import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import okhttp3.Call;

/**
 * Lets go of what a finished OkHttp attempt left on its call object, while the call waits for its
 * retry.
 *
 * <p>A call object that ran keeps the state OkHttp found its connection with: the address, its own
 * copy of the URL, the route selector and the routes it tried (OkHttp 4 and 5: the call's {@code
 * exchangeFinder}; 3.14: its transmitter's). OkHttp reads that state only for a next exchange of
 * the same call object, and there is none: a call runs once, and the retry is a clone. But the
 * application's callback must get that very object at the end, so the object, and the state with
 * it, lives as long as the retry waits: ~370 B per waiting call on a pooled connection, more on a
 * new one (issue 13: 10,000 calls waiting at once).
 *
 * <p>Applied only to an attempt whose run is over (its callback has it). What OkHttp still reads of
 * the field after that copes with null: {@code cancel()} (3.14 reads it under the connection pool's
 * lock, which this takes too; 4 and 5 do not read it). A call of another layout is left as it is
 * (another OkHttp, or a module that does not open its package): this saves memory, it never changes
 * what a call does. OkHttp 3.12 and older are left so on purpose: their call's {@code
 * streamAllocation} is also what a WebSocket's callback reads of the call it is given.
 */
final class AttemptLeftovers {
  private static final ClassValue<Path> PATHS =
      new ClassValue<Path>() {
        @Override
        protected Path computeValue(Class<?> callType) {
          return Path.of(callType);
        }
      };

  private AttemptLeftovers() {}

  /** Drops what the finished attempt {@code call} holds of its connection's search. */
  static void drop(Call call) {
    try {
      PATHS.get(call.getClass()).clear(call);
    } catch (ReflectiveOperationException | RuntimeException | LinkageError e) {
      // Never fail a call for memory's sake: the state then stays, as without this.
    }
  }

  /** Where the leftovers hang from a call of one class. */
  private static final class Path {
    static final Path NONE = new Path(null, null, null);

    private final Field holder; // null: the call itself holds the field
    private final Field leftovers; // null: a layout not known here
    private final Field lock; // on the holder, the monitor OkHttp reads the field under; or null

    private Path(Field holder, Field leftovers, Field lock) {
      this.holder = holder;
      this.leftovers = leftovers;
      this.lock = lock;
    }

    void clear(Call call) throws IllegalAccessException {
      if (leftovers == null) {
        return;
      }
      Object owner = holder == null ? call : holder.get(call);
      if (owner == null) {
        return;
      }
      if (lock == null) {
        leftovers.set(owner, null);
        return;
      }
      Object monitor = lock.get(owner);
      if (monitor != null) {
        synchronized (monitor) {
          leftovers.set(owner, null);
        }
      }
    }

    static Path of(Class<?> callType) {
      try {
        Field finder = field(callType, "exchangeFinder", "ExchangeFinder"); // OkHttp 4, 5
        if (finder != null) {
          return cleared(null, finder, null);
        }
        Field transmitter = field(callType, "transmitter", "Transmitter"); // OkHttp 3.14
        if (transmitter != null) {
          Class<?> type = transmitter.getType();
          Field pool = field(type, "connectionPool", "RealConnectionPool");
          return pool == null
              ? NONE
              : cleared(transmitter, field(type, "exchangeFinder", "ExchangeFinder"), pool);
        }
      } catch (RuntimeException notOpen) {
        // InaccessibleObjectException (a named module), SecurityException: looked at once only.
      }
      return NONE;
    }

    private static Path cleared(Field holder, Field leftovers, Field lock) {
      return leftovers == null || Modifier.isFinal(leftovers.getModifiers())
          ? NONE
          : new Path(holder, leftovers, lock);
    }

    /** The instance field {@code name} of {@code type}, of a type so named, made accessible. */
    private static Field field(Class<?> type, String name, String typeSimpleName) {
      Field f;
      try {
        f = type.getDeclaredField(name);
      } catch (NoSuchFieldException e) {
        return null;
      }
      if (Modifier.isStatic(f.getModifiers())
          || !f.getType().getSimpleName().equals(typeSimpleName)) {
        return null;
      }
      f.setAccessible(true); // OkHttp's packages are open to us unless it runs as a named module
      return f;
    }
  }
}
