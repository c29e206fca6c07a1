package dev.retryagent.urlconnection;

import dev.retryagent.engine.RequestInfo;
import dev.retryagent.internal.observe.Sanitizer;
import java.net.Authenticator;
import java.net.HttpURLConnection;
import java.net.ProtocolException;
import java.net.URL;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CopyOnWriteArrayList;
import javax.net.ssl.HttpsURLConnection;

/**
 * The application's request as the engine sees it ({@link RequestInfo}), and what a fresh attempt
 * needs to be that request again: the calls the JDK cannot report back ({@code
 * getRequestProperties()} hides {@code Authorization}; the authenticator and the streaming mode
 * have no getter), recorded as the application made them, and the rest copied from the previous
 * attempt's connection.
 *
 * <p>Guarded by the exchange's lock, except the reads the engine makes while it decides (same
 * thread), and the streaming mode, which another thread may record while {@code connect()} retries:
 * under this object's monitor, which the exchange holds while it makes an attempt's connection from
 * the record ({@link #applyTo}).
 */
final class UrlRequest implements RequestInfo {
  private final URL url;
  private final String scheme;
  private final int port;
  private final String path;

  /**
   * {@code setRequestProperty} / {@code addRequestProperty} calls, in order: op, name, value. Read
   * without the lock by the getters ({@link #propertyLines}), which must not wait for a call.
   */
  private final List<String[]> properties = new CopyOnWriteArrayList<>();

  private Authenticator authenticator;

  /**
   * The streaming mode in one field: {@link #BUFFERED}, a fixed length (0 or more), or {@link
   * #CHUNKED} (its chunk length in {@link #chunkLength}, written before it and so published by it).
   * Volatile, as another thread may record it, under this object's monitor alone, while the
   * application's {@code connect()} runs (connect failures retried; ConnectionView#settings), and
   * the call's thread reads it meanwhile without that monitor ({@link #method}, judging a failed
   * connect): a plain {@code long} may be read half written (JLS 17.7). One field, so an ordinary
   * setter before {@code connect()} makes one volatile write.
   */
  private volatile long streamMode = BUFFERED;

  private static final long BUFFERED = -1;
  private static final long CHUNKED = -2;

  private int chunkLength = -1;

  /**
   * The application's timeouts, -1 while it set none: the JDK then applies its default ({@code
   * sun.net.client.defaultConnectTimeout}, {@code ...defaultReadTimeout}), which an explicit 0 on a
   * fresh attempt would turn off. The JDK's getters answer 0 for both.
   */
  private volatile int connectTimeout;

  /** Volatile: a setter records it without the lock while a call runs. */
  private volatile int readTimeout;

  /** The connection whose method counts until it is fixed: the template. */
  private final HttpURLConnection template;

  private String method;
  private RequestBody body;

  /** The application opened the body, or connected first (it may yet): see {@link #method()}. */
  private boolean bodyMayFollow;

  UrlRequest(HttpURLConnection template, URL url) {
    this.template = template;
    this.url = url;
    this.scheme = url.getProtocol().toLowerCase(Locale.ROOT);
    this.port = url.getPort() >= 0 ? url.getPort() : url.getDefaultPort();
    String p = url.getPath();
    this.path = p == null || p.isEmpty() ? "/" : p;
    this.connectTimeout = template.getConnectTimeout() > 0 ? template.getConnectTimeout() : -1;
    this.readTimeout = template.getReadTimeout() > 0 ? template.getReadTimeout() : -1;
  }

  URL url() {
    return url;
  }

  void recordProperty(boolean add, String name, String value) {
    properties.add(new String[] {add ? "add" : "set", name, value});
  }

