package dev.retryagent.agent.tooling;

import java.io.IOException;
import java.io.InputStream;
import java.lang.instrument.Instrumentation;
import java.lang.invoke.MethodHandles;
import java.util.Map;
import java.util.Set;

/**
 * Defines {@code java.lang.RetryAgentBridge} once per JVM and installs the agent's subclass of it
 * ({@link BridgeDispatcher}, which calls {@link Bridge#dispatch}): the step that replaces a
 * bootstrap class-path append (which makes the JVM print "Sharing is only supported for boot loader
 * classes because bootstrap classpath has been appended" and turns off the application's class-data
 * sharing).
 *
 * <ol>
 *   <li>{@code Instrumentation.redefineModule} opens {@code java.lang} to the agent's (unnamed)
 *       module, and to nothing else;
 *   <li>{@code MethodHandles.privateLookupIn(Object.class, lookup()).defineClass(bytes)} defines
 *       the bridge into the bootstrap loader and {@code java.base}; its bytes are the agent jar's
 *       hidden {@code inst/java/lang/RetryAgentBridge.classdata} (never a loadable {@code .class});
 *   <li>{@link BridgeDispatcher}, a subclass of it, loads (its superclass exists now) and installs
 *       itself as the bridge's dispatcher: the first and only one.
 * </ol>
 *
 * Supported APIs only (no {@code Unsafe}); no method handle and no lambda of ours. The JDK spins a
 * few lambda classes inside {@code redefineModule} (docs/BENCHMARKS.md).
 */
public final class BridgeInstaller {
  /** The bridge's binary name. */
  public static final String NAME = "java.lang.RetryAgentBridge";

  private static final String BYTES = "java/lang/RetryAgentBridge.classdata";

  private static volatile Class<?> bridge;

  private BridgeInstaller() {}

  /**
   * Defines the bridge if this JVM has none yet and installs the dispatcher; idempotent. Call it
   * before any hook's transformer is added.
   *
   * @param inst the JVM's instrumentation, to open {@code java.lang}; may be null where {@code
   *     java.lang} is already open to the agent ({@code --add-opens java.base/java.lang=...},
   *     tests)
   * @return the bridge class
   * @throws Exception when the bridge cannot be defined or wired: the agent then installs nothing
   */
  public static synchronized Class<?> install(Instrumentation inst) throws Exception {
    Class<?> defined = bridge;
    if (defined != null) {
      return defined;
    }
    Module base = Object.class.getModule();
    Module agent = BridgeInstaller.class.getModule();
    if (!base.isOpen("java.lang", agent)) {
      if (inst == null) {
        throw new IllegalStateException("java.lang is not open to " + agent);
      }
      inst.redefineModule(
          base, Set.of(), Map.of(), Map.of("java.lang", Set.of(agent)), Set.of(), Map.of());
    }
    MethodHandles.Lookup javaLang =
        MethodHandles.privateLookupIn(Object.class, MethodHandles.lookup());
    try {
      // an earlier start in this JVM (tests), or a JDK 25 AOT cache that archived it
      defined = Class.forName(NAME, false, null);
    } catch (ClassNotFoundException absent) {
      defined = javaLang.defineClass(bytes());
    }
    BridgeDispatcher.installIntoTheBridge();
    bridge = defined;
    return defined;
  }

  /** The bridge once {@link #install} has run, or null. */
  public static Class<?> bridge() {
    return bridge;
  }

  /**
   * True when the bridge is installed and {@code loader} resolves its name to it: what a class
   * rewritten in that loader will link to. Loading it here, before the rewrite is returned, also
   * records {@code loader} as an initiating loader of the bridge. A transformer of application
   * loaders asks this first and leaves a loader that says no alone.
   *
   * @param loader the loader that defines the class to rewrite; {@code null}: the bootstrap loader
   */
  public static boolean isVisibleTo(ClassLoader loader) {
    Class<?> defined = bridge;
    if (defined == null) {
      return false;
    }
    if (loader == null) {
      return true;
    }
    try {
      return Class.forName(NAME, false, loader) == defined;
    } catch (ClassNotFoundException | LinkageError e) {
      return false;
    }
  }

  private static byte[] bytes() throws IOException {
    // the agent's loader reads the hidden entry straight from its open jar (no URL machinery)
    try (InputStream in = BridgeInstaller.class.getClassLoader().getResourceAsStream(BYTES)) {
      if (in == null) {
        throw new IOException(BYTES + " is missing from the agent");
      }
      return in.readAllBytes();
    }
  }
}
