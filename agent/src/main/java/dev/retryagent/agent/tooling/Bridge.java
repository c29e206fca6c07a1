package dev.retryagent.agent.tooling;

import dev.retryagent.agent.runtime.AgentLog;
import dev.retryagent.internal.observe.Sanitizer;

/**
 * The agent's side of {@code java.lang.RetryAgentBridge}: the number of each hook, the handler
 * registered for it, and {@link #dispatch}, where the bridge sends every call (through {@link
 * BridgeDispatcher}, the bridge's subclass that {@link BridgeInstaller} installs).
 *
 * <p>A hook is a number written into the rewritten class ({@link BridgePrologue}); the bridge
 * passes it here with the arguments, and the handler registered under it answers. A new hook takes
 * the next free number below; nothing else changes, the bridge included.
 *
 * <p>Thread-safe: handlers are published copy-on-write through a volatile array, so a call costs
 * one volatile read and one interface call on top of the bridge's own virtual call.
 */
public final class Bridge {
  /** {@code HttpClientFacade.send(HttpRequest, BodyHandler)}: facade, request, body handler. */
  public static final int JDK_SEND = 0;

  /**
   * Both {@code HttpClientFacade.sendAsync}: facade, request, body handler, push handler or null.
   */
  public static final int JDK_SEND_ASYNC = 1;

  /** The end of every {@code OkHttpClient$Builder} constructor: the builder (a tell). */
  public static final int OKHTTP_BUILDER = 2;

  /** The start of OkHttp's {@code RealCall.enqueue(Callback)}: call, its client, callback. */
  public static final int OKHTTP_ENQUEUE = 3;

  /** The start of OkHttp's {@code RealCall.cancel()}: the call (a tell). */
  public static final int OKHTTP_CANCEL = 4;

  /**
   * The end of every {@code HttpClientBuilder} constructor, HttpClient 5.x's and 4.5's: the builder
   * (a tell).
   */
  public static final int APACHE_BUILDER = 5;

  /**
   * The start of HttpClient 4.5's {@code doExecute(HttpHost, HttpRequest, HttpContext)}: client,
   * target, request, context.
   */
  public static final int APACHE_EXECUTE = 6;

  /**
   * The JDK's http and https protocol handlers return a new connection from {@code
   * openConnection(URL, Proxy)}: the connection and the proxy. The handler answers the connection
   * the application gets instead, or {@code null} for the JDK's own.
   */
  public static final int URL_OPENED = 7;

  /**
   * {@code sun.net.www.http.HttpClient.parseHTTP} starts to read a response: the JDK's client and
   * its {@code failedOnce} field, boxed. The handler answers the field's new value as a {@code
   * Boolean}, or {@code null} to leave it.
   */
  public static final int URL_RESEND = 8;

  /**
   * The start of OkHttp's {@code CallServerInterceptor.intercept(Chain)}, which writes each request
   * to its connection: the chain (a tell).
   */
  public static final int OKHTTP_SENDING = 9;

  /**
   * OkHttp's {@code CallServerInterceptor.intercept(Chain)} throws an {@code IOException}: {@code
   * new Object[] {chain, exception}} (a tell; the handler tells a refused HTTP/2 stream by the
   * exception); the exception goes on to the caller as it was.
   */
  public static final int OKHTTP_SEND_FAILED = 10;

  /**
   * Java 21+: the start of {@code HttpClientFacade.shutdown()}: the facade. The handler defers the
   * shutdown while calls of that client are in the agent's hands (between attempts, the JDK counts
   * none of them), or lets it run.
   */
  public static final int JDK_SHUTDOWN = 11;

  /** Java 21+: the start of {@code HttpClientFacade.shutdownNow()}: the facade. */
  public static final int JDK_SHUTDOWN_NOW = 12;

  /** Java 21+: the start of {@code HttpClientFacade.close()}: the facade. */
  public static final int JDK_CLOSE = 13;

  /**
   * {@code send(HttpRequest, BodyHandler)} of the application's own copy of the library's {@code
   * RetryingHttpClient$DirectTransport} (one attempt of the library's): its real client (the
   * transport's {@code delegate} field), request, body handler. The handler sends the attempt
   * through the JDK's hook unretried: the library retries it already.
   */
  public static final int JDK_LIBRARY_SEND = 14;

  /**
   * The library's {@code sendAsync(HttpRequest, BodyHandler, PushPromiseHandler)}, as {@link
   * #JDK_LIBRARY_SEND}: real client, request, body handler, push handler or null.
   */
  public static final int JDK_LIBRARY_SEND_ASYNC = 15;

