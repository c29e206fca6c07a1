package dev.retryagent.agent.jdk;

import dev.retryagent.agent.tooling.Bridge;
import dev.retryagent.agent.tooling.BridgeHandler;
import dev.retryagent.internal.jdk.ClientCalls;
import java.net.http.HttpClient;

/**
 * Where the Java 21+ hooks of {@code HttpClientFacade.shutdown()}, {@code shutdownNow()} and {@code
 * close()} enter the agent ({@link Bridge#JDK_SHUTDOWN}, {@link Bridge#JDK_SHUTDOWN_NOW}, {@link
 * Bridge#JDK_CLOSE}). The JDK lets the requests in progress finish before it terminates, and {@code
 * close()} waits for them; a call waiting for its retry has no request at the JDK, so the agent
 * lets its calls in progress finish too ({@link ClientCalls}): a shutdown waits for the last of
 * them, and so does {@code close()}. A client without a call through the agent is left to the JDK.
 */
final class ShutdownEntry implements BridgeHandler {
  private final int hook;

  private ShutdownEntry(int hook) {
    this.hook = hook;
  }

  /** Registers the three hooks' handlers. */
  static void register() {
    Bridge.register(
        Bridge.JDK_SHUTDOWN, "a java.net.http shutdown", new ShutdownEntry(Bridge.JDK_SHUTDOWN));
    Bridge.register(
        Bridge.JDK_SHUTDOWN_NOW,
        "a java.net.http shutdownNow",
        new ShutdownEntry(Bridge.JDK_SHUTDOWN_NOW));
    Bridge.register(Bridge.JDK_CLOSE, "a java.net.http close", new ShutdownEntry(Bridge.JDK_CLOSE));
  }

  /** Removes them: the JDK's methods run as they are. */
  static void unregister() {
    Bridge.unregister(Bridge.JDK_SHUTDOWN);
    Bridge.unregister(Bridge.JDK_SHUTDOWN_NOW);
    Bridge.unregister(Bridge.JDK_CLOSE);
  }

  @Override
  public Object enter(Object facade, Object b, Object c, Object d, Object e, Object f) {
    HttpClient client = (HttpClient) facade;
    ClientCalls calls = FacadeCalls.existing(client);
    if (calls == null) {
      return null;
    }
    if (hook == Bridge.JDK_SHUTDOWN) {
      // Deferred: the last call to end runs this method again, and then it runs (ClientTransport).
      return calls.deferShutdown() ? Bridge.TAKEN : null;
    }
    if (hook == Bridge.JDK_SHUTDOWN_NOW) {
      calls.shutDownNowCalled();
      return null; // the JDK aborts what it sends; no call retries after it
    }
    if (calls.deferShutdown()) {
      calls.awaitCalls(new ShutdownNow(client));
    }
    return null; // close() itself: the real shutdown, and the wait for the JDK to terminate
  }

  /**
   * What an interrupted {@code close()} runs, as the JDK's does. A named class, not a lambda: this
   * class is loaded in {@code premain}, and a lambda's {@code invokedynamic} is a start-up cost
   * (NoInvokedynamicBeforeMainIT).
   */
  private static final class ShutdownNow implements Runnable {
    private final HttpClient client;

    ShutdownNow(HttpClient client) {
      this.client = client;
    }

    @Override
    public void run() {
      FacadeCalls.shutdownNow(client);
    }
  }
}
