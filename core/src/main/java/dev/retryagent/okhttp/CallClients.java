package dev.retryagent.okhttp;

import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.util.List;
import okhttp3.Call;
import okhttp3.Interceptor;
import okhttp3.OkHttpClient;

/**
 * Whether the client of an OkHttp call holds a given network interceptor. OkHttp's API has no way
 * from a {@code Call} (or an application interceptor's chain) to its client, so its call class's
 * own field is read: {@code client}, in {@code okhttp3.RealCall} (3.x) and {@code
 * okhttp3.internal.connection.RealCall} (4.x, 5.x). One field read and a scan of the client's
 * network interceptors (the list itself, no copy), no allocation. A call of another class, or of an
 * OkHttp whose package is not open to us (a named module), cannot be asked: {@link #UNKNOWN}.
 */
final class CallClients {
  static final int HOLDS = 1;
  static final int LACKS = 0;
  static final int UNKNOWN = -1;

  // The call class's client field, made accessible; a null field where it cannot be read.
  private static final ClassValue<Reader> READERS =
      new ClassValue<Reader>() {
        @Override
        protected Reader computeValue(Class<?> callType) {
          return new Reader(clientField(callType));
        }
      };

  /** How a call class's client is read. */
  private static final class Reader {
    final Field client; // null: cannot be read

    Reader(Field client) {
      this.client = client;
    }
  }

  private CallClients() {}

  /**
   * {@link #HOLDS} when the client of {@code okCall} has {@code network} among its network
   * interceptors, {@link #LACKS} when it has not, {@link #UNKNOWN} when its client cannot be read.
   */
  static int networkInterceptorOf(Call okCall, Interceptor network) {
    try {
      Field f = READERS.get(okCall.getClass()).client;
      if (f == null) {
        return UNKNOWN;
      }
      Object client = f.get(okCall);
      if (!(client instanceof OkHttpClient)) {
        return UNKNOWN;
      }
      List<Interceptor> held = ((OkHttpClient) client).networkInterceptors();
      for (int i = 0, n = held.size(); i < n; i++) {
        if (held.get(i) == network) {
          return HOLDS;
        }
      }
      return LACKS;
    } catch (ReflectiveOperationException | RuntimeException | LinkageError e) {
      return UNKNOWN;
    }
  }

  private static Field clientField(Class<?> callType) {
    try {
      Field f = callType.getDeclaredField("client");
      if (Modifier.isStatic(f.getModifiers()) || f.getType() != OkHttpClient.class) {
        return null;
      }
      f.setAccessible(true); // OkHttp's packages are open to us unless it runs as a named module
      return f;
    } catch (NoSuchFieldException | RuntimeException | LinkageError e) {
      // InaccessibleObjectException (a named module), SecurityException: looked at once only.
      return null;
    }
  }
}
