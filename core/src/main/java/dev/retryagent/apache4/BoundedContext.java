package dev.retryagent.apache4;

import dev.retryagent.engine.RetryCall;
import dev.retryagent.internal.TimeoutMillis;
import java.lang.reflect.Field;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.http.HttpConnection;
import org.apache.http.client.config.RequestConfig;
import org.apache.http.conn.HttpClientConnectionManager;
import org.apache.http.impl.client.CloseableHttpClient;
import org.apache.http.protocol.HttpContext;
import org.apache.http.util.VersionInfo;

/**
 * The context of an attempt the policy bounds ({@code retry.perAttemptTimeout}, and for a retry the
 * time left before {@code retry.deadline}): each of HttpClient's timeouts for the attempt becomes
 * the shorter of the application's and the bound ({@link TimeoutMillis#shorter}). A timeout the
 * application set shorter is left as it is, so that when it fires the application gets what it
 * would get without the agent. The application's objects (its request's config, its context, its
 * client's default config) are never changed: HttpClient is handed shortened copies on the way.
 *
 * <ul>
 *   <li>The connection-request and connect timeouts: HttpClient reads them from the context's
 *       {@code http.request-config}, which {@code InternalHttpClient} fills as it would without the
 *       agent (the request's own config, else the context's, else the client's default): that read
 *       gets a copy with the two shortened, made once per attempt, the application's context keeps
 *       its own (also when an interceptor of the application's sets a copy of what it read: {@link
 *       #unshortened}). A context without one reads as without one, so that {@code
 *       InternalHttpClient} still puts its default there; only {@code MinimalHttpClient}, which has
 *       no default, then keeps its {@code RequestConfig.DEFAULT} (no timeouts) for these two. The
 *       deprecated {@code AbstractHttpClient} reads them from its {@code HttpParams}, which are
 *       left as they are.
 *   <li>The socket timeout, as the connection has it when a request is about to be written on it
 *       ({@code http.request_sent = false}): whatever set it (the {@code RequestConfig}'s socket
 *       timeout, the connection manager's {@code SocketConfig} when that is -1, the deprecated
 *       {@code AbstractHttpClient}'s parameters), it is shortened on the connection itself where it
 *       is known to be put back before another call uses the connection ({@code
 *       PoolingHttpClientConnectionManager}'s connections from 4.5.4 on, {@code
 *       BasicHttpClientConnectionManager}'s when the client names it, and those of the deprecated
 *       {@code AbstractHttpClient}); elsewhere, where the bound could stay on a kept-alive
 *       connection, the socket timeout is left as it is ({@link ResetsSocketTimeout}).
 * </ul>
 *
 * When a shortened timeout fires the application gets HttpClient's own exception for it ({@code
 * ConnectionPoolTimeoutException}, {@code ConnectTimeoutException}, {@code
 * SocketTimeoutException}), which the policy judges as any such failure. What HttpClient resends
 * itself within the attempt (its retry handler, a redirect, an authentication round) reads the same
 * copies: each exchange gets the whole bound, as each of its phases does.
 */
final class BoundedContext extends ObservingContext {
  static final String REQUEST_CONFIG = "http.request-config";
  static final String CONNECTION = "http.connection";

  private final long boundNanos;
  // The config last read from the application's context, and what the attempt reads for it.
  private RequestConfig own;
  private RequestConfig shortened;

  /**
   * @param boundNanos the policy's bound on the attempt ({@link RetryCall#attemptTimeoutNanos()}),
   *     0 or more
   */
  BoundedContext(HttpContext delegate, RetryCall call, long boundNanos) {
    super(delegate, call);
    this.boundNanos = boundNanos;
  }

  @Override
  public Object getAttribute(String id) {
    Object value = super.getAttribute(id);
    if (REQUEST_CONFIG.equals(id) && value instanceof RequestConfig) {
      return shortened((RequestConfig) value);
    }
    return value;
  }

  @Override
  public void setAttribute(String id, Object obj) {
    if (REQUEST_CONFIG.equals(id) && obj instanceof RequestConfig) {
      obj = unshortened((RequestConfig) obj);
    }
    super.setAttribute(id, obj);
    if (REQUEST_SENT.equals(id) && Boolean.FALSE.equals(obj)) {
      // HttpCore's HttpRequestExecutor names the connection just before, and HttpClient set the
      // socket timeout it means for this exchange on it (or left the connection manager's).
      Object connection = super.getAttribute(CONNECTION);
      if (connection instanceof HttpConnection) {
        shortenSocketTimeout((HttpConnection) connection);
      }
    }
  }

