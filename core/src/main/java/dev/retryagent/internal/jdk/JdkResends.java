package dev.retryagent.internal.jdk;

import java.io.IOException;
import java.io.InputStream;
import java.net.http.HttpRequest;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.Properties;

/**
 * The resends {@code java.net.http} makes on its own inside one {@code send}, and the one the
 * engine counts as an attempt (so that {@code maxAttempts}, the budget and the breaker see every
 * request the server sees). From {@code jdk.internal.net.http.MultiExchange} (JDK 11 to 25), each
 * at most once per request:
 *
 * <ul>
 *   <li>HTTP/1.1, a connection that closes or resets before any byte of the answer arrived (a
 *       pooled connection the server had closed, or a server that closes without answering): a GET
 *       or HEAD is sent again on a new connection (any method with {@code
 *       -Djdk.httpclient.enableAllMethodRetry}, or the same in {@code conf/net.properties}).
 *       <b>Counted</b> when the resend fails the same way: the call then ends with "HTTP/1.1 header
 *       parser received no bytes". A resend that gets an answer, or fails otherwise, cannot be told
 *       from outside and is not counted.
 *   <li>A connection that cannot be made ({@code ConnectException}): connecting is tried once more
 *       ({@code -Djdk.httpclient.disableRetryConnect} turns it off). Not counted: no request
 *       reached the server.
 *   <li>HTTP/2, a stream the server refused unprocessed ({@code GOAWAY}, {@code REFUSED_STREAM}):
 *       sent again (JDK 24+). Not counted: the server did not act on it. When that resend finds no
 *       connection, the attempt ends with its {@code ConnectException}, which the engine retries as
 *       never sent unless the send watch saw the request go out: safe either way, as the server
 *       processed nothing ({@code Http2EndingsTest}).
 * </ul>
 *
 * Redirects and authentication challenges the client follows are follow-ups, not resends.
 *
 * <p>Limits of the count (read in JDK 25's {@code MultiExchange}; r42): the first two resends share
 * one allowance, {@code retriedOnce}, and a redirect followed gives it back ({@code retriedOnce =
 * false} as the new hop starts), the rule asked of the hop's own request ({@code currentreq}).
 * Neither shows in the failure, and no signal from outside the JDK tells them (the send watch
 * watches only a body; a GET has none, and giving it one would change what is sent):
 *
 * <ul>
 *   <li>Counted once too many: a GET whose first connect was refused (the JDK connects again, using
 *       the allowance) and whose server then closes without answering: one request reached the
 *       server, the failure reads as the no-bytes resend, and an attempt more is counted (in {@code
 *       maxAttempts}, the breaker's failures, the metrics).
 *   <li>Not counted: a resend after a redirect. A POST answered 303 is followed as a GET, which the
 *       JDK sends again after a connection closed before any byte; the application's request is a
 *       POST, so nothing is counted. A GET redirected may be resent once per hop: at most one is
 *       counted.
 * </ul>
 */
final class JdkResends {
  /** What the JDK's HTTP/1.1 response parser says when the connection ended before any byte. */
  static final String NO_BYTES = "HTTP/1.1 header parser received no bytes";

  private static final boolean ALL_METHODS = allMethodRetry();

  private JdkResends() {}

  /**
   * How many times the JDK sent {@code request} again inside the attempt that failed with {@code
   * failure}: 1 when the failure is its resend after a connection closed before any byte (see the
   * class comment), else 0.
   */
  static int in(HttpRequest request, Throwable failure) {
    if (!ALL_METHODS && !"GET".equals(request.method()) && !"HEAD".equals(request.method())) {
      return 0;
    }
    // The failure itself, as send throws it (a plain IOException with the message of the one it
    // wraps) or as sendAsync's future holds it: never a cause further down, such as the no-bytes
    // failure a request timeout carries when the JDK closed the connection for it.
    String message = failure.getMessage();
    return failure.getClass() == IOException.class
            && message != null
            && message.startsWith(NO_BYTES)
        ? 1
        : 0;
  }

  /**
   * Whether the JDK sends any method again by itself after a connection closed before any byte of
   * the answer ({@code -Djdk.httpclient.enableAllMethodRetry}): a POST that reached the server may
   * then be followed, inside the attempt, by a resend whose connection is refused, and the attempt
   * ends in a {@code ConnectException} that alone reads as "never sent" ({@link JdkRequest}'s send
   * watch).
   */
  static boolean resendsAnyMethod() {
    return ALL_METHODS;
  }

  private static final String ALL_METHODS_KEY = "jdk.httpclient.enableAllMethodRetry";

  /**
   * The JDK reads the property once, as a net property ({@code NetProperties.get}): the system
   * property, else {@code ${java.home}/conf/net.properties}; {@code Boolean.parseBoolean}, "" = on.
   * Read from the system property alone, a switch set in the file was missed: the JDK resent a POST
   * itself, no send watch was set, and the attempt's {@code ConnectException} read as "never sent".
   */
  private static boolean allMethodRetry() {
    try {
      String home = System.getProperty("java.home");
      return allMethodRetry(
          System.getProperty(ALL_METHODS_KEY),
          home == null ? null : Paths.get(home, "conf", "net.properties"));
    } catch (SecurityException e) {
      return true; // unknown: the safe side (a send watch for each attempt of a non-GET)
    } catch (java.nio.file.InvalidPathException e) {
      return false;
    }
  }

  /**
   * {@code set}: the system property's value (null: unset); {@code netProperties}: the JDK's file,
   * read only when the system property is unset (as the JDK does, a file that cannot be read counts
   * as empty).
   */
  static boolean allMethodRetry(String set, Path netProperties) {
    String s = set != null ? set : fromFile(netProperties);
    return s != null && (s.isEmpty() || Boolean.parseBoolean(s));
  }

  private static String fromFile(Path netProperties) {
    if (netProperties == null) {
      return null;
    }
    Properties props = new Properties();
    try (InputStream in = Files.newInputStream(netProperties)) {
      props.load(in);
    } catch (SecurityException e) {
      // A SecurityManager that lets the application's frames not read the JDK's conf: the JDK
      // reads the file privileged and may have the switch on. Unknown here, so taken as on, the
      // safe side (r33): read as off, a POST the JDK resent could be sent a third time.
      return "true";
    } catch (IOException | RuntimeException e) {
      return null; // NetProperties: no file or unreadable, no defaults
    }
    return props.getProperty(ALL_METHODS_KEY);
  }
}
