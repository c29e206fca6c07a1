package dev.retryagent.agent.okhttp;

import dev.retryagent.agent.runtime.AgentLog;
import dev.retryagent.agent.tooling.CauseLine;
import dev.retryagent.agent.tooling.GlueClassLoader;
import dev.retryagent.agent.tooling.LoaderNames;

/**
 * Receives the OkHttp hooks from {@link OkHttpEntry} and passes each to the {@link OkHttpSupport}
 * of the OkHttp copy it came from, made on first use of that copy.
 *
 * <p>Caching without leaks: two {@link ClassValue}s, one keyed by the hooked class (the builder or
 * the call class: the fast path, one lookup per hook), one by that copy's {@code
 * okhttp3.OkHttpClient} (so both hooked classes of a copy share one support, and with it one
 * interceptor instance and one async retrier). A {@code ClassValue} keeps its value in the key
 * class itself; the value reaches the key only through its own loader's parent (OkHttp's loader),
 * and nothing in the agent's loader holds either. When the application drops that OkHttp copy (a
 * web application is undeployed), key, value and loaders become unreachable together.
 */
final class OkHttpLoaders implements OkHttpHandler {
  private final OkHttpSupport.Agent agent;
  private final ClassLoader agentLoader;

  private final ClassValue<OkHttpSupport> byClient =
      new ClassValue<OkHttpSupport>() {
        @Override
        protected OkHttpSupport computeValue(Class<?> okHttpClient) {
          return make(okHttpClient.getClassLoader());
        }
      };

  private final ClassValue<OkHttpSupport> byHookedClass =
      new ClassValue<OkHttpSupport>() {
        @Override
        protected OkHttpSupport computeValue(Class<?> hooked) {
          try {
            return byClient.get(
                Class.forName("okhttp3.OkHttpClient", false, hooked.getClassLoader()));
          } catch (ClassNotFoundException | LinkageError e) {
            return failed(hooked.getClassLoader(), e);
          }
        }
      };

  OkHttpLoaders(OkHttpSupport.Agent agent, ClassLoader agentLoader) {
    this.agent = agent;
    this.agentLoader = agentLoader;
  }

  /** The support of the OkHttp copy that defined {@code hookedClass}. */
  OkHttpSupport supportFor(Class<?> hookedClass) {
    return byHookedClass.get(hookedClass);
  }

  private OkHttpSupport make(ClassLoader okhttpLoader) {
    try {
      GlueClassLoader loader =
          new GlueClassLoader(
              "retry-agent-okhttp",
              okhttpLoader,
              agentLoader,
              "dev.retryagent.okhttp.",
              OkHttpSupport.Handoff.GLUE_PACKAGE);
      return OkHttpSupport.Handoff.make(loader, agent);
    } catch (ClassNotFoundException | RuntimeException | LinkageError e) {
      return failed(okhttpLoader, e);
    }
  }

  /** Said once per OkHttp copy; that copy then runs without retries. */
  private static OkHttpSupport failed(ClassLoader okhttpLoader, Throwable cause) {
    AgentLog.error(
        "okhttp in "
            + LoaderNames.describe(okhttpLoader)
            + " runs without retries: the agent's OkHttp support could not be loaded there ("
            + CauseLine.of(cause)
            + ")");
    return Inert.INSTANCE;
  }

  @Override
  public void builderCreated(Object builder) {
    supportFor(builder.getClass()).builderCreated(builder);
  }

  @Override
  public Object enqueue(Object call, Object client, Object callback) {
    return supportFor(call.getClass()).enqueue(call, client, callback);
  }

  @Override
  public void cancel(Object call) {
    supportFor(call.getClass()).cancel(call);
  }

  @Override
  public void sending(Object chain) {
    supportFor(chain.getClass()).sending(chain);
  }

  @Override
  public void sendFailed(Object chain, Object failure) {
    supportFor(chain.getClass()).sendFailed(chain, failure);
  }

  /** For an OkHttp copy the agent cannot serve: everything passes through. */
  private static final class Inert implements OkHttpSupport {
    static final Inert INSTANCE = new Inert();

    @Override
    public void builderCreated(Object builder) {}

    @Override
    public Object enqueue(Object call, Object client, Object callback) {
      return null;
    }

    @Override
    public void cancel(Object call) {}

    @Override
    public void sending(Object chain) {}

    @Override
    public void sendFailed(Object chain, Object failure) {}
  }
}
