package dev.retryagent.agent.apache;

import dev.retryagent.agent.runtime.AgentLog;
import dev.retryagent.agent.tooling.CauseLine;
import dev.retryagent.agent.tooling.GlueClassLoader;
import dev.retryagent.agent.tooling.LoaderNames;

/**
 * Receives the HttpClient hooks from {@link ApacheEntry} and passes each to the {@link
 * ApacheSupport} of the HttpClient copy it came from, made on first use of that copy: one glue
 * loader per copy of 4.5 (keyed by its {@code CloseableHttpClient}, so its three hooked clients and
 * its builder share one) and per copy of 5.x (keyed by its {@code HttpClientBuilder}).
 *
 * <p>Caching without leaks, as for OkHttp (docs/okhttp.md): {@link ClassValue}s keyed by the hooked
 * class and by the copy's key class; a value reaches its key only through the copy's own loader,
 * and nothing in the agent's loader holds either, so a dropped copy (an undeployed web application)
 * is collected with everything the agent made for it.
 */
final class ApacheLoaders implements ApacheHandler {
  static final String GLUE_PACKAGE = "dev.retryagent.agent.apache.glue.";
  private static final String KEY_4 = "org.apache.http.impl.client.CloseableHttpClient";
  private static final String KEY_5 = "org.apache.hc.client5.http.impl.classic.HttpClientBuilder";
  private static final String BUILDER_4 = "org.apache.http.impl.client.HttpClientBuilder";

  private final ApacheSupport.Agent agent;
  private final ClassLoader agentLoader;

  private final ClassValue<ApacheSupport> byKey =
      new ClassValue<ApacheSupport>() {
        @Override
        protected ApacheSupport computeValue(Class<?> key) {
          boolean four = key.getName().equals(KEY_4);
          if (!four && !isFiveOneOrLater(key.getClassLoader())) {
            AgentLog.info(
                "apache-httpclient 5.0.x in "
                    + LoaderNames.describe(key.getClassLoader())
                    + " is left alone (the agent supports HttpClient 5 from 5.1 on): its clients"
                    + " run without retries, as without the agent");
            return Inert.INSTANCE;
          }
          return make(key.getClassLoader(), four);
        }
      };

  /** 4.5: the class of a client whose doExecute was hooked, or of a builder, to its support. */
  private final ClassValue<ApacheSupport> byClient4 = new ByHookedClass(KEY_4);

  /** 5.x: the class of a builder (HttpClientBuilder or a subclass), to its copy's support. */
  private final ClassValue<ApacheSupport> byBuilder5 = new ByHookedClass(KEY_5);

  /** Finds the copy's key class through the hooked class's loader (which may be a subclass's). */
  private final class ByHookedClass extends ClassValue<ApacheSupport> {
    private final String keyName;

    ByHookedClass(String keyName) {
      this.keyName = keyName;
    }

    @Override
    protected ApacheSupport computeValue(Class<?> hooked) {
      try {
        return byKey.get(Class.forName(keyName, false, hooked.getClassLoader()));
      } catch (ClassNotFoundException | LinkageError e) {
        return failed(hooked.getClassLoader(), e);
      }
    }
  }

  ApacheLoaders(ApacheSupport.Agent agent, ClassLoader agentLoader) {
    this.agent = agent;
    this.agentLoader = agentLoader;
  }

  private ApacheSupport make(ClassLoader libraryLoader, boolean four) {
    try {
      GlueClassLoader loader =
          new GlueClassLoader(
              "retry-agent-apache",
              libraryLoader,
              agentLoader,
              GLUE_PACKAGE,
              "dev.retryagent.internal.apache.",
              four ? "dev.retryagent.apache4." : "dev.retryagent.apache5.");
      return ApacheSupport.Handoff.make(
          GLUE_PACKAGE + (four ? "Apache4Glue" : "Apache5Glue"), loader, agent);
    } catch (ClassNotFoundException | RuntimeException | LinkageError e) {
      return failed(libraryLoader, e);
    }
  }

  /**
   * A class HttpClient 5.1 added and every later 5.x keeps. 5.0.x is not served: the library's
   * handler needs HttpCore 5.1 ({@code ClassicRequestBuilder.copy}, which HttpClient 5.1 requires
   * and 5.0.x does not: its own HttpCore 5.0 lacks it, so a retry would fail with a {@code
   * NoSuchMethodError}), and 5.0's retry strategy and chain were never tested with it. Looked up
   * without initialising it: nothing of HttpClient's runs.
   */
  static final String SINCE_5_1 =
      "org.apache.hc.client5.http.impl.DefaultClientConnectionReuseStrategy";

  /** True when the HttpClient 5 of {@code loader} is 5.1 or later. */
  static boolean isFiveOneOrLater(ClassLoader loader) {
    try {
      Class.forName(SINCE_5_1, false, loader);
      return true;
    } catch (ClassNotFoundException | LinkageError e) {
      return false;
    }
  }

  /** Said once per HttpClient copy; that copy then runs without retries. */
  private static ApacheSupport failed(ClassLoader libraryLoader, Throwable cause) {
    AgentLog.error(
        "apache-httpclient in "
            + LoaderNames.describe(libraryLoader)
            + " runs without retries: the agent's HttpClient support could not be loaded there ("
            + CauseLine.of(cause)
            + ")");
    return Inert.INSTANCE;
  }

  @Override
  public void builderCreated(Object builder) {
    ClassValue<ApacheSupport> byCopy = isBuilder4(builder.getClass()) ? byClient4 : byBuilder5;
    byCopy.get(builder.getClass()).builderCreated(builder);
  }

  /**
   * True for 4.5's {@code HttpClientBuilder} or a subclass of it (the hook is in its constructor).
   */
  private static boolean isBuilder4(Class<?> c) {
    for (Class<?> k = c; k != null; k = k.getSuperclass()) {
      if (k.getName().equals(BUILDER_4)) {
        return true;
      }
    }
    return false;
  }

  @Override
  public Object execute(Object client, Object target, Object request, Object context) {
    return byClient4.get(client.getClass()).execute(client, target, request, context);
  }

  @Override
  public Object libraryExecute(Object client, Object target, Object request, Object context) {
    return byClient4.get(client.getClass()).libraryExecute(client, target, request, context);
  }

  /** For an HttpClient copy the agent cannot serve: everything passes through. */
  private static final class Inert implements ApacheSupport {
    static final Inert INSTANCE = new Inert();

    @Override
    public void builderCreated(Object builder) {}

    @Override
    public Object execute(Object client, Object target, Object request, Object context) {
      return null;
    }
  }
}
