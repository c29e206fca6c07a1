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
import java.util.concurrent.TimeUnit;
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
   * Takes the lock for a setter the agent records, unless the application's call runs on another
   * thread, holding it from the call's start to its end (its waits between attempts among it): the
   * setter then answers at once as the JDK's connection does during its own call, where before it
   * waited for the whole call. Another holder (a setter, a step that does not run the call) lets
   * the lock go at once: waited for, and the running mark looked at again every millisecond
   * meanwhile, as a step taking the lock may start the call.
   *
   * @return 0 with the lock held; else the step ({@link UrlExchange#CONNECT}, {@link
   *     UrlExchange#BODY}, {@link UrlExchange#RESPONSE}) of the call running on another thread,
   *     without the lock
   */
  private int lockOrRunningStep() {
    boolean interrupted = false;
    try {
      while (!lock.tryLock()) {
        int s = runningElsewhere();
        if (s != 0) {
          return s;
        }
        try {
          if (lock.tryLock(1, TimeUnit.MILLISECONDS)) {
            return 0;
          }
        } catch (InterruptedException e) {
          interrupted = true; // the JDK's setter ignores an interrupt: kept for the caller
        }
      }
      return 0;
    } finally {
      if (interrupted) {
        Thread.currentThread().interrupt();
      }
    }
  }

  /**
   * The step of the application's call running now on another thread, or 0. Not on the call's own
   * thread (a callback of the JDK's during the step): the lock is its own.
   */
  private int runningElsewhere() {
    int s = x.runningStep();
    return s != 0 && !lock.isHeldByCurrentThread() ? s : 0;
  }

  /**
   * Whether the application's call runs now on another thread, so that a method the JDK's
   * connection refuses during its own call is refused: once its step began ({@code connecting}),
   * or, unless {@code connectToo}, once its socket is connected, which it is during a body or
   * response step (the agent's first attempt may still be waiting for its permit: the JDK's would
   * be connected by then). Read in JDK 17 and 25, the JDK's refusals are {@code
   * IllegalStateException}s, thrown at once or once its running step lets its lock go; the agent's
   * are thrown at once, where the call may still run for seconds (a wait between attempts). Before,
   * during a wait between attempts, the methods not taking the lock asked the previous attempt's
   * connection, which the agent had disconnected: {@code setUseCaches} or {@code setDoOutput} were
   * taken, and copied into the retry, where the JDK's refuses them.
   */
  private boolean refusedWhileRunning(boolean connectToo) {
    int s = runningElsewhere();
    return s != 0 && (connectToo || s != UrlExchange.CONNECT);
  }

  /**
   * What a setter that fresh attempts copy from the connection in use ({@link UrlRequest#applyTo})
   * or replay from the record is written under while another thread's call runs: the exchange holds
   * it while it makes a retry's connection from the previous one and makes it the one in use
   * ({@link UrlExchange#open}). A setter during a call run by {@code connect()} on another thread
   * (connect failures retried; the JDK's socket not yet connected, its setters taken) then reaches
   * that attempt, whether it came before the copy (copied) or after (written to it). Without it,
   * one written to the previous attempt just after the copy was lost for the retry, which then sent
   * without it, and the application read back the value it had replaced.
   */
  Object settings() {
    return request;
  }

  /**
   * Before a setter a fresh attempt copies ({@code setDoOutput}, {@code setUseCaches}, ...): the
   * JDK's refusal during another thread's response step (its socket connected then), and whether it
   * is written under {@link #settings()}: only while another thread's call runs, the only time a
   * retry's connection is made. Otherwise written as the JDK's, with no monitor (the JDK's setters
   * take none): the check is one volatile read. A setter that races with the start of another
   * thread's call is ordered by the application, as with the JDK's connection, whose fields are
   * plain: a retry's copy comes only after that call's first attempt failed and its wait.
   *
   * @return 0 to write it as the JDK's; else the running step ({@link UrlExchange#CONNECT}, {@link
   *     UrlExchange#BODY}), to write it under {@link #settings()} ({@link #refusedOnceConnected})
   */
  private int copiedWhileRunning() {
    int s = runningElsewhere();
    if (s == UrlExchange.RESPONSE) {
      throw new IllegalStateException("Already connected");
    }
    return s;
  }

  /**
   * Under {@link #settings()}, during another thread's body step: the JDK's {@code
   * getOutputStream()} connects before it reads the settings, and takes them until connected; ours
   * connects the attempt (connect failures retried) first too. Refused once that step connected an
   * attempt ({@link UrlExchange#mayStillConnectForBody}); else asked of the connection in use,
   * which refuses once connected, as the JDK's. Before, refused during the whole body step, its
   * connect and retries among it, where the JDK's takes it, and the body went buffered where the
   * JDK's streams it.
   */
  private void refusedOnceConnected(int step, String refusal) {
    if (step == UrlExchange.BODY && !x.mayStillConnectForBody()) {
      throw new IllegalStateException(refusal);
    }
  }

  /**
   * The {@code URLConnection} setters and the others a fresh attempt copies from the connection in
   * use: refused during another thread's response step (connected), else written to the connection
   * in use ({@link #copiedWhileRunning}), during a body step as long as it may still connect
   * ({@link #refusedOnceConnected}).
   */
  void setDoInput(boolean on) {
    int s = copiedWhileRunning();
    if (s == 0) {
      c().setDoInput(on);
      return;
    }
    synchronized (settings()) {
      refusedOnceConnected(s, "Already connected");
      c().setDoInput(on);
    }
  }

  /**
   * As the others, except {@code false} during another thread's body step, refused as before: the
   * JDK's {@code getOutputStream()} checked it before it connected and opens the body all the same,
   * where ours opens it after its connect and would fail on it (the JDK's check is there too).
   */
  void setDoOutput(boolean on) {
    int s = copiedWhileRunning();
    if (s == 0) {
      c().setDoOutput(on);
      return;
    }
    if (s == UrlExchange.BODY && !on) {
      throw new IllegalStateException("Already connected");
    }
    synchronized (settings()) {
      refusedOnceConnected(s, "Already connected");
      c().setDoOutput(on);
    }
  }

  void setAllowUserInteraction(boolean on) {
    int s = copiedWhileRunning();
    if (s == 0) {
      c().setAllowUserInteraction(on);
      return;
    }
    synchronized (settings()) {
      refusedOnceConnected(s, "Already connected");
      c().setAllowUserInteraction(on);
    }
  }

  void setUseCaches(boolean on) {
    int s = copiedWhileRunning();
    if (s == 0) {
      c().setUseCaches(on);
      return;
    }
    synchronized (settings()) {
      refusedOnceConnected(s, "Already connected");
      c().setUseCaches(on);
    }
  }

  void setIfModifiedSince(long since) {
    int s = copiedWhileRunning();
    if (s == 0) {
      c().setIfModifiedSince(since);
      return;
    }
    synchronized (settings()) {
      refusedOnceConnected(s, "Already connected");
      c().setIfModifiedSince(since);
    }
  }

  /**
   * Taken at any time, as the JDK's: no check of its own; under {@link #settings()} only while
   * another thread's call runs ({@link #copiedWhileRunning}, which it is never refused by).
   */
  void setInstanceFollowRedirects(boolean follow) {
    if (runningElsewhere() == 0) {
      c().setInstanceFollowRedirects(follow);
      return;
    }
    synchronized (settings()) {
      c().setInstanceFollowRedirects(follow);
    }
  }

  /**
   * Whether a setter the JDK takes at any time and a fresh attempt copies (the https socket factory
   * and hostname verifier) is written under {@link #settings()}: only while another thread's call
   * runs ({@link #copiedWhileRunning}).
   */
  boolean underSettings() {
    return runningElsewhere() != 0;
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

  /** During another thread's call, the JDK's refusal of a connection whose step began. */
  void setRequestProperty(String key, String value) {
    if (lockOrRunningStep() != 0) {
      throw new IllegalStateException("Already connected");
    }
    try {
      c().setRequestProperty(key, value);
      request.recordProperty(false, key, value);
    } finally {
      unlockSetting();
    }
  }

  void addRequestProperty(String key, String value) {
    if (lockOrRunningStep() != 0) {
      throw new IllegalStateException("Already connected");
    }
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
    if (refusedWhileRunning(false)) {
      // The JDK's waits for its running body or response step (its lock) and answers as its
      // connection is then: refused once connected, the map after a response without a body (the
      // JDK lets that connection go). Ours waits for the call, to answer as its final connection:
      // during a wait between attempts the previous attempt's, which the agent may have
      // disconnected, answered. Its connect() holds no lock while it connects: not waited for.
      lock.lock();
      unlockSetting();
    }
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
    if (lockOrRunningStep() != 0) {
      // the JDK's check comes before its null check
      throw new IllegalStateException("Authenticator must be set before connecting");
    }
    try {
      c().setAuthenticator(auth);
      request.recordAuthenticator(auth);
    } finally {
      unlockSetting();
    }
  }

  /**
   * During another thread's response step, the JDK's refusal once connected: its first check.
   * During a call run by {@code connect()} or {@code getOutputStream()} on another thread (connect
   * failures retried), taken at once as long as it may still connect, as the JDK's while it
   * connects ({@link #streamingWhileConnecting}).
   */
  void setFixedLengthStreamingMode(long length) {
    int s = lockOrRunningStep();
    if (s == UrlExchange.CONNECT || s == UrlExchange.BODY) {
      streamingWhileConnecting(length, 0, s);
      return;
    } else if (s != 0) {
      throw new IllegalStateException("Already connected");
    }
    try {
      c().setFixedLengthStreamingMode(length);
      request.recordFixedLength(length);
    } finally {
      unlockSetting();
    }
  }

  void setFixedLengthStreamingMode(int length) {
    int s = lockOrRunningStep();
    if (s == UrlExchange.CONNECT || s == UrlExchange.BODY) {
      streamingWhileConnecting(length, 1, s);
      return;
    } else if (s != 0) {
      throw new IllegalStateException("Already connected");
    }
    try {
      c().setFixedLengthStreamingMode(length);
      request.recordFixedLength(length);
    } finally {
      unlockSetting();
    }
  }

  void setChunkedStreamingMode(int chunkLength) {
    int s = lockOrRunningStep();
    if (s == UrlExchange.CONNECT || s == UrlExchange.BODY) {
      streamingWhileConnecting(chunkLength, 2, s);
      return;
    } else if (s != 0) {
      throw new IllegalStateException("Can't set streaming mode: already connected");
    }
    try {
      c().setChunkedStreamingMode(chunkLength);
      request.recordChunked(chunkLength);
    } finally {
      unlockSetting();
    }
  }

  /**
   * A streaming mode set while another thread's {@code connect()} runs, its connect failures
   * retried (its waits between attempts among it): the JDK's connection is not connected while it
   * connects and takes it at once (or refuses the other mode, or a negative length), and the body
   * it sends once connected is streamed so. Ours: asked of the connection in use (a failed attempt
   * during a wait, the attempt connecting, each with the modes recorded so far), which checks it as
   * the JDK's, then recorded for every later attempt, both under {@link #settings()}, which the
   * exchange holds while it makes the next attempt's connection from the record: the retry is given
   * it, or is the connection in use that took it. Nothing is sent before the connect ends, so no
   * attempt sent a body the retry would stream differently. Before, it waited for the whole call
   * and was then refused, the socket connected: the body went buffered where the JDK's is streamed.
   *
   * <p>The same during a call run by {@code getOutputStream()} without {@code connect()} first (its
   * connect failures retried): the JDK's connects, then reads the streaming mode, and takes one
   * from another thread until then ({@link #refusedOnceConnected}); the body the attempt then opens
   * is streamed so ({@link UrlExchange#openBody} waits for this one when it came meanwhile).
   *
   * @param kind 0: a fixed length (long), 1: a fixed length (int), 2: chunked
   * @param step the step running on another thread: {@link UrlExchange#CONNECT} or {@link
   *     UrlExchange#BODY}
   */
  private void streamingWhileConnecting(long n, int kind, int step) {
    synchronized (settings()) {
      refusedOnceConnected(
          step, kind == 2 ? "Can't set streaming mode: already connected" : "Already connected");
      HttpURLConnection c = c();
      if (kind == 2) {
        c.setChunkedStreamingMode((int) n);
        request.recordChunked((int) n);
      } else {
        if (kind == 1) {
          c.setFixedLengthStreamingMode((int) n);
        } else {
          c.setFixedLengthStreamingMode(n);
        }
        if (step == UrlExchange.BODY) {
          x.fixedLengthDuringBody(n); // before the record: it compares with the one held
        }
        request.recordFixedLength(n);
      }
    }
  }

  /**
   * During another thread's call, the JDK's refusal of a connection whose step began: asked of the
   * connection in use, a fresh attempt's not yet connecting (or the template during the first
   * attempt's wait for its permit) took it, for that attempt alone.
   */
  void setRequestMethod(String method) throws ProtocolException {
    if (refusedWhileRunning(true)) {
      throw new IllegalStateException("connect in progress");
    }
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

  /**
   * The final connection for a header getter: the JDK's asks its response first and ignores an
   * {@code IOException} there (it remembers it: later methods throw chained copies), so the final
   * attempt's one is dropped; but a {@code RuntimeException} of it (the application's {@code
   * ResponseCache}, {@code CookieHandler}) leaves the JDK's getter as it is, on its first throw:
   * thrown here the same, not wrapped by the connection's second throw.
   */
  private HttpURLConnection looked() {
    HttpURLConnection c = finished();
    Throwable first = x.takeUnseen();
    if (first instanceof RuntimeException) {
      throw (RuntimeException) first;
    }
    if (first instanceof Error) {
      throw (Error) first;
    }
    return c;
  }

  /**
   * The final connection for {@code getContent}, which asks {@code getInputStream()} first in the
   * JDK's: its first throw is the very exception of the final attempt, as {@link
   * #getInputStream}'s.
   */
  private HttpURLConnection forContent() throws IOException {
    HttpURLConnection c = finished();
    Throwable first = x.takeUnseen();
    if (first != null) {
      throw Connections.rethrow(first);
    }
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

  /**
   * Never starts the exchange: null before it, as the JDK's, and during another thread's call, as
   * the JDK's has no response yet; the previous attempt's connection, during the wait for a retry,
   * answered that attempt's error body.
   */
  InputStream getErrorStream() {
    if (refusedWhileRunning(true)) {
      return null;
    }
    return c().getErrorStream();
  }

  Object getContent() throws IOException {
    return forContent().getContent();
  }

  @SuppressWarnings("rawtypes")
  Object getContent(Class[] classes) throws IOException {
    return forContent().getContent(classes);
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
