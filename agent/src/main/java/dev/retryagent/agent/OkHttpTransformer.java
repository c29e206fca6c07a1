package dev.retryagent.agent;

import dev.retryagent.bootstrap.OkHttpBridge;
import java.lang.instrument.ClassFileTransformer;
import java.security.ProtectionDomain;
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
final class OkHttpTransformer implements ClassFileTransformer {
  static final String BUILDER = "okhttp3/OkHttpClient$Builder";
  static final String CALL_3 = "okhttp3/RealCall";
  static final String CALL_4 = "okhttp3/internal/connection/RealCall";
  private static final String BRIDGE = "dev.retryagent.bootstrap.OkHttpBridge";

  private final AtomicInteger hooked = new AtomicInteger();
  private final AtomicInteger skipped = new AtomicInteger();
  private final AtomicInteger unlinkable = new AtomicInteger();
  private volatile String failedBuilder;
  private volatile String failedCall;

  @Override
  public byte[] transform(
      Module module,
      ClassLoader loader,
      String className,
      Class<?> classBeingRedefined,
      ProtectionDomain protectionDomain,
      byte[] classfileBuffer) {
    if (!isTarget(className)) {
      return null;
    }
    if (ForeignLoaders.isAgentLoader(loader)) {
      skipped.incrementAndGet();
      return null;
    }
    if (!seesBridge(loader)) {
      // A loader that does not delegate to the bootstrap path (OSGi, JBoss Modules): the injected
      // calls could not link, and the builder's would break the application's constructor.
      if (unlinkable.getAndIncrement() == 0) {
        AgentLog.error(
            "okhttp NOT hooked in "
                + loader
                + ", which cannot see the agent's bootstrap classes: its clients run without"
                + " retries");
      }
      return null;
    }
    try {
      byte[] instrumented = OkHttpHook.instrument(className, classfileBuffer);
      hooked.incrementAndGet();
      return instrumented;
    } catch (Throwable t) {
      boolean builder = className.equals(BUILDER);
      if (builder ? failedBuilder == null : failedCall == null) {
        if (builder) {
          failedBuilder = t.toString();
        } else {
          failedCall = t.toString();
        }
        AgentLog.error(
            "okhttp NOT hooked in "
                + loader
                + (builder
                    ? ", its clients run without retries"
                    : ", its enqueued calls wait for retries on a dispatcher thread")
                + ": could not instrument "
                + className.replace('/', '.')
                + " ("
                + t
                + ")");
      }
      return null;
    }
  }

  /**
   * True for the internal names of the classes {@link OkHttpHook} rewrites. Here, and touching no
   * other class, because it runs for every class the JVM defines, the agent's own included: a class
   * it needed would be defined from inside its own transformation (a duplicate definition). The ASM
   * classes load only when the first OkHttp target does.
   */
  static boolean isTarget(String internalName) {
    return internalName != null
        && internalName.startsWith("okhttp3/")
        && (internalName.equals(BUILDER)
            || internalName.equals(CALL_3)
            || internalName.equals(CALL_4));
  }

  private static boolean seesBridge(ClassLoader loader) {
    if (loader == null) {
      return true;
    }
    try {
      return Class.forName(BRIDGE, false, loader) == OkHttpBridge.class;
    } catch (ClassNotFoundException | LinkageError e) {
      return false;
    }
  }

  /** Classes instrumented so far. */
  int hooked() {
    return hooked.get();
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
