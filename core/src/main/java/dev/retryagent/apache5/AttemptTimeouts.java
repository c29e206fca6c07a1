package dev.retryagent.apache5;

import dev.retryagent.engine.CallBounds;
import dev.retryagent.internal.TimeoutMillis;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import org.apache.hc.client5.http.HttpRoute;
import org.apache.hc.client5.http.classic.ExecChain;
import org.apache.hc.client5.http.config.RequestConfig;
import org.apache.hc.client5.http.impl.io.BasicHttpClientConnectionManager;
import org.apache.hc.client5.http.impl.io.PoolingHttpClientConnectionManager;
import org.apache.hc.client5.http.impl.nio.PoolingAsyncClientConnectionManager;
import org.apache.hc.core5.http.io.SocketConfig;
import org.apache.hc.core5.reactor.IOReactorConfig;
import org.apache.hc.core5.util.Timeout;

/**
 * The timeouts of one attempt of an HttpClient 5.x call, classic or async, under the policy's bound
 * ({@code perAttemptTimeout}, and for a retry the time left before the deadline): each of the
 * pool's lease, the connect and the response becomes the shorter of the application's own and the
 * bound ({@link CallBounds#shorterTimeout}), and the application's is left as it is when it is the
 * shorter, so that it fires as it would without us.
 *
 * <p>The application's own is what HttpClient would use for the attempt: the request's config in
 * the context (the request's own, else the client's default), and where that leaves the connect or
 * the response timeout unset, what the connection manager applies: its {@code ConnectionConfig}
 * (5.2+) for the route, else the socket timeout its connections were made with (the classic
 * manager's {@code SocketConfig}, the async client's {@code IOReactorConfig}), as HttpClient's own
 * {@code PoolingHttpClientConnectionManager}, {@code BasicHttpClientConnectionManager} and {@code
 * PoolingAsyncClientConnectionManager} do (read reflectively: none shows them). A connection
 * manager of another kind, a runtime without one (the HTTP/2-only async client's), or one we cannot
 * read keeps that timeout as it is: shortening it blindly could make it longer than the one the
 * manager applies, which the application would then wait for in vain.
 */
final class AttemptTimeouts {
  /** Returned for a timeout of the manager's that cannot be read. */
  static final long UNKNOWN = -1;

  private AttemptTimeouts() {}

  /**
   * The config for an attempt bounded by {@code limitNanos} (0 or more), or null when {@code own}
   * is already no longer anywhere. The bound is rounded up to whole milliseconds, never 0 (which
   * HttpClient reads as no timeout).
   */
  static RequestConfig bounded(RequestConfig own, ExecChain.Scope scope, long limitNanos) {
    return bounded(own, scope.execRuntime, scope.route, limitNanos, true);
  }

  /**
   * As {@link #bounded(RequestConfig, ExecChain.Scope, long)}, for the call of {@code runtime}
   * (HttpClient's async exec runtime) to {@code route}.
   */
  static RequestConfig bounded(
      RequestConfig own, Object runtime, HttpRoute route, long limitNanos) {
    return bounded(own, runtime, route, limitNanos, false);
  }

  /**
   * {@code classic}: a connection-request timeout of 0 is no wait at all (the classic lease's
   * {@code Future.get(0)} fails a lease not granted at once, 5.1 to 5.6), the shortest there is,
   * kept; to the async pool 0 is no limit (its lease request waits for good), bounded.
   */
  private static RequestConfig bounded(
      RequestConfig own, Object runtime, HttpRoute route, long limitNanos, boolean classic) {
    Timeout bound = roundedUp(limitNanos);
    long limit = bound.toNanoseconds();
    RequestConfig.Builder b = null;
    Timeout lease = own.getConnectionRequestTimeout();
    boolean noWait = classic && lease != null && lease.toNanoseconds() <= 0;
    if (!noWait && CallBounds.shorterTimeout(limit, nanos(lease)) >= 0) {
      b = RequestConfig.copy(own).setConnectionRequestTimeout(bound);
    }
    Timeout connect = own.getConnectTimeout(); // deprecated from 5.2 on, still honoured when set
    if (shorter(limit, connect != null ? nanos(connect) : managerConnectNanos(runtime, route))) {
      b = (b != null ? b : RequestConfig.copy(own)).setConnectTimeout(bound);
    }
    Timeout response = own.getResponseTimeout();
    if (shorter(limit, response != null ? nanos(response) : managerSocketNanos(runtime, route))) {
      b = (b != null ? b : RequestConfig.copy(own)).setResponseTimeout(bound);
    }
    return b == null ? null : b.build();
  }

