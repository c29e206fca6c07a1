package dev.retryagent.agent;

/**
 * The names of the OkHttp classes the agent rewrites ({@link OkHttpHook}). Apart from it so that
 * matching names at start-up and on every class load touches no ASM class: those load only when the
 * first OkHttp target does.
 */
final class OkHttpTargets {
  static final String BUILDER = "okhttp3/OkHttpClient$Builder";
  static final String CALL_3 = "okhttp3/RealCall";
  static final String CALL_4 = "okhttp3/internal/connection/RealCall";

  private OkHttpTargets() {}

  /** True for the internal names of the classes {@link OkHttpHook#instrument} rewrites. */
  static boolean isTarget(String internalName) {
    return internalName != null
        && internalName.startsWith("okhttp3/")
        && (internalName.equals(BUILDER)
            || internalName.equals(CALL_3)
            || internalName.equals(CALL_4));
  }
}
