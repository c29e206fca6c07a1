package dev.retryagent.agent.okhttp;

import dev.retryagent.agent.runtime.AgentLog;
import dev.retryagent.agent.tooling.CauseLine;
import dev.retryagent.agent.tooling.ForeignLoaders;
import dev.retryagent.agent.tooling.HookTransformer;
import dev.retryagent.agent.tooling.LoaderNames;
import java.io.IOException;
import java.net.URL;
import java.security.CodeSource;
import java.security.ProtectionDomain;
import java.util.Collections;
import java.util.Enumeration;
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

  /**
   * OkHttp before 3.14 (3.0 to 3.13) has a {@code StreamAllocation} (first in {@code
   * okhttp3.internal.http}, then in {@code okhttp3.internal.connection}); 3.14 replaced it.
   */
  private static final String OLD_OKHTTP = "okhttp3/internal/connection/StreamAllocation.class";

  private static final String OLDER_OKHTTP = "okhttp3/internal/http/StreamAllocation.class";

  // Per loader: whether its OkHttp is older than 3.14, which is left alone. Weak keys.
  private final Map<ClassLoader, Boolean> tooOld = Collections.synchronizedMap(new WeakHashMap<>());

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
    return accepts(module, loader, internalName, null);
  }

  @Override
  protected boolean accepts(
      Module module, ClassLoader loader, String internalName, ProtectionDomain domain) {
    if (ForeignLoaders.leavesAlone(loader)) {
      skipped.incrementAndGet();
      return false;
    }
    return !olderThan314(loader, internalName, domain) && linksToBridge(loader);
  }

  /**
   * Whether {@code loader}'s OkHttp is older than 3.14, which the agent leaves alone (said once per
   * loader). There the retry loop would break what the application sees: 3.12's {@code
   * RetryAndFollowUpInterceptor} ends the call (its call timeout, {@code callEnd}) as a retried
   * response is closed, so a retry ran unbounded by {@code callTimeout}; and its request bodies'
   * marker types ({@code UnrepeatableRequestBody}, okhttp-urlconnection's streamed bodies) were
   * hidden behind the agent's body, so a streamed PUT could be retried with an empty body.
   */
  private boolean olderThan314(ClassLoader loader, String internalName, ProtectionDomain domain) {
    if (loader == null) {
      return false; // OkHttp is never a boot class; nothing to look up
    }
    Boolean old = tooOld.get(loader);
    if (old == null) {
      old = hasOldOkHttp(loader, internalName, domain);
      if (tooOld.putIfAbsent(loader, old) == null && old) {
        AgentLog.error(
            "okhttp NOT hooked in "
                + LoaderNames.describe(loader)
                + ": its OkHttp is older than 3.14, which the agent does not support; its clients"
                + " run without retries");
      }
    }
    return old;
  }

  /**
   * Whether the OkHttp {@code internalName} is defined from (its {@code domain}'s jar or directory)
   * has a {@code StreamAllocation}. Not whether {@code loader} sees one anywhere: a child-first
   * loader (a web application's) with OkHttp 4 of its own also sees its parent's (an OkHttp 3.12 in
   * a server's shared lib), and the reverse. Every copy the loader sees is looked at ({@code
   * getResources}), whatever order its lookups take. When the class's origin is unknown (no code
   * source), or its URLs are of a form this cannot relate to it, or the loader fails to answer: old
   * if a {@code StreamAllocation} is seen at all, the side that leaves OkHttp alone.
   */
  private static boolean hasOldOkHttp(
      ClassLoader loader, String internalName, ProtectionDomain domain) {
    try {
      CodeSource source = domain == null ? null : domain.getCodeSource();
      URL location = source == null ? null : source.getLocation();
      if (location != null) {
        String from = location.toString();
        if (holds(loader, from, internalName + ".class")) {
          return holds(loader, from, OLD_OKHTTP) || holds(loader, from, OLDER_OKHTTP);
        }
      }
      return loader.getResource(OLD_OKHTTP) != null || loader.getResource(OLDER_OKHTTP) != null;
    } catch (IOException | RuntimeException | LinkageError e) {
      return true;
    }
  }

  /**
   * Whether {@code name} is among {@code loader}'s resources in the jar or directory at {@code
   * location}: a directory's {@code <location><name>}, a jar's (nested ones too: Spring Boot's)
   * {@code jar:<location>!/<name>} or {@code <location><name>} when the location is itself a {@code
   * jar:...!/} URL.
   */
  private static boolean holds(ClassLoader loader, String location, String name)
      throws IOException {
    Enumeration<URL> all = loader.getResources(name);
    while (all.hasMoreElements()) {
      String url = all.nextElement().toString();
      if (url.equals(location + name) || url.equals("jar:" + location + "!/" + name)) {
        return true;
      }
    }
    return false;
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
      failedBuilder = CauseLine.of(cause);
    } else {
      failedCall = CauseLine.of(cause);
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
            + CauseLine.of(cause)
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
