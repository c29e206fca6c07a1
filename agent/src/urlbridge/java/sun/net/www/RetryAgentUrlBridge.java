package sun.net.www;

import java.net.Proxy;
import java.net.URLConnection;
import java.util.function.BiFunction;
import java.util.function.BiPredicate;

/**
 * The only retry-agent class that code inside {@code java.base} calls: defined at run time into
 * {@code java.base} (package {@code sun.net.www}, boot loader) through a {@code Lookup} on {@code
 * sun.net.www.ParseUtil}, once the agent's module may reach that package; never on the boot class
 * path. {@code java.base} types only; no lambda, no string concatenation through {@code
 * invokedynamic} (compiled with {@code -XDstringConcat=inline}).
 *
 * <p>Called from code the agent inserts:
 *
 * <ul>
 *   <li>{@code sun.net.www.protocol.http.Handler.openConnection(URL, Proxy)} and the https
 *       handler's: {@code return RetryAgentUrlBridge.opened(connection, proxy);} (guarded: a
 *       missing bridge leaves the JDK's connection);
 *   <li>{@code sun.net.www.http.HttpClient.parseHTTP(...)}: {@code failedOnce =
 *       RetryAgentUrlBridge.parsing(this, failedOnce);} (guarded).
 * </ul>
 *
 * Both never throw: a failure of the agent's side leaves the JDK's behaviour, and is reported once.
 */
public final class RetryAgentUrlBridge {
  private static volatile BiFunction<URLConnection, Proxy, URLConnection> opener;
  private static volatile BiPredicate<Object, Boolean> resend;
  private static volatile boolean reported;

  private RetryAgentUrlBridge() {}

  /**
   * Installed once by the agent. {@code java.base} does not export this package, so the
   * application cannot call it; only the agent's module was given access.
   *
   * @param open makes the connection the application gets from the JDK's new one and its proxy
   * @param parsing the new value of {@code HttpClient.failedOnce} from the client and the field's
   *     value when a response starts to be read
   */
  public static void install(
      BiFunction<URLConnection, Proxy, URLConnection> open, BiPredicate<Object, Boolean> parsing) {
    resend = parsing;
    opener = open;
  }

  /** The connection the application gets: the agent's, or {@code connection} itself. */
  public static URLConnection opened(URLConnection connection, Proxy proxy) {
    BiFunction<URLConnection, Proxy, URLConnection> o = opener;
    if (o == null || connection == null) {
      return connection;
    }
    try {
      URLConnection c = o.apply(connection, proxy);
      return c != null ? c : connection;
    } catch (Throwable bug) {
      report(bug);
      return connection;
    }
  }

  /**
   * {@code HttpClient.parseHTTP} starts to read a response: the value its {@code failedOnce} field
   * is to have. The JDK sends the request once more by itself when that field is false and reading
   * fails; it is true on entry only in that resend.
   */
  public static boolean parsing(Object client, boolean failedOnce) {
    BiPredicate<Object, Boolean> r = resend;
    if (r == null) {
      return failedOnce;
    }
    try {
      return r.test(client, failedOnce); // Boolean.valueOf: cached, no allocation
    } catch (Throwable bug) {
      report(bug);
      return failedOnce;
    }
  }

  private static void report(Throwable bug) {
    if (!reported) {
      reported = true;
      System.err.println(
          "retry-agent: internal error, HttpURLConnection runs without retries from here: " + bug);
    }
  }
}
