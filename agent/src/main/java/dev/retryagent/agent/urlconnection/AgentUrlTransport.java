package dev.retryagent.agent.urlconnection;

import dev.retryagent.agent.runtime.AgentLog;
import dev.retryagent.urlconnection.UrlTransport;
import java.io.IOException;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.net.HttpURLConnection;
import java.net.Proxy;
import java.net.URL;
import java.net.URLConnection;
import java.util.ArrayList;
import java.util.List;

/**
 * The agent's attempts: each further one is the JDK's own connection, opened through the hooked
 * handler with the hook passed by; the JDK's two silent resends are reached from the hooks.
 *
 * <ul>
 *   <li>The resend after a failed read on a kept-alive connection ({@code HttpClient.parseHTTP}):
 *       switched off for a step of an attempt the engine would not repeat after a reset (a POST
 *       without key), counted as an attempt where it is allowed.
 *   <li>The rewrite after a failed write ({@code HttpURLConnection.writeRequests}): left as it is
 *       and counted, from the connection's own {@code failedOnce} field.
 * </ul>
 *
 * Thread-safe: the state of a step is the thread's.
 */
final class AgentUrlTransport implements UrlTransport {
  /** A step of an attempt in progress on this thread. */
  private static final class Step {
    boolean active;
    UrlTransport.JdkResend resend;
    int resends;

    /**
     * The JDK clients whose response read this step let the JDK resend (usually one), until it
     * does: only such a read can lead to a resend (see {@link #parsing}).
     */
    final List<Object> allowed = new ArrayList<>(2);

    /**
     * The step this one runs inside of, on the same thread, or null: code the JDK calls during a
     * step (a {@code ProxySelector} or {@code Authenticator} that makes its own connection) makes
     * steps of another call's attempts, and the outer step goes on after them as it was.
     */
    final Step outer;

    Step(Step outer) {
      this.outer = outer;
    }
  }

  private final ThreadLocal<Step> steps = new ThreadLocal<>();

  /** A JDK connection for an attempt: the hooked handler lets it through (a pass-through token). */
  @Override
  public URLConnection open(URL url, Proxy proxy) throws IOException {
    UrlEntry.PASS_THROUGH.next();
    try {
      return proxy == null ? url.openConnection() : url.openConnection(proxy);
    } finally {
      UrlEntry.PASS_THROUGH.clear();
    }
  }

  @Override
  public void beforeStep(UrlTransport.JdkResend resend) {
    Step s = steps.get();
    if (s == null || s.active) {
      // A thread's first step, or one nested in a step in progress, which must not take over
      // (and, ending, switch off) the outer one: its resend switch and count stay as they are.
      s = new Step(s);
      steps.set(s);
    }
    s.active = true;
    s.resend = resend;
    s.resends = 0;
    s.allowed.clear();
  }

  @Override
  public int afterStep() {
    Step s = steps.get();
    if (s == null) {
      return 0;
    }
    s.active = false;
    s.resend = null; // the exchange's: the thread's step must not hold it past the step
    s.allowed.clear(); // nor the JDK's clients
    if (s.outer != null) {
      steps.set(s.outer); // the step this one was nested in goes on
    }
    return s.resends;
  }