  /**
   * The request header lines the application's own calls left under {@code name} (in any case), as
   * the JDK's connection holds them: an add appends a line, a set replaces the value of the last
   * line of that name (keeping its spelling) or appends one. Each line: its name as spelled, its
   * value. The agent's attempt header replaces the application's value on the connection; this is
   * what the application set.
   */
  List<String[]> propertyLines(String name) {
    List<String[]> lines = new ArrayList<>();
    for (String[] p : properties) {
      if (!p[1].equalsIgnoreCase(name)) {
        continue;
      }
      if (p[0].equals("set") && !lines.isEmpty()) {
        lines.get(lines.size() - 1)[1] = p[2];
      } else {
        lines.add(new String[] {p[1], p[2]});
      }
    }
    return lines;
  }

  void recordAuthenticator(Authenticator a) {
    authenticator = a;
  }

  void recordFixedLength(long length) {
    streamMode = length;
  }

  void recordChunked(int chunk) {
    chunkLength = chunk;
    streamMode = CHUNKED;
  }

  /**
   * No streaming mode after all: one recorded from another thread that the JDK's connection did not
   * take before it opened its buffered body (UrlExchange#openBody).
   */
  void recordBuffered() {
    chunkLength = -1;
    streamMode = BUFFERED;
  }

  /** The streaming mode's declared length, or -1 (chunked or buffered). */
  long fixedLength() {
    long m = streamMode;
    return m >= 0 ? m : -1;
  }

  /**
   * True when the application declared a fixed length and wrote less of it: the JDK refuses the
   * response ({@code IOException: insufficient data written}), the application's own mistake.
   */
  boolean shortOfFixedLength() {
    long fixed = fixedLength();
    return fixed > 0 && (body == null || body.written() < fixed);
  }

  /** True in a streaming mode: the body goes to the socket as it is written. */
  boolean streaming() {
    return streamMode != BUFFERED;
  }

  void connectTimeout(int millis) {
    connectTimeout = millis;
  }

  /** The application's connect timeout, or -1 when it set none (the JDK's default applies). */
  int connectTimeout() {
    return connectTimeout;
  }

  void readTimeout(int millis) {
    readTimeout = millis;
  }

  /** The application's read timeout, or -1 when it set none (the JDK's default applies). */
  int readTimeout() {
    return readTimeout;
  }

  /**
   * The application calls {@code getOutputStream()}, or {@code connect()} before it may: until the
   * method is fixed, a GET with {@code doOutput} is judged as the POST the body makes it.
   */
  void bodyMayFollow() {
    bodyMayFollow = true;
  }

  void body(RequestBody b) {
    body = b;
  }

  RequestBody body() {
    return body;
  }

  /**
   * Fixes the method for every later attempt: the JDK turns a GET into a POST when the body is
   * opened, and a redirect followed inside an attempt turns the connection's POST into a GET, which
   * the next attempt must not copy.
   */
  void fixMethod(String m) {
    method = m;
  }

  /** The method a fresh attempt is given ({@link #fixMethod}, else the template's). */
  String attemptMethod() {
    return method != null ? method : template.getRequestMethod();
  }

  /**
   * Makes {@code fresh} the application's request again: settings copied from {@code previous} (the
   * attempt before, so a setting made after the first connect is kept), the recorded calls
   * replayed. The attempt header and timeouts are set by the caller.
   */
  void applyTo(HttpURLConnection fresh, HttpURLConnection previous) throws ProtocolException {
    fresh.setRequestMethod(attemptMethod());
    fresh.setDoInput(previous.getDoInput());
    fresh.setDoOutput(previous.getDoOutput());
    fresh.setUseCaches(previous.getUseCaches());
    fresh.setAllowUserInteraction(previous.getAllowUserInteraction());
    fresh.setIfModifiedSince(previous.getIfModifiedSince());
    // The instance's own setting, not the static default of now (setFollowRedirects may have
    // changed since the application opened its connection).
    fresh.setInstanceFollowRedirects(previous.getInstanceFollowRedirects());
    if (authenticator != null) {
      fresh.setAuthenticator(authenticator);
    }
    long mode = streamMode;
    if (mode == CHUNKED) {
      fresh.setChunkedStreamingMode(chunkLength);
    } else if (mode >= 0) {
      fresh.setFixedLengthStreamingMode(mode);
    }
    for (String[] p : properties) {
      if (p[0].equals("add")) {
        fresh.addRequestProperty(p[1], p[2]);
      } else {
        fresh.setRequestProperty(p[1], p[2]);
      }
    }
    if (fresh instanceof HttpsURLConnection && previous instanceof HttpsURLConnection) {
      HttpsURLConnection to = (HttpsURLConnection) fresh;
      HttpsURLConnection from = (HttpsURLConnection) previous;
      to.setSSLSocketFactory(from.getSSLSocketFactory());
      to.setHostnameVerifier(from.getHostnameVerifier());
    }
  }

