package dev.retryagent.engine;

import java.io.EOFException;
import java.io.InterruptedIOException;
import java.net.BindException;
import java.net.ConnectException;
import java.net.NoRouteToHostException;
import java.net.SocketException;
import java.net.SocketTimeoutException;
import java.net.UnknownHostException;
import java.net.http.HttpConnectTimeoutException;
import java.net.http.HttpTimeoutException;
import java.nio.channels.ClosedByInterruptException;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.UnresolvedAddressException;
import java.security.cert.CertificateException;
import java.util.Locale;
import java.util.concurrent.CancellationException;
import javax.net.ssl.SSLPeerUnverifiedException;

/**
 * Sorts an exception thrown by an HTTP client into an {@link Outcome}. Clients wrap and re-create
 * exceptions (the JDK client re-throws a new {@code ConnectException} around the real cause; OkHttp
 * surfaces resets as plain {@code IOException}s with a message), so the cause chain is walked and,
 * for plain {@code IOException}s, the messages both clients are known to use are recognised.
 */
final class TransportClassifier {
  /** Causes deeper than this are not inspected: protects against cyclic or absurd chains. */
  private static final int MAX_DEPTH = 8;

  private static final String[] RESET_MESSAGES = {
    "connection reset",
    "broken pipe",
    "unexpected end of stream",
    "header parser received no bytes",
    "eof reached while reading",
    "stream was reset",
    "received rst_stream",
    "connection closed",
    "connection abort",
    "end of stream",
    // java.net.http over HTTP/2: the server's GOAWAY ended the connection under the stream (JDK
    // 17's "<local address>: GOAWAY received", processed or not); a stream the server refused
    // unprocessed, which the JDK (24+) sent again once and the server refused again.
    "goaway received",
    "request not processed by peer",
  };

  /**
   * What a client the application closed throws, IllegalStateException, for a call (or a retry)
   * that it refuses without sending anything: Apache HttpClient 4.5 and 5.x (their pooling and
   * basic connection managers), OkHttp's closed cache.
   */
  private static final String[] CLOSED_CLIENT_MESSAGES = {
    "connection pool shut down",
    "connection manager has been shut down",
    "connection manager shut down",
    "cache is closed",
  };

  private TransportClassifier() {}

  /** The kind of failure {@code error} is. */
  public static Outcome classify(Throwable error) {
    // Unknown hosts and interrupts anywhere in the chain decide first: the JDK client reports an
    // unresolvable host as a ConnectException caused by UnresolvedAddressException, which must not
    // read as "connection refused".
    int depth = 0;
    for (Throwable t = error; t != null && depth < MAX_DEPTH; t = t.getCause(), depth++) {
      if (isUnknownHost(t) || isCertificateProblem(t)) {
        return Outcome.OTHER_EXCEPTION;
      }
      if (t instanceof CancellationException
          || t instanceof InterruptedException
          || t instanceof ClosedByInterruptException) {
        return Outcome.CANCELLED;
      }
    }
    depth = 0;
    for (Throwable t = error; t != null && depth < MAX_DEPTH; t = t.getCause(), depth++) {
      Outcome o = classifyOne(t);
      if (o != null) {
        return o;
      }
    }
    return Outcome.OTHER_EXCEPTION;
  }

  /** True for an unresolvable host, however the client reports it. */
  public static boolean isUnknownHost(Throwable t) {
    return t instanceof UnknownHostException || t instanceof UnresolvedAddressException;
  }

  /** A TLS peer that cannot be trusted: repeating the call cannot help. */
  private static boolean isCertificateProblem(Throwable t) {
    return t instanceof CertificateException || t instanceof SSLPeerUnverifiedException;
  }

