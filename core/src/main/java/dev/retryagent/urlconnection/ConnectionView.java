package dev.retryagent.urlconnection;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Authenticator;
import java.net.HttpURLConnection;
import java.net.ProtocolException;
import java.net.URL;
import java.security.Permission;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.locks.ReentrantLock;

/**
 * What the application's connection answers, method by method, for both facades ({@link
 * RetryingHttpConnection}, {@link RetryingHttpsConnection}), which only forward here.
 *
 * <ul>
 *   <li>Configuration goes to the connection in use (the template until the call starts), so the
 *       JDK validates it and throws as it would; what a fresh attempt cannot read back from it is
 *       recorded once the JDK accepted it.
 *   <li>The network steps ({@code connect}, {@code getOutputStream}) and the response methods run
 *       the call ({@link UrlExchange}); the response methods then ask the final attempt's
 *       connection.
 * </ul>
 */
final class ConnectionView {
  private final UrlExchange x;
  private final UrlRequest request;
  private final ReentrantLock lock;

  ConnectionView(UrlExchange exchange) {
    this.x = exchange;
    this.request = exchange.request;
    this.lock = exchange.lock();
  }

  /** The connection in use: configuration and state questions. */
  HttpURLConnection c() {
    return x.current();
  }

  /** The JDK's own connection, for the https questions before any attempt ran. */
  HttpURLConnection template() {
    return x.template;
  }

  // ---- configuration: forwarded, and recorded where the JDK cannot report it back

  /**
   * Lets the lock go after a setter: every release of the lock then looks at a {@code disconnect()}
   * that found it held ({@link UrlExchange#released}), which only the holder can handle.
   */
  private void unlockSetting() {
    lock.unlock();
    x.released();
  }

  /**
   * A timeout setter never waits for the lock, as the JDK's setter is a field write that returns at
   * once: held (another thread's call running, its backoff among it, for as long as it runs), the
   * value is recorded for the call's later attempts and written to the connection in use by whoever
   * holds the lock next ({@link UrlExchange#timeoutSetMeanwhile}). Before, the setter waited for
   * the whole running call.
   */
  void setConnectTimeout(int millis) {
    if (!lock.tryLock()) {
      x.timeoutSetMeanwhile(true, millis);
      return;
    }
    try {
      c().setConnectTimeout(millis);
      request.connectTimeout(millis);
    } finally {
      unlockSetting();
    }
  }

  /** The application's own value; an attempt may have been given a shorter one. */
  int getConnectTimeout() {
    return Math.max(0, request.connectTimeout());
  }

  /** As {@link #setConnectTimeout}: never waits for a running call. */
  void setReadTimeout(int millis) {
    if (!lock.tryLock()) {
      x.timeoutSetMeanwhile(false, millis);
      return;
    }
    try {
      c().setReadTimeout(millis);
      request.readTimeout(millis);
    } finally {
      unlockSetting();
    }
  }

  int getReadTimeout() {
    return Math.max(0, request.readTimeout());
  }

  void setRequestProperty(String key, String value) {
    lock.lock();
    try {
      c().setRequestProperty(key, value);
      request.recordProperty(false, key, value);
    } finally {
      unlockSetting();
    }
  }

  void addRequestProperty(String key, String value) {
    lock.lock();
    try {
      c().addRequestProperty(key, value);
      request.recordProperty(true, key, value);
    } finally {
      unlockSetting();
    }
  }

  /**
   * The connection's answer, except for the agent's attempt header: it is on every attempt's
   * connection (and so on the wire), but the application never set it and without the agent would
   * not see it. For that name, what the application set itself: the value of its last line, as the
   * JDK answers, or null. Before, the application read the attempt's number.
   */
  String getRequestProperty(String key) {
    String header = x.attemptHeader();
    if (key == null || header == null || !header.equalsIgnoreCase(key)) {
      return c().getRequestProperty(key);
    }
    List<String[]> own = request.propertyLines(header);
    return own.isEmpty() ? null : own.get(own.size() - 1)[1];
  }

  /**
   * The connection's answer (the JDK's refusal once connected among it), with the attempt header's
   * lines replaced by what the application set under that name ({@link #getRequestProperty}), in
   * the JDK's shape: an unmodifiable {@code HashMap} of unmodifiable lists, by name as spelled, in
   * the JDK's order. The JDK fills a fresh {@code HashMap} name by name in the order of its lines
   * (JDK 17 from the last); the connection's map, iterated, gives them in an order that fills one
   * the same way (within a bucket, the order they were put), so its names are put in that order,
   * the application's own lines under the header's name in their place. Before, those came last,
   * and a name sharing their bucket came out before them, where the JDK's map has it after.
   */
  Map<String, List<String>> getRequestProperties() {
    Map<String, List<String>> all = c().getRequestProperties();
    String header = x.attemptHeader();
    if (header == null) {
      return all;
    }
    Map<String, List<String>> own = new HashMap<>();
    for (String[] line : request.propertyLines(header)) {
      List<String> values = own.get(line[0]);
      if (values == null) {
        values = new ArrayList<>();
        own.put(line[0], values);
      }
      values.add(line[1]);
    }
    Map<String, List<String>> shown = new HashMap<>();
    for (Map.Entry<String, List<String>> e : all.entrySet()) {
      String name = e.getKey();
      if (name == null || !header.equalsIgnoreCase(name)) {
        shown.put(name, e.getValue());
      } else if (own.containsKey(name)) {
        shown.put(name, Collections.unmodifiableList(own.remove(name)));
      } // else the agent's own line: the application never set it
    }
    for (Map.Entry<String, List<String>> e : own.entrySet()) {
      shown.put(e.getKey(), Collections.unmodifiableList(e.getValue()));
    }
    return Collections.unmodifiableMap(shown);
  }