  private RequestConfig shortened(RequestConfig config) {
    if (config != own) {
      int request = TimeoutMillis.shorter(config.getConnectionRequestTimeout(), boundNanos);
      int connect = TimeoutMillis.shorter(config.getConnectTimeout(), boundNanos);
      shortened =
          request == config.getConnectionRequestTimeout() && connect == config.getConnectTimeout()
              ? config
              : RequestConfig.copy(config)
                  .setConnectionRequestTimeout(request)
                  .setConnectTimeout(connect)
                  .build();
      own = config;
    }
    return shortened;
  }

  /**
   * What the application's context gets for a config written during the attempt: an application
   * interceptor that sets a copy of the config it read (the shortened one) with a value of its own
   * changed must leave its context holding its own connect and connection-request timeouts, as
   * without the agent; the context may serve later calls, which would otherwise run under this
   * attempt's bound. A timeout still at the value the copy had is the application's own again; one
   * it set to that very value itself cannot be told apart and is kept as its own too (the attempt
   * reads the bound either way).
   */
  private RequestConfig unshortened(RequestConfig set) {
    if (shortened == null || shortened == own) {
      return set; // nothing shortened handed out: whatever is written is the application's own
    }
    if (set == shortened) {
      return own;
    }
    int request =
        unshortened(
            set.getConnectionRequestTimeout(),
            shortened.getConnectionRequestTimeout(),
            own.getConnectionRequestTimeout());
    int connect =
        unshortened(
            set.getConnectTimeout(), shortened.getConnectTimeout(), own.getConnectTimeout());
    return request == set.getConnectionRequestTimeout() && connect == set.getConnectTimeout()
        ? set
        : RequestConfig.copy(set)
            .setConnectionRequestTimeout(request)
            .setConnectTimeout(connect)
            .build();
  }

  private static int unshortened(int set, int shortened, int own) {
    return set == shortened && shortened != own ? own : set;
  }

  private void shortenSocketTimeout(HttpConnection connection) {
    if (!ResetsSocketTimeout.OF.get(connection.getClass()) && !basicManagersConnection()) {
      return; // the bound could stay on the kept-alive connection and reach later calls
    }
    int current = connection.getSocketTimeout();
    if (current < 0) {
      return; // not readable (no socket): HttpClient fails the write on its own
    }
    int bounded = TimeoutMillis.shorter(current, boundNanos);
    if (bounded != current) {
      connection.setSocketTimeout(bounded);
    }
  }

  /**
   * Whether the attempt's connection is one of HttpClient's own {@code
   * BasicHttpClientConnectionManager}, which puts its socket timeout back (to 0) when it is
   * released (4.5.4 and later; it gives the connection the {@code SocketConfig}'s at its next
   * lease): the connection, HttpClient's plain one, does not tell it (a manager of the
   * application's may make the same), the client does, when the transport names it ({@code
   * Transport.client}: the agent's and {@link RetryingCloseableHttpClient}'s do). Read from {@code
   * InternalHttpClient}'s or {@code MinimalHttpClient}'s private {@code connManager}, that class
   * itself and no subclass (one may release its own way); anything else, or a field not to be read:
   * no. Asked once per exchange of a bounded attempt, where the connection's class alone does not
   * say. A field there but not to be read (a security manager, a JVM that refuses the access: not
   * one simply absent, or of another type, on a release that has none) is said once per JVM ({@link
   * #unreadable}): before, the socket timeout stayed unbounded without a word.
   */
  private boolean basicManagersConnection() {
    Object call = super.getAttribute(GovernedRetryHandler.CALL_ATTRIBUTE);
    Call4 call4 = call instanceof Call4 ? (Call4) call : null;
    CloseableHttpClient client = call4 == null ? null : call4.client();
    Object found = client == null ? null : ConnManagerField.OF.get(client.getClass());
    if (!(found instanceof Field)) {
      if (found instanceof Throwable) {
        unreadable(UNREADABLE_SAID, call4, (Throwable) found);
      }
      return false;
    }
    try {
      Object manager = ((Field) found).get(client);
      return manager != null
          && ResetsSocketTimeout.BASIC.equals(manager.getClass().getName())
          && ResetsSocketTimeout.OF.get(manager.getClass());
    } catch (IllegalAccessException | RuntimeException e) {
      unreadable(UNREADABLE_SAID, call4, e);
      return false;
    }
  }

  // Whether unreadable() has said it in this JVM.
  private static final AtomicBoolean UNREADABLE_SAID = new AtomicBoolean();

  /**
   * Says once ({@code said}: the JVM's, or a test's own) as an internal error of {@code call}'s
   * engine that the client's {@code connManager} could not be read ({@code failure}), and what that
   * leaves unbounded.
   */
  static void unreadable(AtomicBoolean said, Call4 call, Throwable failure) {
    if (said.compareAndSet(false, true)) {
      call.internalError(
          "reading HttpClient 4.5's connManager to bound the socket timeout",
          failure,
          "an attempt on a connection of BasicHttpClientConnectionManager keeps its socket timeout"
              + " unbounded by perAttemptTimeout, as without the agent (said once per JVM)");
    }
  }

