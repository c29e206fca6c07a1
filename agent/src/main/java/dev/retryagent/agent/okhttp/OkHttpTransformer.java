package dev.retryagent.agent.okhttp;

import dev.retryagent.agent.runtime.AgentLog;
import dev.retryagent.agent.tooling.ForeignLoaders;
import dev.retryagent.agent.tooling.HookTransformer;
import dev.retryagent.agent.tooling.LoaderNames;
import java.util.Collections;
import java.util.Map;
import java.util.WeakHashMap;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Applies {@link OkHttpHook} to OkHttp's builder and call classes when a class loader defines (or
 * retransforms) them, in every class loader except those of other agents ({@link ForeignLoaders}).
 *
 * <p>Every class the JVM loads passes through here: the common path is a prefix test on the name. A
 * failure to instrument is reported on stderr once per class name and the class stays unchanged:
 * that OkHttp runs without retries (or, for the call class, with the waits inside the interceptor),
 * never broken.
 */
final class OkHttpTransformer extends HookTransformer {
  static final String BUILDER = "okhttp3/OkHttpClient$Builder";
  static final String CALL_3 = "okhttp3/RealCall";
  static final String CALL_4 = "okhttp3/internal/connection/RealCall";
  static final String DISPATCHER = "okhttp3/Dispatcher";
  static final String SEND = "okhttp3/internal/http/CallServerInterceptor";

  private static final String SEND_NAME = "okhttp3.internal.http.CallServerInterceptor";
  static final String HOOKS =
      "OkHttpClient.Builder, RealCall.enqueue/cancel, Dispatcher.cancelAll, CallServerInterceptor";

  private final AtomicInteger skipped = new AtomicInteger();
  private volatile String failedBuilder;
  private volatile String failedCall;

  // The loaders whose CallServerInterceptor was rewritten: only there may the agent leave out its
  // network interceptor (OkHttpGlue). Weak keys: a dropped OkHttp copy is not held.
  private final Map<ClassLoader, Boolean> sendHooked =
      Collections.synchronizedMap(new WeakHashMap<>());

  OkHttpTransformer() {
    super("okhttp", HOOKS, "OkHttp");
  }

  @Override
  protected boolean matches(String internalName) {
    return isTarget(internalName);
  }

  /**
   * True for the internal names of the classes {@link OkHttpHook} rewrites: a prefix test first, as
   * every class the JVM defines is asked.
   */
  static boolean isTarget(String internalName) {
    return internalName != null
        && internalName.startsWith("okhttp3/")
        && (internalName.equals(BUILDER)
            || internalName.equals(CALL_3)
            || internalName.equals(CALL_4)
            || internalName.equals(DISPATCHER)
            || internalName.equals(SEND));
  }

  @Override
  protected boolean retransforms(Class<?> loaded) {
    String name = loaded.getName();
    return name.startsWith("okhttp3.")
        && isTarget(name.replace('.', '/'))
        && !ForeignLoaders.leavesAlone(loaded.getClassLoader());
  }

  @Override
  protected boolean accepts(Module module, ClassLoader loader, String internalName) {
    if (ForeignLoaders.leavesAlone(loader)) {
      skipped.incrementAndGet();
      return false;
    }
    return linksToBridge(loader);
  }

  @Override
  protected byte[] rewrite(String internalName, byte[] classfile) {
    return OkHttpHook.instrument(internalName, classfile);
  }

  @Override
  protected void rewritten(ClassLoader loader, String internalName) {
    if (internalName.equals(SEND)) {
      sendHooked.put(loader, Boolean.TRUE);
    }
  }

  @Override
  protected void refused(Class<?> loaded) {
    if (loaded.getName().equals(SEND_NAME)) {
      sendHooked.remove(loaded.getClassLoader());
    }
  }

  /**
   * Whether {@code callServerInterceptor}, OkHttp's class of that name, was rewritten to tell the
   * agent of each request it sends ({@code OkHttpHook}).
   */
  boolean sendsHooked(Class<?> callServerInterceptor) {
    return callServerInterceptor.getName().equals(SEND.replace('/', '.'))
        && sendHooked.containsKey(callServerInterceptor.getClassLoader());
  }

  @Override
  protected void failed(ClassLoader loader, String internalName, Throwable cause) {
    if (internalName.equals(SEND)) {
      // Nothing is lost: the agent counts resends with a network interceptor there, as before.
      sendHooked.remove(loader);
      return;
    }
    boolean builder = internalName.equals(BUILDER);
    if (builder ? failedBuilder != null : failedCall != null) {
      return;
    }
    if (builder) {
      failedBuilder = cause.toString();
    } else {
      failedCall = cause.toString();
    }
    AgentLog.error(
        "okhttp NOT hooked in "
            + LoaderNames.describe(loader)
            + (builder
                ? ", its clients run without retries"
                : internalName.equals(DISPATCHER)
                    ? ", its cancelAll() does not reach calls waiting for a retry"
                    : ", its enqueued calls wait for retries on a dispatcher thread")
            + ": could not instrument "
            + internalName.replace('/', '.')
            + " ("
            + cause
            + ")");
  }

  /** Only a builder that cannot be rewritten costs the retries; a call class costs async waits. */
  @Override
  protected String notHookedReason() {
    return failedBuilder;
  }

  /** Target classes left alone because another agent's loader defined them. */
  int skipped() {
    return skipped.get();
  }

  /** Why the builder could not be instrumented, or null. */
  String builderFailure() {
    return failedBuilder;
  }

  /** Why a call class could not be instrumented, or null. */
  String callFailure() {
    return failedCall;
  }
}
