package dev.retryagent.internal.jdk;

import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.net.http.HttpClient;
import java.util.Optional;
import java.util.concurrent.Executor;

/**
 * Where the JDK runs a call's {@code BodyHandler} and its subscriber's signals: the client's
 * executor. Read in {@code HttpClientImpl} and {@code Http1Response} (JDK 17 and 25): the response
 * head and body are handed from the selector thread to the client's {@code DelegatingExecutor},
 * which runs them on its delegate: the executor the application set ({@code
 * HttpClient.Builder.executor}), else a cached pool of the client's own (threads {@code
 * HttpClient-<n>-Worker-<m>}). {@code sendAsync} always, {@code send} almost always (a response
 * already read when the caller subscribes is handled on the caller's thread).
 *
 * <p>The application's executor is public ({@code HttpClient.executor()}); the JDK's own pool is
 * not: it is reached in {@code java.net.http}'s internal package, which only a caller it is open to
 * can read (the agent opens it to itself; the library, on the class path, reaches it only when the
 * application runs with {@code --add-opens java.net.http/jdk.internal.net.http=ALL-UNNAMED}). Used
 * only by a give-back after a late wait ({@link GivenBack}), never on a call's usual path.
 */
public final class ClientExecutor {
  private static final String FACADE = "jdk.internal.net.http.HttpClientFacade";

  private ClientExecutor() {}

  /** {@code client}'s executor as the JDK runs a handler on it, or null when it is out of reach. */
  public static Executor of(HttpClient client) {
    Optional<Executor> own = client.executor();
    if (own.isPresent()) {
      return own.get();
    }
    return JdkPool.of(client);
  }

  /** The JDK's own pool of a client the application gave no executor, read reflectively. */
  private static final class JdkPool {
    // Looked up once; null when java.net.http's internal package is not open to this code, or
    // the JDK's fields are not as read (JDK 11 to 25: HttpClientFacade.impl, theExecutor(),
    // DelegatingExecutor.delegate()).
    private static final Field IMPL;
    private static final Method THE_EXECUTOR;
    private static final Method DELEGATE;

    static {
      Field impl = null;
      Method theExecutor = null;
      Method delegate = null;
      try {
        Class<?> facade = Class.forName(FACADE, false, HttpClient.class.getClassLoader());
        Field f = facade.getDeclaredField("impl");
        Method t = f.getType().getDeclaredMethod("theExecutor");
        Method d = t.getReturnType().getDeclaredMethod("delegate");
        if (f.trySetAccessible() && t.trySetAccessible() && d.trySetAccessible()) {
          impl = f;
          theExecutor = t;
          delegate = d;
        }
      } catch (ReflectiveOperationException | RuntimeException | LinkageError e) {
        // another JDK's layout, or a SecurityManager that refuses: out of reach
      }
      IMPL = impl;
      THE_EXECUTOR = theExecutor;
      DELEGATE = delegate;
    }

    static Executor of(HttpClient client) {
      if (IMPL == null || !IMPL.getDeclaringClass().isInstance(client)) {
        return null;
      }
      try {
        return (Executor) DELEGATE.invoke(THE_EXECUTOR.invoke(IMPL.get(client)));
      } catch (ReflectiveOperationException | RuntimeException e) {
        return null;
      }
    }
  }
}
