package dev.retryagent.agent.jdk;

import dev.retryagent.internal.jdk.ClientExecutor;
import java.lang.instrument.Instrumentation;
import java.net.http.HttpClient;
import java.util.Map;
import java.util.Set;

/**
 * Opens {@code java.net.http}'s internal package to the agent, once, and only when first needed: a
 * response given back after a late wait has the application's {@code BodyHandler} run on the
 * client's executor, as the JDK runs it ({@link ClientExecutor}), and for a client the application
 * gave no executor that is the JDK's own pool, which only code the package is open to can reach.
 * Opened lazily, not at start-up: {@code redefineModule} costs start-up time (docs/BENCHMARKS.md),
 * and most JVMs never give a response back.
 */
final class JdkInternals {
  static final String PACKAGE = "jdk.internal.net.http";

  private static boolean asked; // guarded by JdkInternals.class

  private JdkInternals() {}

  /** Opens the package to the module {@link ClientExecutor} is in, the first time only. */
  static synchronized void open() {
    if (asked) {
      return;
    }
    asked = true;
    open(
        JdkHttpInstallation.instrumentation(),
        HttpClient.class.getModule(),
        ClientExecutor.class.getModule());
  }

  /**
   * Asks {@code instrumentation} to open {@link #PACKAGE} of {@code http} to {@code ours}, unless
   * it is open already; true when it asked. A refusal leaves the package closed: the give-back then
   * runs where the call ends, as the library's does.
   */
  static boolean open(Instrumentation instrumentation, Module http, Module ours) {
    if (instrumentation == null || http.isOpen(PACKAGE, ours)) {
      return false;
    }
    try {
      instrumentation.redefineModule(
          http, Set.of(), Map.of(), Map.of(PACKAGE, Set.of(ours)), Set.of(), Map.of());
    } catch (RuntimeException refused) {
      // out of reach: as the library
    }
    return true;
  }
}