  void setAuthenticator(Authenticator auth) {
    lock.lock();
    try {
      c().setAuthenticator(auth);
      request.recordAuthenticator(auth);
    } finally {
      unlockSetting();
    }
  }

  void setFixedLengthStreamingMode(long length) {
    lock.lock();
    try {
      c().setFixedLengthStreamingMode(length);
      request.recordFixedLength(length);
    } finally {
      unlockSetting();
    }
  }

  void setFixedLengthStreamingMode(int length) {
    lock.lock();
    try {
      c().setFixedLengthStreamingMode(length);
      request.recordFixedLength(length);
    } finally {
      unlockSetting();
    }
  }

  void setChunkedStreamingMode(int chunkLength) {
    lock.lock();
    try {
      c().setChunkedStreamingMode(chunkLength);
      request.recordChunked(chunkLength);
    } finally {
      unlockSetting();
    }
  }

  void setRequestMethod(String method) throws ProtocolException {
    c().setRequestMethod(method);
  }

  // ---- the network steps

  void connect() throws IOException {
    int seen = x.disconnectCount(); // before the lock: UrlExchange.stepBegins
    lock.lock();
    try {
      x.connect(seen);
      x.watch(this); // only the application's connection holds this view
    } finally {
      lock.unlock();
      x.stepEnded(); // a disconnect() that found the lock held
    }
  }

  OutputStream getOutputStream() throws IOException {
    int seen = x.disconnectCount(); // before the lock: UrlExchange.stepBegins
    lock.lock();
    try {
      OutputStream out = x.getOutputStream(seen);
      x.watch(this);
      return out;
    } finally {
      lock.unlock();
      x.stepEnded(); // a disconnect() that found the lock held
    }
  }

  /** The exchange, for tests. */
  UrlExchange exchange() {
    return x;
  }

  void disconnect() {
    x.disconnect();
  }

  @Override
  public String toString() {
    return x.describe();
  }

  // ---- the response: the call runs once, then the final attempt's connection answers

  private HttpURLConnection finished() {
    int seen = x.disconnectCount(); // before the lock: UrlExchange.stepBegins
    lock.lock();
    try {
      x.finish(seen);
      return x.current();
    } finally {
      lock.unlock();
      x.stepEnded(); // a disconnect() that found the lock held
    }
  }

  /** The final connection after a method that does not throw: the JDK remembers the failure. */
  private HttpURLConnection looked() {
    HttpURLConnection c = finished();
    x.takeUnseen();
    return c;
  }

  InputStream getInputStream() throws IOException {
    HttpURLConnection c = finished();
    Throwable first = x.takeUnseen();
    if (first != null) {
      throw Connections.rethrow(first); // the very exception, as the JDK's first call throws it
    }
    return c.getInputStream();
  }

  int getResponseCode() throws IOException {
    HttpURLConnection c = finished();
    Throwable first = x.takeUnseen();
    try {
      return c.getResponseCode();
    } catch (IOException e) {
      throw first != null ? Connections.rethrow(first) : e;
    }
  }

  String getResponseMessage() throws IOException {
    HttpURLConnection c = finished();
    Throwable first = x.takeUnseen();
    try {
      return c.getResponseMessage();
    } catch (IOException e) {
      throw first != null ? Connections.rethrow(first) : e;
    }
  }

  /** Never starts the exchange: null before it, as the JDK's. */
  InputStream getErrorStream() {
    return c().getErrorStream();
  }

  Object getContent() throws IOException {
    return looked().getContent();
  }

  @SuppressWarnings("rawtypes")
  Object getContent(Class[] classes) throws IOException {
    return looked().getContent(classes);
  }

  String getHeaderField(String name) {
    return looked().getHeaderField(name);
  }

  String getHeaderField(int n) {
    return looked().getHeaderField(n);
  }

  String getHeaderFieldKey(int n) {
    return looked().getHeaderFieldKey(n);
  }

  Map<String, List<String>> getHeaderFields() {
    return looked().getHeaderFields();
  }

  int getHeaderFieldInt(String name, int defaultValue) {
    return looked().getHeaderFieldInt(name, defaultValue);
  }

  long getHeaderFieldLong(String name, long defaultValue) {
    return looked().getHeaderFieldLong(name, defaultValue);
  }

  long getHeaderFieldDate(String name, long defaultValue) {
    return looked().getHeaderFieldDate(name, defaultValue);
  }

  int getContentLength() {
    return looked().getContentLength();
  }

  long getContentLengthLong() {
    return looked().getContentLengthLong();
  }

  String getContentType() {
    return looked().getContentType();
  }

  String getContentEncoding() {
    return looked().getContentEncoding();
  }

  long getExpiration() {
    return looked().getExpiration();
  }

  long getDate() {
    return looked().getDate();
  }

  long getLastModified() {
    return looked().getLastModified();
  }

  // ---- state questions, forwarded as they are

  URL getURL() {
    return c().getURL();
  }

  boolean usingProxy() {
    return c().usingProxy();
  }

  Permission getPermission() throws IOException {
    return c().getPermission();
  }
}
