package dev.retryagent.agent.urlconnection;

import dev.retryagent.agent.runtime.AgentLog;
import dev.retryagent.agent.runtime.AgentRuntime;
import dev.retryagent.agent.tooling.CauseLine;
import java.lang.instrument.Instrumentation;
import java.util.HashMap;
import java.util.Map;
import java.util.Set;

/**
 * Switches the {@code HttpURLConnection} hook on, once, when the first connection is made (the JDK
 * loads {@code sun.net.www.protocol.http.HttpURLConnection} just before the handler hands its
 * connection to {@code java.lang.RetryAgentBridge}) or when it was loaded before the agent (a late
 * attach, a JDK 25 AOT cache): an application that never opens one pays nothing for it.
 *
 * <ol>
 *   <li>{@link Instrumentation#redefineModule} opens the two protocol packages of {@code java.base}
 *       to the agent's own module only: {@link AgentUrlTransport} reads private fields there (the
 *       JDK's rewrite of a request after a write error). The user adds no {@code --add-opens}.
 *   <li>{@link UrlEntry} is registered under {@code Bridge.URL_OPENED} and {@code URL_RESEND}: from
 *       then on the hooked code reaches the agent; until then the bridge answers {@code null} and
 *       the JDK's connections stay as they are.
 * </ol>
 *
 * A failure is reported once and leaves the hooks unregistered: {@code HttpURLConnection} runs
 * without retries.
 */
final class UrlActivation {
  private static final String[] OPENED = {
    "sun.net.www.protocol.http", "sun.net.www.protocol.https"
  };

  private final Instrumentation inst;
  private final AgentRuntime runtime;
  private volatile boolean active;
  private volatile Throwable failure;

  UrlActivation(Instrumentation inst, AgentRuntime runtime) {
    this.inst = inst;
    this.runtime = runtime;
  }

  /** True once the hook is active; activates it now if needed. */
  boolean ensure() {
    if (active) {
      return true;
    }
    synchronized (this) {
      if (!active && failure == null) {
        try {
          activate();
          active = true;
        } catch (Throwable t) {
          failure = t;
          AgentLog.error(
              "url-connection NOT hooked, HttpURLConnection runs without retries: could not open"
                  + " the JDK's protocol packages to the agent ("
                  + CauseLine.of(t)
                  + ")");
        }
      }
      return active;
    }
  }

  /** Why the hook could not be activated, or null (not tried yet, or active). */
  Throwable failure() {
    return failure;
  }

  private void activate() {
    Module base = Object.class.getModule();
    Module agent = UrlActivation.class.getModule();
    Map<String, Set<Module>> opens = new HashMap<>();
    for (String pkg : OPENED) {
      if (!base.isOpen(pkg, agent)) {
        opens.put(pkg, Set.of(agent));
      }
    }
    if (!opens.isEmpty()) {
      inst.redefineModule(base, Set.of(), Map.of(), opens, Set.of(), Map.of());
    }
    warnOfCasts(base);
    AgentUrlTransport transport = new AgentUrlTransport();
    UrlEntry.register(new UrlOpener(runtime, transport), transport);
  }

  /**
   * Connections are the agent's own class: code that casts them to the JDK's internal classes
   * fails. Such code needs {@code --add-exports} (or {@code --add-opens}) of those packages to the
   * application, which shows here; said once, when the first connection is made.
   */
  private static void warnOfCasts(Module base) {
    Module app = ClassLoader.getSystemClassLoader().getUnnamedModule();
    for (String pkg : OPENED) {
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
}