  /**
   * What the application's context gets back after an attempt that ran under {@code bounded}, the
   * copy made from {@code own} (null: the context held none), given {@code now}, what the context
   * holds at the attempt's end: the copy itself gives back {@code own}. A config set during the
   * attempt (an interceptor of the application's that set a copy of the one it read, a value of its
   * own changed) stays, as it stays without the agent (a later call in the context runs under it),
   * but with the application's own timeout wherever it still has the copy's: the attempt's bound
   * must not reach later calls. A null {@code bounded} (no copy was set): {@code now} as it is.
   */
  static RequestConfig unshortened(RequestConfig now, RequestConfig bounded, RequestConfig own) {
    if (now == bounded) {
      return own;
    }
    if (bounded == null || now == null) {
      return now;
    }
    RequestConfig base = own != null ? own : RequestConfig.DEFAULT;
    // The copy's own objects: a Timeout the interceptor made itself is never one of them.
    Timeout request = now.getConnectionRequestTimeout();
    Timeout connect = now.getConnectTimeout();
    Timeout response = now.getResponseTimeout();
    boolean r = request == bounded.getConnectionRequestTimeout();
    boolean c = connect == bounded.getConnectTimeout();
    boolean s = response == bounded.getResponseTimeout();
    if (!r && !c && !s) {
      return now;
    }
    return RequestConfig.copy(now)
        .setConnectionRequestTimeout(r ? base.getConnectionRequestTimeout() : request)
        .setConnectTimeout(c ? base.getConnectTimeout() : connect)
        .setResponseTimeout(s ? base.getResponseTimeout() : response)
        .build();
  }

  /** {@code nanos} (0 or more) in whole milliseconds, rounded up, at least 1. */
  static Timeout roundedUp(long nanos) {
    return Timeout.ofMilliseconds(TimeoutMillis.roundedUp(nanos));
  }

  private static boolean shorter(long limit, long ownNanos) {
    return ownNanos != UNKNOWN && CallBounds.shorterTimeout(limit, ownNanos) >= 0;
  }

  /** {@code t} in nanoseconds, 0 for none (null). */
  private static long nanos(Timeout t) {
    return t == null ? 0 : Math.max(0, t.toNanoseconds());
  }

  /**
   * The connect timeout the manager of {@code runtime} applies when the request's config sets none:
   * its {@code ConnectionConfig}'s (5.2+); none (0) on 5.1, whose managers then connect without
   * one.
   */
  static long managerConnectNanos(Object runtime, HttpRoute route) {
    return managerNanos(runtime, route, false);
  }

  /**
   * The socket timeout the manager of {@code runtime} gives a connection it leases or connects, the
   * response timeout when the request's config sets none: its {@code ConnectionConfig}'s (5.2+)
   * when set, else what the connection was made with: the classic manager's {@code SocketConfig},
   * the async client's {@code IOReactorConfig}.
   */
  static long managerSocketNanos(Object runtime, HttpRoute route) {
    return managerNanos(runtime, route, true);
  }

  private static long managerNanos(Object runtime, HttpRoute route, boolean socket) {
    Object manager = read(Runtime.OF, runtime, 0);
    Reader r = manager == null ? null : Reader.OF.get(manager.getClass());
    if (r == null || r.unknown) {
      return UNKNOWN;
    }
    try {
      Object cc = r.connectionConfig(manager, route);
      if (!socket) {
        return cc == null ? 0 : nanos((Timeout) r.ccConnect.invoke(cc));
      }
      Timeout own = cc == null ? null : (Timeout) r.ccSocket.invoke(cc);
      if (own != null) {
        return nanos(own);
      }
      if (r.async) {
        IOReactorConfig reactor = reactorConfig(read(Runtime.OF, runtime, 1));
        return reactor == null ? UNKNOWN : nanos(reactor.getSoTimeout());
      }
      SocketConfig sc = r.socketConfig(manager, route);
      return nanos((sc != null ? sc : SocketConfig.DEFAULT).getSoTimeout());
    } catch (ReflectiveOperationException | RuntimeException e) {
      return UNKNOWN;
    }
  }

  /** Field {@code index} of {@code fields} (per the class of {@code o}) read from {@code o}. */
  private static Object read(ClassValue<Field[]> fields, Object o, int index) {
    if (o == null) {
      return null;
    }
    Field[] f = fields.get(o.getClass());
    if (f == null || f[index] == null) {
      return null;
    }
    try {
      return f[index].get(o);
    } catch (IllegalAccessException | RuntimeException e) {
      return null;
    }
  }

  /**
   * The config HttpCore's I/O reactor (the async client's connection initiator) gives each session
   * it makes: {@code DefaultConnectingIOReactor.workers[0].reactorConfig} (the same for every
   * worker; HttpCore 5.1 to 5.4), or null.
   */
  private static IOReactorConfig reactorConfig(Object initiator) {
    Object workers = read(Reactor.OF, initiator, 0);
    if (!(workers instanceof Object[]) || ((Object[]) workers).length == 0) {
      return null;
    }
    Object config = read(Reactor.OF, ((Object[]) workers)[0], 1);
    return config instanceof IOReactorConfig ? (IOReactorConfig) config : null;
  }