  /**
   * The private {@code connManager} of HttpClient's own clients that have one: the field, made
   * readable; null when the class is not one of them or has no such field (another release); the
   * failure when it has one that cannot be made readable.
   */
  static final class ConnManagerField extends ClassValue<Object> {
    static final ConnManagerField OF = new ConnManagerField();

    @Override
    protected Object computeValue(Class<?> type) {
      String name = type.getName();
      if (!name.equals("org.apache.http.impl.client.InternalHttpClient")
          && !name.equals("org.apache.http.impl.client.MinimalHttpClient")) {
        return null;
      }
      return find(type, "connManager", HttpClientConnectionManager.class);
    }

    /**
     * {@code type}'s field {@code name} of a {@code fieldType}, made readable; null when it has
     * none (absent, or of another type); the failure to make it readable.
     */
    static Object find(Class<?> type, String name, Class<?> fieldType) {
      Field f;
      try {
        f = type.getDeclaredField(name);
      } catch (NoSuchFieldException | RuntimeException | LinkageError absent) {
        return null; // another release
      }
      if (!fieldType.isAssignableFrom(f.getType())) {
        return null;
      }
      try {
        f.setAccessible(true);
        return f;
      } catch (RuntimeException e) {
        return e; // there, and refused: a security manager, a module not opened
      }
    }
  }

  /**
   * Whether a connection of this class (or of a manager of this class) gets its socket timeout back
   * before another call can use it, so that an attempt's bound set on it reaches no later call: a
   * connection of HttpClient's {@code PoolingHttpClientConnectionManager} ({@code CPoolProxy}, also
   * when a manager of the application's hands it out and gives it back through one), whose release
   * sets it to 0 (4.5.4 and later; HttpClient sets its own on the next exchange), and one of the
   * deprecated {@code AbstractHttpClient}'s managers ({@code ManagedClientConnection}), to which
   * its request director gives the socket timeout of its {@code HttpParams} on every exchange. Any
   * other connection, and any before 4.5.4, keeps the bound when it goes back: a later call whose
   * {@code RequestConfig} sets no socket timeout, with no bound of its own or not even under a
   * policy, ran under it where without the agent it ran under the connection's own. There the
   * socket timeout is left as it is (the connect and connection-request timeouts are still
   * bounded). That is so for {@code BasicHttpClientConnectionManager} too, which does put it back,
   * because its connection is HttpClient's plain one ({@code DefaultManagedHttpClientConnection}),
   * which a manager of the application's that does not may hand out as well: the context names the
   * connection, never the manager (the client names it: {@link #basicManagersConnection}, which
   * asks this of the manager's class). Read once per class, the release from HttpClient's own
   * {@code version.properties} beside it; unknown: left as it is.
   */
  static final class ResetsSocketTimeout extends ClassValue<Boolean> {
    static final ResetsSocketTimeout OF = new ResetsSocketTimeout();
    // The connection PoolingHttpClientConnectionManager hands out (package-private).
    static final String POOLED = "org.apache.http.impl.conn.CPoolProxy";
    // The manager whose connections' socket timeout it puts back, named by the client.
    static final String BASIC = "org.apache.http.impl.conn.BasicHttpClientConnectionManager";

    @Override
    @SuppressWarnings("deprecation")
    protected Boolean computeValue(Class<?> type) {
      boolean given =
          POOLED.equals(type.getName())
              || BASIC.equals(type.getName())
              || org.apache.http.conn.ManagedClientConnection.class.isAssignableFrom(type);
      return given && resets(type.getClassLoader());
    }

    /** Whether the HttpClient {@code loader} holds resets the socket timeout on release. */
    static boolean resets(ClassLoader loader) {
      VersionInfo info = VersionInfo.loadVersionInfo("org.apache.http.client", loader);
      return info != null && resets(info.getRelease());
    }

    /**
     * Whether HttpClient {@code release} (as in its {@code version.properties}) is 4.5.4 or later.
     */
    static boolean resets(String release) {
      if (release == null) {
        return false;
      }
      String[] parts = release.split("[.-]");
      if (parts.length < 3) {
        return false;
      }
      try {
        int major = Integer.parseInt(parts[0]);
        int minor = Integer.parseInt(parts[1]);
        int patch = Integer.parseInt(parts[2]);
        return major > 4 || (major == 4 && (minor > 5 || (minor == 5 && patch >= 4)));
      } catch (NumberFormatException e) {
        return false;
      }
    }
  }
}
