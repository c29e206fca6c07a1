package dev.retryagent.agent.okhttp;

import dev.retryagent.engine.RetryEngine;

/**
 * The OkHttp side of the agent for one copy of OkHttp: implemented by {@code
 * dev.retryagent.agent.okhttp.glue.OkHttpGlue}, which is defined once per OkHttp class loader in a
 * child loader of it (a {@link dev.retryagent.agent.tooling.GlueClassLoader}), where {@code
 * okhttp3.*} is visible. Public because that class lives in another class loader (another runtime
 * package); its signatures use only {@code java.base}, the engine and the agent classes both sides
 * share (this interface, {@link OkHttpHandler}, {@link OkHttpEntry}, {@code
 * dev.retryagent.agent.tooling.Bridge}).
 */
public interface OkHttpSupport extends OkHttpHandler {
  /** What the OkHttp side needs from the agent. */
  interface Agent {
    /** The engine (built on first use). */
    RetryEngine engine();

    /** False while {@code agent.clients.okhttp} is off (a reload): calls pass through. */
    boolean enabled();

    /**
     * Whether {@code callServerInterceptor} (that OkHttp copy's {@code
     * okhttp3.internal.http.CallServerInterceptor}, loaded) tells the agent of every request it
     * sends and every one that fails: then the copy's clients need no network interceptor of the
     * agent's.
     */
    boolean sendsHooked(Class<?> callServerInterceptor);
  }

  /**
   * Hands a new {@code OkHttpGlue} from its static initializer to the agent without reflection
   * (reflection spins method-handle classes on first use, which costs start-up time).
   */
  final class Handoff {
    /**
     * The glue's package. Only this subpackage of {@code dev.retryagent.agent.okhttp} is defined
     * next to each OkHttp copy: the rest of it (the transformer, this interface) belongs to the
     * agent's loader, which every OkHttp copy shares.
     */
    static final String GLUE_PACKAGE = "dev.retryagent.agent.okhttp.glue.";

    static final String GLUE = GLUE_PACKAGE + "OkHttpGlue";

    private static Agent agent;
    private static OkHttpSupport made;

    private Handoff() {}

    /** Initialises the glue class of {@code loader}, which registers one instance. */
    static synchronized OkHttpSupport make(ClassLoader loader, Agent forGlue)
        throws ClassNotFoundException {
      agent = forGlue;
      made = null;
      try {
        Class.forName(GLUE, true, loader);
        if (made == null) {
          throw new IllegalStateException(GLUE + " did not register in " + loader);
        }
        return made;
      } finally {
        agent = null;
        made = null;
      }
    }

    /** For the glue's static initializer: the agent it serves. */
    public static synchronized Agent agent() {
      return agent;
    }

    /** For the glue's static initializer: the instance. */
    public static synchronized void register(OkHttpSupport glue) {
      made = glue;
    }
  }
}