  private static Outcome classifyOne(Throwable t) {
    // Apache HttpClient, by name (core does not see it): 4.5's connect timeout is an
    // InterruptedIOException, and a server that closed the connection without a (whole) response
    // is reported with exceptions of its own.
    String name = t.getClass().getName();
    if (name.startsWith("org.apache.h")) {
      if (isPoolTimeout(name, t)) {
        return Outcome.POOL_TIMEOUT;
      }
      if (name.endsWith(".ConnectTimeoutException")) {
        return Outcome.CONNECT_FAILURE;
      }
      if (closedWithoutAnswer(t.getClass())) {
        return Outcome.RESET;
      }
    }
    if (t instanceof IllegalStateException) {
      // The application closed the client: the caller's ending, neither the host's failure nor its
      // success (as the breaker took it, closing itself without a trial).
      String m = lower(t.getMessage());
      for (String closed : CLOSED_CLIENT_MESSAGES) {
        if (m.equals(closed)) {
          return Outcome.CANCELLED;
        }
      }
    }
    // Order matters: HttpConnectTimeoutException is an HttpTimeoutException, and
    // SocketTimeoutException is an InterruptedIOException.
    if (t instanceof HttpConnectTimeoutException
        || t instanceof ConnectException
        || t instanceof NoRouteToHostException) {
      return (connectFrames(t) & RESENT) != 0 ? Outcome.RESET : Outcome.CONNECT_FAILURE;
    }
    if (t instanceof SocketTimeoutException) {
      return !isConnectMessage(t.getMessage())
          ? Outcome.TIMEOUT
          : (connectFrames(t) & RESENT) != 0 ? Outcome.RESET : Outcome.CONNECT_FAILURE;
    }
    if (t instanceof HttpTimeoutException) {
      return Outcome.TIMEOUT;
    }
    if (t instanceof InterruptedIOException) {
      // OkHttp reports its call timeout as InterruptedIOException("timeout"); anything else of
      // this type is a thread interrupt.
      return "timeout".equals(t.getMessage()) ? Outcome.TIMEOUT : Outcome.CANCELLED;
    }
    if (t instanceof EOFException || t instanceof ClosedChannelException) {
      return Outcome.RESET;
    }
    String type = t.getClass().getName();
    if (type.endsWith("StreamResetException") || type.endsWith("ConnectionShutdownException")) {
      return Outcome.RESET;
    }
    if (t instanceof SocketException) {
      String m = lower(t.getMessage());
      // "Socket closed" is what a cancelled call sees; "Connection refused" is a connect failure
      // reported as a plain SocketException by some paths.
      if (m.contains("refused")) {
        return Outcome.CONNECT_FAILURE;
      }
      // Before anything was sent: a bind, made only for a connection ("Cannot assign requested
      // address": the ephemeral ports used up), and any failure thrown inside a socket's connect
      // ("Network is unreachable", "Host is down", "Address family not supported by protocol"),
      // which OkHttp and Apache pass on unwrapped (they wrap a ConnectException only) and
      // HttpURLConnection as it came. A POST under if-not-sent was not retried, and
      // retryOn.transport [connect] did not cover them. Told by the stack, not the message: the
      // same message could come from a write.
      int frames = connectFrames(t);
      if ((t instanceof BindException || (frames & CONNECTING) != 0) && (frames & RESENT) == 0) {
        return Outcome.CONNECT_FAILURE;
      }
      return Outcome.RESET;
    }
    if (t.getClass() == java.io.IOException.class) {
      String m = lower(t.getMessage());
      // OkHttp cancels an enqueued call that something other than an IOException ended (its cache
      // closed by the application: IllegalStateException "cache is closed"; a bug) and tells the
      // callback "canceled due to <that>": an ending in this process, not the host's failure.
      if (m.startsWith("canceled due to ")) {
        return Outcome.CANCELLED;
      }
      for (String needle : RESET_MESSAGES) {
        if (m.contains(needle)) {
          return Outcome.RESET;
        }
      }
      // OkHttp's HTTP/2 writer says "closed" for a stream written to a connection that closed
      // under it (the server's GOAWAY and close, seen on 5.x while a request was written): the
      // host's ending, as a reset. The application's cancel is told apart before (the adapter).
      if (m.equals("closed") && thrownByOkHttp(t)) {
        return Outcome.RESET;
      }
      // java.net.http (Java 21+) refuses a request on a client the application shut down with a
      // plain "closed": nothing was sent, so it is the caller's ending, not the host's failure;
      // and aborts the exchanges in progress at its shutdownNow() with "shutdownNow" (the agent's
      // refusal of a retry that lost the race with it says the same): the application's ending
      // too. Recorded, ten of them opened the host's breaker for every other client.
      if (m.equals("canceled")
          || m.equals("cancelled")
          || m.equals("closed")
          || m.equals("shutdownnow")) {
        return Outcome.CANCELLED;
      }
    }
    return null;
  }

