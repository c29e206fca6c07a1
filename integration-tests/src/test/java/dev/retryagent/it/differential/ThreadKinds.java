package dev.retryagent.it.differential;

/**
 * Thread names reduced to the kind of thread, so runs compare: {@code caller} (the application's
 * thread that made the call), {@code canceller} (the application's thread inside {@code cancel()}
 * or {@code interrupt()}), {@code OkHttp Dispatcher} (OkHttp names its dispatcher threads after the
 * call's URL while they run it), {@code HttpClient-N-Worker}, {@code retry-agent-async}; any other
 * name with its numbers replaced by N ({@code Okio Watchdog} stays as it is).
 */
final class ThreadKinds {
  /** The application's thread that made the call. */
  static final String CALLER = "caller";

  /**
   * Where java.net.http runs the stages of a future that completes after they were attached: {@code
   * CompletableFuture}'s default executor, the common pool, or on two cores with JDK 17 a new
   * unnamed thread per task ({@code Thread-N}). The agent names every thread it starts, which
   * {@link ThreadChecks#AGENT_THREADS} checks, so neither name can be the agent's.
   */
  static final java.util.Set<String> JDK_ASYNC_POOL =
      java.util.Set.of("ForkJoinPool.commonPool-worker-N", "Thread-N");

  /**
   * Where Apache HttpClient 5.x's asynchronous client calls back a request's outcome that comes
   * from the server: its I/O dispatch threads. A request it fails before executing it (a closed
   * connection's {@code RequestNotExecutedException}) is called back on the caller, inside {@code
   * execute}.
   */
  static final String APACHE_ASYNC_DISPATCH = "httpclient-dispatch-N";

  private ThreadKinds() {}

  static String kind(String name) {
    if (name.equals("app-caller")) {
      return CALLER;
    } else if (name.equals("app-canceller")) {
      return "canceller";
    } else if (name.startsWith("OkHttp WebSocket")) {
      return "OkHttp WebSocket";
    } else if (name.equals("OkHttp Dispatcher") || name.matches("OkHttp [a-z]+://.*")) {
      return "OkHttp Dispatcher";
    } else if (name.matches("HttpClient-\\d+-Worker-\\d+")) {
      return "HttpClient-N-Worker";
    } else if (name.matches("retry-agent-.*-\\d+")) {
      return name.replaceAll("-\\d+$", "");
    }
    return name.replaceAll("\\d+", "N");
  }
}
