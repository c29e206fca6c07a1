package dev.retryagent.urlconnection;

import java.io.IOException;
import java.net.HttpURLConnection;
import java.net.Proxy;
import java.net.URL;
import java.net.URLConnection;

/**
 * How the attempts of a retried {@link HttpURLConnection} are made. The library's own ({@link
 * #DIRECT}) opens each further attempt with {@link URL#openConnection()} and leaves the JDK's own
 * resends as they are; the agent supplies one that opens the JDK's connection without its hook and
 * reaches into the JDK's resends (docs/url-connection.md).
 *
 * <p>Implementations are thread-safe; {@link #beforeStep} and {@link #afterStep} are called in
 * pairs on the thread that makes the attempt.
 */
public interface UrlTransport {
  /**
   * A new, unconnected connection to {@code url}, as {@link URL#openConnection(Proxy)} makes one
   * ({@link URL#openConnection()} when {@code proxy} is null), and never one that retries by
   * itself.
   */
  URLConnection open(URL url, Proxy proxy) throws IOException;

  /**
   * A step of an attempt (connect, open the request body, read the response) is about to run on
   * this thread.
   *
   * @param resend asked on this thread, during the step, each time the JDK reads a response:
   *     whether it may send that request again by itself on a broken connection
   */
  default void beforeStep(JdkResend resend) {}

  /**
   * Whether the JDK may send the request whose response it is reading again by itself on a broken
   * connection: false for a request that is not safe to repeat. Asked when the response is read,
   * not when the step begins: a redirect the JDK follows inside the step (a POST answered 301, 302
   * or 303) sends a GET next, which is safe to send again, as the JDK's own rule finds asking the
   * connection's method then.
   */
  interface JdkResend {
    boolean mayResend();
  }

  /**
   * The step started by {@link #beforeStep} ended (normally or not).
   *
   * @return how many times the JDK sent the request again by itself during the step
   */
  default int afterStep() {
    return 0;
  }

  /**
   * How many times the JDK wrote the request of {@code attempt} again by itself after a write
   * error, asked once when the attempt is over.
   */
  default int rewrites(HttpURLConnection attempt) {
    return 0;
  }

  /** Opens attempts with the public API; the JDK's own resends stay as they are. */
  UrlTransport DIRECT = new DirectUrlTransport();
}