  /**
   * What {@code HttpClient.parseHTTP} is told when it starts ({@code Bridge.URL_RESEND}): the value
   * {@code failedOnce} is to have, or {@code null} outside the agent's attempts (the JDK's own
   * stays). Inside one, true (no resend) when the step must not be resent. The step's rule is asked
   * here, as each response is read, not when the step began: a redirect the JDK followed since may
   * have turned a POST into a GET, which it may send again ({@link UrlTransport.JdkResend}). The
   * results are {@code Boolean}'s cached instances.
   *
   * <p>The JDK resends from inside a {@code parseHTTP} that started with {@code failedOnce} false
   * and failed: it sets the field and calls {@code parseHTTP} again, on the same thread, so in the
   * same step, after this step let that first read resend. Only then is true on entry a resend,
   * counted once (a resend through a proxy reads the proxy's {@code CONNECT} reply first, the
   * request's response next, both entering with true). Any other true on entry is left over, and
   * the JDK does not resend on it: the agent's own switch from an earlier read whose response did
   * not reset the field (a proxy's {@code CONNECT} reply, a {@code 100 Continue}: the JDK resets it
   * only after a response it can keep alive), so from an earlier step ({@code connect()}, {@code
   * getOutputStream()}), or the JDK's mark on a client it gave up on. Counted, it made an extra
   * attempt, a retry taken from the budget and a failure for the host's breaker of a call that sent
   * one request.
   */
  Boolean parsing(Object client, boolean failedOnce) {
    Step s = steps.get();
    if (s == null || !s.active) {
      return null;
    }
    if (failedOnce) {
      if (removeAllowed(s, client)) {
        s.resends++; // the JDK is sending the request again
      }
      return Boolean.TRUE;
    }
    if (!s.resend.mayResend()) {
      removeAllowed(s, client); // a later true on entry is the agent's switch, not a resend
      return Boolean.TRUE;
    }
    if (!isAllowed(s, client)) {
      s.allowed.add(client);
    }
    return Boolean.FALSE;
  }

  private static boolean isAllowed(Step s, Object client) {
    for (Object c : s.allowed) {
      if (c == client) {
        return true;
      }
    }
    return false;
  }

  /** Takes {@code client} out of the step's allowed reads: true when it was in. */
  private static boolean removeAllowed(Step s, Object client) {
    for (int i = s.allowed.size() - 1; i >= 0; i--) {
      if (s.allowed.get(i) == client) {
        s.allowed.remove(i);
        return true;
      }
    }
    return false;
  }

  @Override
  public int rewrites(HttpURLConnection attempt) {
    JdkFields f = JdkFields.get();
    return f != null && f.rewrote(attempt) ? 1 : 0;
  }

  /**
   * The private fields the write-error resend leaves its mark in, reached through the access the
   * agent's module was given to {@code sun.net.www.protocol.http(s)}; looked up on first use.
   */
  private static final class JdkFields {
    private static volatile JdkFields instance;
    private static volatile boolean unavailable;

    private final Class<?> http;
    private final Class<?> https;
    private final MethodHandle failedOnce;
    private final MethodHandle delegate;

    private JdkFields() throws ReflectiveOperationException {
      http = Class.forName("sun.net.www.protocol.http.HttpURLConnection");
      https = Class.forName("sun.net.www.protocol.https.HttpsURLConnectionImpl");
      Class<?> delegateType =
          Class.forName("sun.net.www.protocol.https.DelegateHttpsURLConnection");
      MethodHandles.Lookup me = MethodHandles.lookup();
      failedOnce =
          MethodHandles.privateLookupIn(http, me).findGetter(http, "failedOnce", boolean.class);
      delegate =
          MethodHandles.privateLookupIn(https, me).findGetter(https, "delegate", delegateType);
    }

    static JdkFields get() {
      JdkFields f = instance;
      if (f != null || unavailable) {
        return f;
      }
      synchronized (JdkFields.class) {
        if (instance == null && !unavailable) {
          try {
            instance = new JdkFields();
          } catch (ReflectiveOperationException | RuntimeException e) {
            unavailable = true;
            AgentLog.error(
                "url-connection: the JDK's rewrite of a request after a write error is not"
                    + " counted as an attempt on this JDK ("
                    + e
                    + ")");
          }
        }
        return instance;
      }
    }

    /** True when the JDK wrote {@code attempt}'s request a second time after a write error. */
    boolean rewrote(HttpURLConnection attempt) {
      try {
        Object engine = https.isInstance(attempt) ? delegate.invoke(attempt) : attempt;
        return http.isInstance(engine) && (boolean) failedOnce.invoke(engine);
      } catch (Throwable t) {
        return false;
      }
    }
  }
}
