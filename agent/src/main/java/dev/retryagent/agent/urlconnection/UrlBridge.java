package dev.retryagent.agent.urlconnection;

import dev.retryagent.agent.runtime.AgentLog;
import dev.retryagent.agent.runtime.AgentRuntime;
import java.io.IOException;
import java.io.InputStream;
import java.lang.instrument.Instrumentation;
import java.lang.invoke.MethodHandles;
import java.util.HashMap;
import java.util.Map;
import java.util.Set;
import java.util.function.BiFunction;
import java.util.function.BiPredicate;

/**
 * Defines {@code sun.net.www.RetryAgentUrlBridge} into {@code java.base}, once, without the boot
 * class path: {@link Instrumentation#redefineModule} opens {@code sun.net.www} (and the two
 * protocol packages, whose private fields the agent reads) to the agent's own module only, then a
 * {@code Lookup} on {@code sun.net.www.ParseUtil} (loaded by every JVM before {@code premain})
 * defines the bridge from its bytes, hidden in the agent jar as {@code
 * inst/dev/retryagent/agent/urlconnection/RetryAgentUrlBridge.bytes}. The user adds no {@code
 * --add-opens}.
 *
 * <p>Done lazily, when the first {@code HttpURLConnection} is made (the JDK loads its class just
 * before the handler calls the bridge) or when {@code HttpClient} is rewritten: an application that
 * never opens one pays nothing for it. A failure is reported once; the handlers' guarded call then
 * leaves the JDK's connections as they are.
 */
final class UrlBridge {
  static final String NAME = "sun.net.www.RetryAgentUrlBridge";
  private static final String[] OPENED = {
    "sun.net.www", "sun.net.www.protocol.http", "sun.net.www.protocol.https"
  };

  private final Instrumentation inst;
  private final AgentRuntime runtime;
  private volatile boolean installed;
  private volatile Throwable failure;

  UrlBridge(Instrumentation inst, AgentRuntime runtime) {
    this.inst = inst;
    this.runtime = runtime;
  }

  /** True once the bridge is defined and installed; installs it now if needed. */
  boolean ensure() {
    if (installed) {
      return true;
    }
    synchronized (this) {
      if (!installed && failure == null) {
        try {
          install();
          installed = true;
        } catch (Throwable t) {
          failure = t;
          AgentLog.error(
              "url-connection NOT hooked, HttpURLConnection runs without retries: could not"
                  + " define "
                  + NAME
                  + " ("
                  + t
                  + ")");
        }
      }
      return installed;
    }
  }

  /** Why the bridge could not be installed, or null. */
  Throwable failure() {
    return failure;
  }

  private void install() throws Exception {
    Module base = Object.class.getModule();
    Module agent = UrlBridge.class.getModule();
    Map<String, Set<Module>> opens = new HashMap<>();
    for (String pkg : OPENED) {
      if (!base.isOpen(pkg, agent)) {
        opens.put(pkg, Set.of(agent));
      }
    }
    if (!opens.isEmpty()) {
      inst.redefineModule(base, Set.of(), Map.of(), opens, Set.of(), Map.of());
    }
    Class<?> bridge;
    try {
      bridge = Class.forName(NAME, false, null);
    } catch (ClassNotFoundException notYet) {
      bridge =
          MethodHandles.privateLookupIn(
                  Class.forName("sun.net.www.ParseUtil", false, null), MethodHandles.lookup())
              .defineClass(bytes());
    }
    warnOfCasts(base);
    AgentUrlTransport transport = new AgentUrlTransport();
    bridge
        .getMethod("install", BiFunction.class, BiPredicate.class)
        .invoke(null, new UrlOpener(runtime, transport), transport.resendSwitch);
  }

  /**
   * Connections are the agent's own class: code that casts them to the JDK's internal classes
   * fails. Such code needs {@code --add-exports} (or {@code --add-opens}) of those packages to the
   * application, which shows here; said once, when the first connection is made.
   */
  private static void warnOfCasts(Module base) {
    Module app = ClassLoader.getSystemClassLoader().getUnnamedModule();
    for (String pkg : new String[] {"sun.net.www.protocol.http", "sun.net.www.protocol.https"}) {
      if (base.isExported(pkg, app)) {
        AgentLog.error(
            "url-connection: "
                + pkg
                + " is exported to the application: code that casts a connection to the JDK's"
                + " own class fails with the agent (agent.clients.url-connection: false keeps"
                + " them)");
        return;
      }
    }
  }

  /**
   * The bridge's class file: in the agent jar a resource next to this class ({@code
   * RetryAgentUrlBridge.bytes}, which no class loader takes for a class); in the build's own
   * classes, where unit tests run, the compiled class itself.
   */
  private static byte[] bytes() throws IOException {
    String[] names = {"RetryAgentUrlBridge.bytes", "/" + NAME.replace('.', '/') + ".class"};
    for (String name : names) {
      try (InputStream in = UrlBridge.class.getResourceAsStream(name)) {
        if (in != null) {
          return in.readAllBytes();
        }
      }
    }
    throw new IOException("RetryAgentUrlBridge.bytes is missing from the agent jar");
  }
}