  /**
   * HttpClient's exec runtimes' {@code manager} and {@code connectionInitiator} (5.1 to 5.6), per
   * runtime class; null for another runtime.
   */
  private static final class Runtime extends ClassValue<Field[]> {
    static final Runtime OF = new Runtime();

    @Override
    protected Field[] computeValue(Class<?> type) {
      String name = type.getName();
      if (!name.equals("org.apache.hc.client5.http.impl.classic.InternalExecRuntime")
          && !name.equals("org.apache.hc.client5.http.impl.async.InternalHttpAsyncExecRuntime")) {
        return null;
      }
      return new Field[] {field(type, "manager"), field(type, "connectionInitiator")};
    }
  }

  /**
   * HttpCore's {@code DefaultConnectingIOReactor.workers} and {@code
   * SingleCoreIOReactor.reactorConfig}, each on its own class.
   */
  private static final class Reactor extends ClassValue<Field[]> {
    static final Reactor OF = new Reactor();

    @Override
    protected Field[] computeValue(Class<?> type) {
      return new Field[] {field(type, "workers"), field(type, "reactorConfig")};
    }
  }

  /** The instance field {@code name} of {@code type}, made accessible, or null. */
  private static Field field(Class<?> type, String name) {
    try {
      Field f = type.getDeclaredField(name);
      f.setAccessible(true);
      return f;
    } catch (NoSuchFieldException | RuntimeException e) {
      // another layout, or a module that does not open the package (InaccessibleObjectException)
      return null;
    }
  }

  /**
   * How to read one kind of HttpClient's own connection managers: its socket config, and from 5.2
   * its connection config, per route ({@code resolve...(HttpRoute)}, the pooling manager) or for
   * every route (the basic one).
   */
  private static final class Reader {
    static final ClassValue<Reader> OF =
        new ClassValue<Reader>() {
          @Override
          protected Reader computeValue(Class<?> type) {
            // A subclass of one is read as the manager it extends.
            if (PoolingAsyncClientConnectionManager.class.isAssignableFrom(type)) {
              return new Reader(PoolingAsyncClientConnectionManager.class);
            }
            if (PoolingHttpClientConnectionManager.class.isAssignableFrom(type)) {
              return new Reader(PoolingHttpClientConnectionManager.class);
            }
            return BasicHttpClientConnectionManager.class.isAssignableFrom(type)
                ? new Reader(BasicHttpClientConnectionManager.class)
                : null;
          }
        };

    private final Method socketConfig;
    private final Method connectionConfig;
    final Method ccConnect;
    final Method ccSocket;
    final boolean unknown;
    // The async manager: its connections' socket timeout is the I/O reactor's.
    final boolean async;

    private Reader(Class<?> type) {
      async = type == PoolingAsyncClientConnectionManager.class;
      Method sc = null;
      Method cc = null;
      Method connect = null;
      Method socket = null;
      boolean failed = false;
      try {
        sc = declared(type, "resolveSocketConfig", HttpRoute.class);
        cc = declared(type, "resolveConnectionConfig", HttpRoute.class);
        if (async) {
          sc = null;
        } else if (sc == null) {
          // 5.1's pooling manager, or the basic manager: one config for every route.
          sc =
              publicMethod(
                  type,
                  type == PoolingHttpClientConnectionManager.class
                      ? "getDefaultSocketConfig"
                      : "getSocketConfig");
          cc = publicMethod(type, "getConnectionConfig"); // the basic manager, 5.2+
          failed = sc == null;
        }
        if (cc != null) {
          connect = cc.getReturnType().getMethod("getConnectTimeout");
          socket = cc.getReturnType().getMethod("getSocketTimeout");
        }
      } catch (NoSuchMethodException | RuntimeException e) {
        // another layout, or a module that does not open the package (InaccessibleObjectException)
        failed = true;
      }
      this.socketConfig = sc;
      this.connectionConfig = cc;
      this.ccConnect = connect;
      this.ccSocket = socket;
      this.unknown = failed;
    }

    Object connectionConfig(Object manager, HttpRoute route) throws ReflectiveOperationException {
      if (connectionConfig == null) {
        return null;
      }
      return connectionConfig.getParameterCount() == 1
          ? connectionConfig.invoke(manager, route)
          : connectionConfig.invoke(manager);
    }

    SocketConfig socketConfig(Object manager, HttpRoute route) throws ReflectiveOperationException {
      return (SocketConfig)
          (socketConfig.getParameterCount() == 1
              ? socketConfig.invoke(manager, route)
              : socketConfig.invoke(manager));
    }

    private static Method declared(Class<?> type, String name, Class<?> parameter) {
      try {
        Method m = type.getDeclaredMethod(name, parameter);
        m.setAccessible(true);
        return m;
      } catch (NoSuchMethodException e) {
        return null;
      }
    }

    private static Method publicMethod(Class<?> type, String name) {
      try {
        return type.getMethod(name);
      } catch (NoSuchMethodException e) {
        return null;
      }
    }
  }
}
