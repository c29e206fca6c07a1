package dev.retryagent.okhttp;

import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import okio.Timeout;

/**
 * When a running OkHttp call's own timeout ends it: okio's {@code AsyncTimeout}, which OkHttp
 * enters as the call starts ({@code execute()}, or its run on a dispatcher thread), ahead of the
 * application's interceptors, and which keeps that end ({@code timeoutAt}: its {@code callTimeout}
 * counted from then, or the call's deadline if sooner). OkHttp has no API for it; counted from when
 * the request reached the agent's interceptor instead, a call's end was late by as long as the
 * interceptors ahead took (a token fetched), and the engine started retries that OkHttp's timeout
 * then ended.
 *
 * <p>Read only by the thread that runs the call (it entered the timeout, so it sees its writes). A
 * layout not known here (another okio, or a module that does not open {@code okio}) reads as
 * unknown, and the caller counts as before. No allocation: one {@link ClassValue} look-up and two
 * field reads.
 */
final class EnteredTimeouts {
  /** Returned when the end cannot be read, or the timeout was not entered. */
  static final long UNKNOWN = Long.MIN_VALUE;

  private static final ClassValue<Reader> READERS =
      new ClassValue<Reader>() {
        @Override
        protected Reader computeValue(Class<?> timeoutType) {
          return Reader.of(timeoutType);
        }
      };

  private EnteredTimeouts() {}

  /**
   * The {@link System#nanoTime()} at which the entered {@code timeout} fires, or {@link #UNKNOWN}.
   */
  static long end(Timeout timeout) {
    try {
      return READERS.get(timeout.getClass()).end(timeout);
    } catch (ReflectiveOperationException | RuntimeException | LinkageError e) {
      return UNKNOWN;
    }
  }

  /** How one okio keeps an entered timeout's end. */
  private static final class Reader {
    static final Reader NONE = new Reader(null, null, null);

    private final Field timeoutAt; // null: a layout not known here
    private final Field inQueue; // okio 1.x to 3.6: true while entered
    private final Field state; // later okio: 1 in the queue, 2 timed out (both entered)

    private Reader(Field timeoutAt, Field inQueue, Field state) {
      this.timeoutAt = timeoutAt;
      this.inQueue = inQueue;
      this.state = state;
    }

    long end(Timeout timeout) throws IllegalAccessException {
      if (timeoutAt == null) {
        return UNKNOWN;
      }
      boolean entered;
      if (inQueue != null) {
        entered = inQueue.getBoolean(timeout);
      } else {
        int s = state.getInt(timeout);
        entered = s == 1 || s == 2;
      }
      return entered ? timeoutAt.getLong(timeout) : UNKNOWN;
    }

    static Reader of(Class<?> timeoutType) {
      Class<?> c = timeoutType;
      while (c != null && !c.getName().equals("okio.AsyncTimeout")) {
        c = c.getSuperclass();
      }
      if (c == null) {
        return NONE;
      }
      try {
        Field at = field(c, "timeoutAt", long.class);
        Field queued = field(c, "inQueue", boolean.class);
        Field st = queued == null ? field(c, "state", int.class) : null;
        if (at == null || (queued == null && st == null)) {
          return NONE;
        }
        at.setAccessible(true);
        if (queued != null) {
          queued.setAccessible(true);
        } else {
          st.setAccessible(true);
        }
        return new Reader(at, queued, st);
      } catch (RuntimeException notOpen) {
        // InaccessibleObjectException (a named module), SecurityException: looked at once only.
        return NONE;
      }
    }

    private static Field field(Class<?> type, String name, Class<?> fieldType) {
      try {
        Field f = type.getDeclaredField(name);
        return f.getType() == fieldType && !Modifier.isStatic(f.getModifiers()) ? f : null;
      } catch (NoSuchFieldException e) {
        return null;
      }
    }
  }
}
