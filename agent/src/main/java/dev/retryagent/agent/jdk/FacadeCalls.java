package dev.retryagent.agent.jdk;

import dev.retryagent.internal.jdk.ClientCalls;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.lang.ref.WeakReference;
import java.net.http.HttpClient;
import java.util.Map;
import java.util.WeakHashMap;

/**
 * The {@link ClientCalls} of each client the application holds ({@code HttpClientFacade}), on Java
 * 21+, where a client can be shut down; before, there is nothing to count and none is made.
 *
 * <p>Keyed weakly, by identity (the facade keeps {@code Object}'s {@code equals}): a client the
 * application dropped is collected as without the agent, and the JDK then stops it. A call in
 * progress holds its client itself ({@link ClientTransport}).
 */
final class FacadeCalls {
  private static final Map<HttpClient, ClientCalls> ALL = new WeakHashMap<>(); // guarded by ALL

  // The last client each thread called, and its calls: most threads call one client, and then a
  // call takes no lock and makes nothing. The client is held weakly here too.
  private static final ThreadLocal<Last> LAST = new ThreadLocal<>();

  private FacadeCalls() {}

  private static final class Last {
    final WeakReference<HttpClient> client;
    final ClientCalls calls;

    Last(HttpClient client, ClientCalls calls) {
      this.client = new WeakReference<>(client);
      this.calls = calls;
    }
  }

  /** The calls of {@code client}, made on its first call; null before Java 21. */
  static ClientCalls of(HttpClient client) {
    if (!JdkHttpHook.SHUTS_DOWN) {
      return null;
    }
    ClientCalls calls = lastCalled(client);
    if (calls != null) {
      return calls;
    }
    synchronized (ALL) {
      calls = ALL.computeIfAbsent(client, c -> new ClientCalls());
    }
    LAST.set(new Last(client, calls));
    return calls;
  }

  /** The calls of {@code client}, or null when it never had one through the agent. */
  static ClientCalls existing(HttpClient client) {
    synchronized (ALL) {
      return ALL.get(client);
    }
  }

  /**
   * True when the application shut {@code client} down while calls of it were in the agent's hands
   * (Java 21+): new calls are refused, whether or not the agent still takes them.
   */
  static boolean refuses(HttpClient client) {
    if (!JdkHttpHook.SHUTS_DOWN) {
      return false;
    }
    ClientCalls calls = lastCalled(client);
    if (calls == null) {
      calls = existing(client);
    }
    return calls != null && calls.refuses();
  }

  /** The calls of {@code client} when it is the last client this thread called; else null. */
  private static ClientCalls lastCalled(HttpClient client) {
    Last last = LAST.get();
    return last != null && last.client.get() == client ? last.calls : null;
  }

  /**
   * Runs the client's own {@code shutdown()}: through the hooked facade, whose hook lets it run
   * once no call is in progress (Java 21+ API, so through a handle: this code is built for Java
   * 11).
   */
  static void shutdown(HttpClient client) {
    invoke(Handles.SHUTDOWN, client);
  }

  /** Runs the client's own {@code shutdownNow()}, through the hooked facade. */
  static void shutdownNow(HttpClient client) {
    invoke(Handles.SHUTDOWN_NOW, client);
  }

  private static void invoke(MethodHandle method, HttpClient client) {
    try {
      method.invokeExact(client);
    } catch (RuntimeException | Error e) {
      throw e;
    } catch (Throwable t) {
      throw new IllegalStateException(t); // neither method declares a checked exception
    }
  }

  /** Looked up on first use only: a JVM whose clients are never shut down never needs them. */
  private static final class Handles {
    static final MethodHandle SHUTDOWN = find("shutdown");
    static final MethodHandle SHUTDOWN_NOW = find("shutdownNow");

    private static MethodHandle find(String name) {
      try {
        return MethodHandles.publicLookup()
            .findVirtual(HttpClient.class, name, MethodType.methodType(void.class));
      } catch (NoSuchMethodException | IllegalAccessException e) {
        throw new IllegalStateException("HttpClient." + name + "() on Java 21+", e);
      }
    }
  }
}
