package dev.retryagent.agent.apache.glue;

import dev.retryagent.agent.apache.ApacheEntry;
import dev.retryagent.agent.apache.ApacheSupport;
import dev.retryagent.agent.tooling.Bridge;
import dev.retryagent.apache4.ApacheRetrying4;
import java.io.IOException;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import org.apache.http.HttpHost;
import org.apache.http.HttpRequest;
import org.apache.http.client.methods.CloseableHttpResponse;
import org.apache.http.impl.client.CloseableHttpClient;
import org.apache.http.impl.client.HttpClientBuilder;
import org.apache.http.protocol.HttpContext;

/**
 * The agent's side of one copy of HttpClient 4.5: takes over {@code doExecute} and runs the call
 * through core's {@link ApacheRetrying4}, each attempt through the original {@code doExecute} of
 * the very client the application called (a pass-through token lets it run unhooked), called
 * directly, not through the client's public {@code execute}: a subclass's {@code execute} (one that
 * signs the request, say) already ran once for the call, as without the agent; and gives every
 * {@code HttpClientBuilder}, when it is made, HttpClient's default retry handler governed by the
 * call in progress ({@link ApacheRetrying4#governRetries}).
 *
 * <p>Exception contract: anything thrown before the call is handed to the engine escapes, and the
 * bridge then lets the original method run; from that point on every throwable becomes the outcome
 * and reaches the caller unchanged, so a request is never repeated behind the engine's back.
 */
public final class Apache4Glue implements ApacheSupport {
  static {
    ApacheSupport.Handoff.register(new Apache4Glue(ApacheSupport.Handoff.agent()));
  }

  private final ApacheSupport.Agent agent;
  private volatile ApacheRetrying4 retrying;

  private Apache4Glue(ApacheSupport.Agent agent) {
    this.agent = agent;
  }

  @Override
  public void builderCreated(Object builder) {
    // A builder just made: HttpClient's default retry handler, governed by the call in progress
    // (found in the attempt's context, so nothing here needs the engine yet).
    ApacheRetrying4.governRetries((HttpClientBuilder) builder);
  }

  @Override
  public Object execute(Object client, Object target, Object request, Object context) {
    if (!agent.enabled()) {
      return null;
    }
    PassThrough transport = new PassThrough((CloseableHttpClient) client);
    HttpHost t = (HttpHost) target;
    HttpRequest r = (HttpRequest) request;
    HttpContext c = (HttpContext) context;
    ApacheRetrying4 runner = retrying();
    try {
      CloseableHttpResponse response = runner.execute(transport, t, r, c);
      return Bridge.returned(response);
    } catch (Throwable e) {
      return e;
    }
  }

  /**
   * One attempt of the application's own copy of the library's adapter ({@code
   * RetryingCloseableHttpClient}), made on its real client with a pass-through token, as {@link
   * PassThrough} makes the agent's own: the library alone retries the call, with its policies, as
   * without the agent. Its outcome, a failure included, is the library's to judge. Made even while
   * the client is switched off: the library's calls are never the agent's.
   */
  @Override
  public Object libraryExecute(Object client, Object target, Object request, Object context) {
    try {
      return Bridge.returned(
          PassThrough.attempt(
              (CloseableHttpClient) client,
              (HttpHost) target,
              (HttpRequest) request,
              (HttpContext) context));
    } catch (Throwable e) {
      return e; // the prologue throws it
    }
  }

  /** The runner, and with it the engine, made on the first call. */
  private ApacheRetrying4 retrying() {
    ApacheRetrying4 r = retrying;
    if (r == null) {
      synchronized (this) {
        r = retrying;
        if (r == null) {
          r = new ApacheRetrying4(agent.engine());
          retrying = r;
        }
      }
    }
    return r;
  }

  /**
   * One attempt: the client's own {@code doExecute}, which the hook lets through once. Not its
   * public {@code execute}: the application's call already went through that, and a subclass of
   * {@code DefaultHttpClient} that overrides it (to add a signing header, say) would run its
   * override again for each attempt (the header sent twice on a call never retried), and could make
   * another hooked call first, which would take the token.
   */
  private static final class PassThrough implements ApacheRetrying4.Transport {
    private final CloseableHttpClient client;

    PassThrough(CloseableHttpClient client) {
      this.client = client;
    }

    @Override
    public CloseableHttpResponse execute(HttpHost target, HttpRequest request, HttpContext context)
        throws IOException {
      MethodHandle doExecute = DoExecute.HANDLE;
      if (doExecute == null) {
        return attempt(client, target, request, context);
      }
      ApacheEntry.PASS_THROUGH.next();
      try {
        return (CloseableHttpResponse) doExecute.invokeExact(client, target, request, context);
      } catch (Throwable e) {
        // As the public execute would let it through: a checked exception doExecute does not
        // declare (thrown sneakily by an interceptor) reaches the caller unchanged, not wrapped.
        throw DoExecute.<RuntimeException>rethrow(e);
      } finally {
        ApacheEntry.PASS_THROUGH.clear();
      }
    }

    @Override
    public CloseableHttpClient client() {
      return client;
    }

    /**
     * An attempt through the client's public {@code execute}: the library's own attempts (it calls
     * that without the agent too), and the agent's where {@code doExecute} cannot be reached.
     */
    static CloseableHttpResponse attempt(
        CloseableHttpClient client, HttpHost target, HttpRequest request, HttpContext context)
        throws IOException {
      ApacheEntry.PASS_THROUGH.next();
      try {
        return client.execute(target, request, context);
      } finally {
        ApacheEntry.PASS_THROUGH.clear();
      }
    }
  }

  /**
   * {@code CloseableHttpClient.doExecute} (protected), looked up once per copy of HttpClient, at
   * its first attempt: null where HttpClient's package is not open to the glue (a named module of
   * its own), whose attempts then go through the public {@code execute}, as before.
   */
  private static final class DoExecute {
    static final MethodHandle HANDLE = find();

    private DoExecute() {}

    @SuppressWarnings("unchecked")
    static <T extends Throwable> T rethrow(Throwable e) throws T {
      throw (T) e;
    }

    private static MethodHandle find() {
      try {
        return MethodHandles.privateLookupIn(CloseableHttpClient.class, MethodHandles.lookup())
            .findVirtual(
                CloseableHttpClient.class,
                "doExecute",
                MethodType.methodType(
                    CloseableHttpResponse.class,
                    HttpHost.class,
                    HttpRequest.class,
                    HttpContext.class));
      } catch (ReflectiveOperationException | RuntimeException e) {
        return null;
      }
    }
  }
}
