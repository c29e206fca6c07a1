package dev.retryagent.agent.apache;

import dev.retryagent.engine.RetryEngine;

/**
 * The HttpClient side of the agent for one copy of HttpClient 4.5 or 5.x: implemented by {@code
 * dev.retryagent.agent.apache.glue.Apache4Glue} and {@code Apache5Glue}, each defined once per
 * HttpClient class loader in a child loader of it, where HttpClient's classes are visible. Public
 * because those classes live in another class loader (another runtime package); its signatures use
 * only {@code java.base}, the engine and the agent classes both sides share (this interface, {@link
 * ApacheHandler}, {@link ApacheEntry}, {@code dev.retryagent.agent.tooling.Bridge}).
 */
public interface ApacheSupport extends ApacheHandler {
  /** What the HttpClient side needs from the agent. */
  interface Agent {
    /** The engine (built on first use). */
    RetryEngine engine();

    /**
     * False while {@code agent.clients.apache-httpclient} is off (a reload): calls pass through.
     */
    boolean enabled();
  }

  /**
   * Hands a new glue instance from its static initializer to the agent without reflection
   * (reflection spins method-handle classes on first use, which costs start-up time).
   */
  final class Handoff {
    private static Agent agent;
    private static ApacheSupport made;

    private Handoff() {}

    /** Initialises glue class {@code glue} of {@code loader}, which registers one instance. */
    static synchronized ApacheSupport make(String glue, ClassLoader loader, Agent forGlue)
        throws ClassNotFoundException {
      agent = forGlue;
      made = null;
      try {
        Class.forName(glue, true, loader);
        if (made == null) {
          throw new IllegalStateException(glue + " did not register in " + loader);
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
    public static synchronized void register(ApacheSupport glue) {
      made = glue;
    }
  }
}