  /**
   * Apache's exceptions for a connection that closed before a whole response came, by name, their
   * subclasses included: HttpCore 5's {@code RequestNotExecutedException}, a {@code
   * ConnectionClosedException} for a stream above an HTTP/2 {@code GOAWAY}'s last stream id or a
   * request still queued when its connection closed (never processed, as java.net.http's "request
   * not processed by peer", read as a reset too), was none of these kinds, and a GET it ended was
   * not retried.
   */
  private static boolean closedWithoutAnswer(Class<?> c) {
    for (; c != null && c.getName().startsWith("org.apache.h"); c = c.getSuperclass()) {
      String name = c.getName();
      if (name.endsWith(".NoHttpResponseException")
          || name.endsWith(".ConnectionClosedException")) {
        return true;
      }
    }
    return false;
  }

  /** A bit of {@link #connectFrames}: {@code t} was thrown inside a socket's connect. */
  private static final int CONNECTING = 1;

  /** A bit of {@link #connectFrames}: the connect was HttpURLConnection's own resend. */
  private static final int RESENT = 2;

  /**
   * What {@code t}'s stack says of the connect it failed in, in one walk of each stack: {@link
   * #CONNECTING} when {@code t} was thrown inside a socket's connect (a frame of {@code
   * Socket.connect}, of the JDK's socket implementation's connect in {@code sun.nio.ch}, or of
   * HttpURLConnection's {@code NetworkClient.doConnect}); {@link #RESENT} when that connect was the
   * one of HttpURLConnection's own resend of a request it had sent: the JDK's {@code
   * sun.net.www.http.HttpClient}, finding the connection closed before a status line (a POST too,
   * with {@code sun.net.http.retryPost} on, its default), connects again from {@code parseHTTP} and
   * sends the request again. A failure of that connect is not "never sent": the first copy went
   * out, and the server may have processed it (library mode, where the JDK's resend is left on: a
   * POST under if-not-sent would have been sent a third time). Neither without a stack trace.
   */
  private static int connectFrames(Throwable t) {
    int found = 0;
    for (StackTraceElement f : t.getStackTrace()) {
      String c = f.getClassName();
      String m = f.getMethodName();
      if ((c.equals("java.net.Socket") && m.equals("connect"))
          || (c.startsWith("sun.nio.ch.")
              && (m.equals("connect")
                  || m.equals("finishConnect")
                  || m.equals("timedFinishConnect")))
          || (c.equals("sun.net.NetworkClient") && m.equals("doConnect"))) {
        found |= CONNECTING;
      } else if (inParseHttp(f)) {
        return found | RESENT; // the resend's connect runs inside parseHTTP: its frames are above
      }
    }
    // The causes too, for the resend: HttpURLConnection hands a failure asked for again
    // (getResponseCode after getInputStream failed) as a copy with the second caller's stack, the
    // original its cause.
    int depth = 1;
    for (Throwable e = t.getCause(); e != null && depth < MAX_DEPTH; e = e.getCause(), depth++) {
      for (StackTraceElement f : e.getStackTrace()) {
        if (inParseHttp(f)) {
          return found | RESENT;
        }
      }
    }
    return found;
  }

  private static boolean inParseHttp(StackTraceElement f) {
    return f.getClassName().equals("sun.net.www.http.HttpClient")
        && f.getMethodName().startsWith("parseHTTP");
  }

  /** Whether OkHttp's own code threw {@code t} (its first frame; unknown without a stack trace). */
  private static boolean thrownByOkHttp(Throwable t) {
    StackTraceElement[] frames = t.getStackTrace();
    return frames.length > 0 && frames[0].getClassName().startsWith("okhttp3.");
  }

  /**
   * Apache HttpClient found no pooled connection within its {@code connectionRequestTimeout}: 4.5's
   * {@code ConnectionPoolTimeoutException} (a {@code ConnectTimeoutException}, though nothing was
   * connected), 5.x's {@code ConnectionRequestTimeoutException}, or 5.x's {@code
   * RequestFailedException} around the pool's own {@code DeadlineTimeoutException} (a {@code
   * TimeoutException}: the pool failed the lease at its deadline before the wait for it timed out).
   * An {@code InterruptedIOException} each, which read as the caller's interrupt.
   */
  private static boolean isPoolTimeout(String name, Throwable t) {
    return name.endsWith(".ConnectionPoolTimeoutException")
        || name.endsWith(".ConnectionRequestTimeoutException")
        || (name.endsWith(".RequestFailedException")
            && t.getCause() instanceof java.util.concurrent.TimeoutException);
  }

  private static boolean isConnectMessage(String message) {
    return lower(message).contains("connect");
  }

  private static String lower(String s) {
    return s == null ? "" : s.toLowerCase(Locale.ROOT);
  }
}