  @Override
  public String method() {
    if (method != null) {
      return method;
    }
    // As the connection sends it (RequestInfo#method): setRequestMethod takes upper case only.
    String m = template.getRequestMethod();
    // What goes on the wire: the JDK turns a GET into a POST only when the body is opened, by the
    // application's getOutputStream() or, in a streaming mode, by the JDK itself with the
    // response. doOutput alone sends a GET: judged as a POST, it took the POST's route and the
    // JDK's own resend of a GET was switched off. After connect() the body may still come: judged
    // as the POST it may become until the response shows which (fixMethod), so a POST never gets
    // a route meant for GETs.
    return m.equals("GET") && template.getDoOutput() && (bodyMayFollow || streaming()) ? "POST" : m;
  }

  @Override
  public String scheme() {
    return scheme;
  }

  @Override
  public String host() {
    String h = url.getHost();
    return h == null ? "" : h;
  }

  @Override
  public int port() {
    return port;
  }

  @Override
  public String path() {
    return path;
  }

  /** Read from the URL when asked: only a path written asks. */
  @Override
  public boolean atPastPath() {
    return Sanitizer.atPastPath(url.getQuery(), url.getRef());
  }

  /**
   * The first value the JDK sends, from the recorded calls ({@code getRequestProperty} would hide
   * {@code Authorization}) read as the JDK keeps them: an add appends a line, a set replaces the
   * value of the last line of that name (or appends one). After add a, add b, set c the request
   * carries a and c: its first value is a, not the c set last.
   */
  @Override
  public String header(String name) {
    String first = null;
    int lines = 0;
    for (String[] p : properties) {
      if (p[1] != null && p[1].equalsIgnoreCase(name)) {
        if (p[0].equals("add") || lines == 0) {
          if (lines == 0) {
            first = p[2];
          }
          lines++;
        } else if (lines == 1) {
          first = p[2]; // a set replaces the last line: the first while it is the only one
        }
      }
    }
    return first;
  }

  @Override
  public boolean bodyReplayable() {
    return body == null || body.whyNotReplayable() == null;
  }

  /**
   * This request with a body taken as replayable: what the JDK's own resend of its buffered body is
   * judged as (only the method and the idempotency key matter then).
   *
   * @param sending the method the JDK sends it with now, when known (a POST it follows a redirect
   *     of with a GET); null: {@link #method()}
   */
  RequestInfo asIfBodyReplayable(String sending) {
    return new RequestInfo() {
      @Override
      public String method() {
        return sending != null ? sending : UrlRequest.this.method();
      }

      @Override
      public String scheme() {
        return scheme;
      }

      @Override
      public String host() {
        return UrlRequest.this.host();
      }

      @Override
      public int port() {
        return port;
      }

      @Override
      public String path() {
        return path;
      }

      @Override
      public boolean atPastPath() {
        return UrlRequest.this.atPastPath();
      }

      @Override
      public String header(String name) {
        return UrlRequest.this.header(name);
      }

      @Override
      public boolean bodyReplayable() {
        return true;
      }
    };
  }
}
