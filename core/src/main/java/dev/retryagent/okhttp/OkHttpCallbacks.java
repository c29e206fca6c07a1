package dev.retryagent.okhttp;

import okhttp3.Call;

/**
 * How this copy of OkHttp handles what an application's {@code Callback} throws, where it differs
 * between versions, for a response the agent tells outside OkHttp's run of a call ({@link
 * EnqueuedCall#giveBack}).
 */
final class OkHttpCallbacks {
  /**
   * Whether OkHttp keeps an {@code InterruptedException} thrown (sneakily) from {@code onResponse}
   * from leaving its thread: from 5.2.0 on, {@code RealCall.AsyncCall.run} cancels the call and
   * sets the thread's interrupt flag instead (square/okhttp#9022); before, it cancels the call and
   * lets it leave, as anything else but an {@code IOException}. Read once, when first needed, from
   * {@code okhttp3.OkHttp.VERSION} (4.0 on; 3.x has none, and lets it leave).
   */
  static final boolean KEEP_INTERRUPTS = keepsInterrupts(version());

  private OkHttpCallbacks() {}

  private static String version() {
    try {
      Class<?> okHttp = Class.forName("okhttp3.OkHttp", true, Call.class.getClassLoader());
      Object v = okHttp.getField("VERSION").get(null);
      return v instanceof String ? (String) v : null;
    } catch (ReflectiveOperationException | RuntimeException | LinkageError e) {
      return null; // 3.x, or a layout not known: as before 5.2
    }
  }

  /** True for a version of 5.2 or later ("5.2.0", "5.3.0-SNAPSHOT", "6.0.0"). */
  static boolean keepsInterrupts(String version) {
    if (version == null) {
      return false;
    }
    int dot = version.indexOf('.');
    if (dot <= 0) {
      return false;
    }
    int major = leadingNumber(version, 0);
    int minor = leadingNumber(version, dot + 1);
    return major > 5 || (major == 5 && minor >= 2);
  }

  private static int leadingNumber(String s, int from) {
    int n = 0;
    int i = from;
    while (i < s.length() && Character.isDigit(s.charAt(i)) && n < 100_000) {
      n = n * 10 + (s.charAt(i) - '0');
      i++;
    }
    return i == from ? -1 : n;
  }

  /** Throws {@code t} as it is, checked or not, where the compiler cannot see it. */
  @SuppressWarnings("unchecked")
  static <T extends Throwable> T unchecked(Throwable t) throws T {
    throw (T) t;
  }
}
