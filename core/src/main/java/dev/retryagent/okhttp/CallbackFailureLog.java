package dev.retryagent.okhttp;

import java.io.IOException;
import java.lang.reflect.Method;
import java.util.logging.Level;
import java.util.logging.Logger;
import okhttp3.Call;
import okhttp3.OkHttpClient;

/**
 * The line OkHttp logs when the application's {@code Callback.onResponse} throws an {@code
 * IOException} ({@code RealCall.AsyncCall}, 3.12 to 5.x: {@code Platform.get().log("Callback
 * failure for " + toLoggableString(), INFO, e)}), for a response the agent tells outside OkHttp's
 * run of a call (a copy given back, {@link EnqueuedCall#giveBack}). Through OkHttp's own {@code
 * Platform} (on the JVM: {@code java.util.logging}, logger {@code okhttp3.OkHttpClient}, INFO), so
 * that it lands where OkHttp's own line lands; on that logger directly when the {@code Platform}
 * cannot be reached. The URL as OkHttp redacts it: scheme, host and port, no path, query or
 * user-info.
 */
final class CallbackFailureLog {
  private CallbackFailureLog() {}

  static void log(Call call, IOException e) {
    String message = "Callback failure for " + loggable(call);
    if (!OkHttpPlatform.log(message, e)) {
      Logger.getLogger(OkHttpClient.class.getName()).log(Level.INFO, message, e);
    }
  }

  /** OkHttp's {@code RealCall.toLoggableString()}: "canceled call to https://host/...". */
  static String loggable(Call call) {
    return (call.isCanceled() ? "canceled " : "")
        + (AsyncRetrier.isWebSocketHandshake(call.request()) ? "web socket" : "call")
        + " to "
        + call.request().url().redact();
  }

  /**
   * OkHttp's {@code Platform.get().log}, found once, when first needed (a callback failure only):
   * {@code log(int, String, Throwable)} in 3.x, {@code log(String, int, Throwable)} from 4.0.
   */
  private static final class OkHttpPlatform {
    private static final int INFO = 4; // Platform.INFO, 3.x to 5.x
    private static final Method GET;
    private static final Method LOG;
    private static final boolean MESSAGE_FIRST;

    static {
      Method get = null;
      Method log = null;
      boolean messageFirst = false;
      try {
        Class<?> platform =
            Class.forName("okhttp3.internal.platform.Platform", true, Call.class.getClassLoader());
        get = platform.getMethod("get");
        try {
          log = platform.getMethod("log", String.class, int.class, Throwable.class);
          messageFirst = true;
        } catch (NoSuchMethodException olderOkHttp) {
          log = platform.getMethod("log", int.class, String.class, Throwable.class);
        }
      } catch (ReflectiveOperationException | RuntimeException | LinkageError e) {
        get = null; // the logger directly
      }
      GET = get;
      LOG = log;
      MESSAGE_FIRST = messageFirst;
    }

    /** False when OkHttp's Platform could not be asked. */
    static boolean log(String message, IOException e) {
      if (GET == null) {
        return false;
      }
      try {
        Object platform = GET.invoke(null);
        if (MESSAGE_FIRST) {
          LOG.invoke(platform, message, INFO, e);
        } else {
          LOG.invoke(platform, INFO, message, e);
        }
        return true;
      } catch (ReflectiveOperationException | RuntimeException | LinkageError failed) {
        return false;
      }
    }
  }
}