  /**
   * {@code execute(HttpHost, HttpRequest, HttpContext)} of the application's own copy of the
   * library's {@code RetryingCloseableHttpClient$DirectTransport} (one attempt of the library's
   * HttpClient 4.5 adapter): its real client (the transport's {@code client} field), target,
   * request, context. The handler sends the attempt through the client's hook unretried: the
   * library retries it already.
   */
  public static final int APACHE_LIBRARY_EXECUTE = 16;

  /**
   * {@code open(URL, Proxy)} of the application's own copy of the library's {@code
   * urlconnection.DirectUrlTransport} (a connection for one attempt of its {@code
   * RetryingUrlConnections}): URL, proxy or null. The handler opens the JDK's connection past the
   * {@link #URL_OPENED} hook: the library retries it already.
   */
  public static final int URL_LIBRARY_OPEN = 17;

  // Next: 18. Numbers are this JVM's only (hooked classes are rewritten by the agent that runs), so
  // they may be renumbered freely; they must stay below HOOKS.

  /** How many numbers the bridge knows ({@code java.lang.RetryAgentBridge.HOOKS}). */
  static final int HOOKS = 32;

  /** The result of a call that was taken and returns {@code null}: see {@link #returned}. */
  static final Object NULL_RESULT = new Object();

  /** What a handler returns when it took a call of a {@code void} method. */
  public static final Object TAKEN = new Object();

  /** One registration. */
  private static final class Entry {
    final String what;
    final BridgeHandler handler;
    private boolean reported;

    Entry(String what, BridgeHandler handler) {
      this.what = what;
      this.handler = handler;
    }

    /** True the first time only: a failing handler is said once, not per call. */
    synchronized boolean reportFirst() {
      boolean first = !reported;
      reported = true;
      return first;
    }
  }

  private static volatile Entry[] entries = new Entry[HOOKS];

  /**
   * <b>Test only</b>: {@code -Dretryagent.test.fault=hook} (among the engine's faults, see core's
   * {@code TestFaults}) makes every handler fail before it takes its call, to prove through the
   * real agent that a failing hook leaves the call as it is without the agent ({@code
   * AgentFailureIT}).
   */
  private static final boolean HOOK_FAULT = hookFault();

  private static boolean hookFault() {
    try {
      String spec = System.getProperty("retryagent.test.fault", "");
      return ("," + spec.replace(" ", "").toLowerCase(java.util.Locale.ROOT) + ",")
          .contains(",hook,");
    } catch (SecurityException e) {
      return false;
    }
  }

  private Bridge() {}

  /**
   * Sends the calls of {@code hook} to {@code handler}, replacing any earlier one; call it before
   * the hook's classes can be rewritten.
   *
   * @param what the hooked call, for the one line that reports a handler failure ({@code
   *     "java.net.http send"})
   */
  public static synchronized void register(int hook, String what, BridgeHandler handler) {
    if (hook < 0 || hook >= HOOKS) {
      throw new IllegalArgumentException("hook number " + hook + " is not below " + HOOKS);
    }
    Entry[] next = entries.clone();
    next[hook] = handler == null ? null : new Entry(what, handler);
    entries = next;
  }

  /** Removes the handler of {@code hook}: its calls run the original body again. */
  public static void unregister(int hook) {
    register(hook, null, null);
  }

  /**
   * The outcome of a taken call that returns {@code value}, which may be {@code null} (a bare
   * {@code null} would mean "not taken").
   */
  public static Object returned(Object value) {
    return value == null ? NULL_RESULT : value;
  }

  /**
   * Called by {@code java.lang.RetryAgentBridge} for every hooked call. A handler failure before it
   * took the call is reported once per hook and the original body runs.
   */
  public static Object dispatch(
      int hook, Object a, Object b, Object c, Object d, Object e, Object f) {
    Entry[] all = entries;
    Entry entry = hook >= 0 && hook < all.length ? all[hook] : null;
    if (entry == null) {
      return null;
    }
    try {
      if (HOOK_FAULT) {
        throw new IllegalStateException("test fault injected in a hook");
      }
      return entry.handler.enter(a, b, c, d, e, f);
    } catch (Throwable bug) {
      if (entry.reportFirst()) {
        // Sanitised: the message of a bug on a call's path may hold the request's URL or headers.
        AgentLog.error(
            "internal error, "
                + entry.what
                + " passed through without retries: "
                + Sanitizer.exception(bug, true, null));
      }
      return null;
    }
  }
}
