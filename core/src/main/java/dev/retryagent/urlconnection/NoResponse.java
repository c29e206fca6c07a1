package dev.retryagent.urlconnection;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Authenticator;
import java.net.HttpURLConnection;
import java.net.ProtocolException;
import java.net.URL;
import java.util.List;
import java.util.Map;

/**
 * The final "connection" of a call that ended without one the application may ask: the engine
 * refused it (circuit breaker open, no rate-limit permit), or the wait for a retry was interrupted
 * or cancelled. Answers as the JDK's connection answers after a step that failed (read in JDK 17
 * and 25: a refused {@code connect()}, {@code getOutputStream()} or {@code getResponseCode()}): the
 * response methods throw the failure, header methods return null or their defaults (the inherited
 * implementations, built on {@link #getHeaderField(String)}), {@code getErrorStream()} null. The
 * request's properties are read from the connection that had them: what the application set (an
 * error handler names the request from them); a blank connection answered a GET without headers.
 * Its method is the one the JDK's connection has after that step. The JDK's connection stays
 * "connecting" after its failed step: it refuses request properties ({@code IllegalStateException:
 * Already connected}), the method and the authenticator, and takes every other setting, which its
 * getter then answers; so does this one. Before, it took a request property and answered null for
 * it, and its getters answered the settings of before. Once an attempt of the call connected (a
 * retried 503, then a retry the engine refused), the JDK's connection that had that step is
 * connected, and refuses more ({@link #refuseOnceConnected}); so does this one.
 */
final class NoResponse extends HttpURLConnection {
  /** The JDK's message for a body asked without {@code doOutput}. */
  private static final String DO_OUTPUT_REFUSED =
      "cannot write to a URLConnection if doOutput=false - call setDoOutput(true)";

  private final Throwable failure;
  private final HttpURLConnection settings;

  /** Not final: the JDK turns a GET into a POST as it refuses a body after its response. */
  private String method;

  /**
   * An attempt of the call connected: the JDK's connection, after a step that failed once it had
   * connected (a 503 received, a connection reset), stays connected and refuses what a connected
   * one refuses ({@link #refuseOnceConnected}). Not final: set after the constructor's copies,
   * which go through the setters it guards.
   */
  private boolean connected;

  /**
   * The JDK read the response of the attempt whose connection has the settings (a 503 retried, then
   * the retry refused): its connection holds that response's input stream, and refuses a body after
   * it ({@link #getOutputStream}).
   */
  private final boolean inputRead;

  /**
   * The JDK's connection remembers what its getOutputStream() threw and throws a chained copy when
   * asked again with doOutput (JDK-8314978: JDK 22+, not JDK 17; looked up rather than assumed from
   * the version, as updates may take it).
   */
  private static final boolean REMEMBERS_OUTPUT_REFUSAL = remembersOutputRefusal();

  private static boolean remembersOutputRefusal() {
    try {
      Class.forName("sun.net.www.protocol.http.HttpURLConnection")
          .getDeclaredField("rememberedExceptionOut");
      return true;
    } catch (ReflectiveOperationException | RuntimeException e) {
      return false;
    }
  }

  /** What {@link #getOutputStream} threw last: the JDK remembers it. */
  private IOException outputRefused;

  /**
   * An attempt of the call connected (the host answered: a status, or a reset after the request);
   * unlike {@link #connected}, not cleared by a disconnect.
   */
  private final boolean reachedHost;

  /** What the request's settings and body are read from. */
  private final UrlRequest request;

  /**
   * The JDK's connection let go of the buffered body the application wrote: a redirect it followed
   * turned the POST into a GET, and with it dropped its buffer ({@code poster = null}, JDK 17 and
   * 25), the one way a buffered body goes with a GET (opening one turns a GET into a POST). Asked
   * again, it hands out a new buffer ({@link #unsentBody}).
   */
  private final boolean bodyDropped;

  /** The buffered body handed out when the application had none: {@link #unsentBody}. */
  private OutputStream unsent;

  /** A response method threw the failure: the JDK's connection remembers it from then on. */
  private boolean failureThrown;

  /**
   * @param settings the connection the application's settings were made on, or copied to: the
   *     template or the last attempt
   * @param method the method the JDK's connection has after the step that failed
   * @param request the application's request, for the streaming mode no connection reports back
   * @param connected an attempt of the call connected ({@link #connected})
   * @param inputRead the JDK read the response of {@code settings}' attempt ({@link #inputRead})
   */
  NoResponse(
      URL url,
      Throwable failure,
      HttpURLConnection settings,
      String method,
      UrlRequest request,
      boolean connected,
      boolean inputRead) {
    super(url);
    this.failure = failure;
    this.settings = settings;
    this.method = method;
    // The settings the application may still change, held here as the JDK's connection holds them.
    setDoInput(settings.getDoInput());
    setDoOutput(settings.getDoOutput());
    setUseCaches(settings.getUseCaches());
    setAllowUserInteraction(settings.getAllowUserInteraction());
    setIfModifiedSince(settings.getIfModifiedSince());
    setInstanceFollowRedirects(settings.getInstanceFollowRedirects());
    // The mode only matters for the JDK's refusal of the other one; its chunk size is not read.
    if (request.fixedLength() >= 0) {
      setFixedLengthStreamingMode(request.fixedLength());
    } else if (request.streaming()) {
      setChunkedStreamingMode(-1);
    }
    this.connected = connected;
    this.reachedHost = connected;
    this.request = request;
    RequestBody written = request.body();
    this.bodyDropped = "GET".equals(method) && written != null && !written.streamed();
    this.inputRead = inputRead;
  }

  /**
   * What the JDK's connected connection refuses (read in JDK 17 and 25): its request properties
   * (the map), {@code doInput}, {@code doOutput}, caches, user interaction, {@code ifModifiedSince}
   * and the streaming modes. Before, these were taken, and the map answered: the application's
   * properties, or, from a connection the agent's release had disconnected (a retried response over
   * the release's limit), the headers the JDK wrote, its request line among them.
   */
  private void refuseOnceConnected() {
    if (connected) {
      throw new IllegalStateException("Already connected"); // the JDK's message
    }
  }

  HttpURLConnection settings() {
    return settings;
  }

  @Override
  public String getRequestMethod() {
    return method;
  }

  @Override
  public void setRequestMethod(String method) {
    throw new IllegalStateException("connect in progress"); // the JDK's message
  }

  @Override
  public String getRequestProperty(String key) {
    return settings.getRequestProperty(key);
  }

  @Override
  public Map<String, List<String>> getRequestProperties() {
    refuseOnceConnected();
    return settings.getRequestProperties();
  }

  @Override
  public void setDoInput(boolean doInput) {
    refuseOnceConnected();
    super.setDoInput(doInput);
  }

  @Override
  public void setDoOutput(boolean doOutput) {
    refuseOnceConnected();
    super.setDoOutput(doOutput);
  }

  @Override
  public void setUseCaches(boolean useCaches) {
    refuseOnceConnected();
    super.setUseCaches(useCaches);
  }

  @Override
  public void setAllowUserInteraction(boolean allow) {
    refuseOnceConnected();
    super.setAllowUserInteraction(allow);
  }

  @Override
  public void setIfModifiedSince(long ifModifiedSince) {
    refuseOnceConnected();
    super.setIfModifiedSince(ifModifiedSince);
  }

  @Override
  public void setFixedLengthStreamingMode(int contentLength) {
    refuseOnceConnected();
    super.setFixedLengthStreamingMode(contentLength);
  }

  @Override
  public void setFixedLengthStreamingMode(long contentLength) {
    refuseOnceConnected();
    super.setFixedLengthStreamingMode(contentLength);
  }

  @Override
  public void setChunkedStreamingMode(int chunklen) {
    if (connected) {
      throw new IllegalStateException("Can't set streaming mode: already connected"); // the JDK's
    }
    super.setChunkedStreamingMode(chunklen);
  }

  @Override
  public void setRequestProperty(String key, String value) {
    throw new IllegalStateException("Already connected");
  }

  @Override
  public void addRequestProperty(String key, String value) {
    throw new IllegalStateException("Already connected");
  }

  @Override
  public void setAuthenticator(Authenticator auth) {
    throw new IllegalStateException("Authenticator must be set before connecting");
  }

  private IOException fail() throws IOException {
    if (failure instanceof IOException) {
      throw (IOException) failure;
    }
    if (failure instanceof RuntimeException) {
      throw (RuntimeException) failure;
    }
    throw (Error) failure;
  }

  /**
   * The JDK's connect() after its failed step tries to connect again (a new TCP connect, nothing
   * sent) and throws what that attempt throws: a fresh exception, not the one it threw before. Here
   * a copy of the failure ({@link #copyOf}), as nothing is sent again. Before, the very failure.
   * Once an attempt connected (a reset), the JDK's connection is connected and its connect() does
   * nothing; so does this one's (before, the failure).
   */
  @Override
  public void connect() throws IOException {
    if (connected) {
      return;
    }
    throw freshFailure();
  }

  private IOException freshFailure() throws IOException {
    if (failure instanceof IOException) {
      return copyOf((IOException) failure, false);
    }
    throw fail();
  }

  /**
   * A new exception of {@code f}'s class and message, chained to it or not (the JDK's {@code
   * getChainedException}: its public {@code (String)} constructor, else {@code f} itself, as for
   * the engine's own exceptions).
   */
  private static IOException copyOf(IOException f, boolean chained) {
    try {
      IOException copy = f.getClass().getConstructor(String.class).newInstance(f.getMessage());
      if (chained) {
        copy.initCause(f);
      }
      return copy;
    } catch (ReflectiveOperationException | RuntimeException e) {
      return f;
    }
  }

  /**
   * The first response method threw the failure itself; the later ones (getInputStream, and
   * getResponseCode, getResponseMessage and getContent through it) throw what the JDK's connection
   * throws from the exception it remembers (read in JDK 17 and 25): a copy of the same class and
   * message chained to it ({@code getChainedException}: its public {@code (String)} constructor,
   * else the very exception, as for the engine's own exceptions), a {@code RuntimeException}
   * wrapped in a new one. Before, the very exception each time.
   */
  @Override
  public InputStream getInputStream() throws IOException {
    if (!getDoInput()) {
      // The JDK checks doInput before the exception it remembers (JDK 17 and 25), so a doInput
      // set false after the failure is refused as such. Before, the failure again.
      throw new ProtocolException(
          "Cannot read from URLConnection if doInput=false (call setDoInput(true))");
    }
    if (!failureThrown) {
      failureThrown = true;
      throw fail();
    }
    if (failure instanceof RuntimeException) {
      throw new RuntimeException(failure);
    }
    if (!(failure instanceof IOException)) {
      throw fail(); // an Error: the JDK remembers none
    }
    throw copyOf((IOException) failure, true);
  }

  /**
   * As the JDK's connection after its failed step (read in JDK 17 and 25, with a loopback server
   * counting requests), in the JDK's order: without {@code doOutput} its refusal; on JDK 22+ a
   * chained copy of the refusal it remembers; a GET turned POST; a plain-http TRACE refused; after
   * reading a response, {@code "Cannot write output after reading input."}. Each refusal
   * disconnects and is remembered, as the JDK's ({@link #refuse}). Past those checks the JDK's
   * connection connects if it is not connected (once the host answered, a refusal or the
   * application's {@code disconnect()} left it so: JDK 17 connects anew there) and hands out its
   * body stream, sending nothing: the same buffered stream as before (or a new one), or its
   * streaming mode's stream, closed since the response was asked. So does this one ({@link
   * #unsentBody}), without the JDK's TCP connect: nothing can ever be sent through it, as nothing
   * is through the JDK's (its response methods throw the exception they remember). Before, the
   * call's failure (after a reset the breaker's exception, or on JDK 17 the refusal again).
   *
   * <p>Still the call's failure, a fresh copy remembered and disconnecting: after a call that never
   * connected (the JDK's connection tries its connect again: a refused port refuses again, and an
   * open one would be a connection the engine never saw), and in a streaming mode with no streamed
   * body (never opened, or a buffered one written before the mode was set after a disconnect),
   * where the JDK's connection would open it now and send the request's head: a request the
   * application never made through the call.
   */
  @Override
  public OutputStream getOutputStream() throws IOException {
    if (!getDoOutput()) {
      throw refuse(new ProtocolException(DO_OUTPUT_REFUSED));
    }
    if (outputRefused != null && REMEMBERS_OUTPUT_REFUSAL) {
      throw refuse(copyOf(outputRefused, true));
    }
    if ("GET".equals(method)) {
      method = "POST"; // the JDK's backward compatibility, before its checks of TRACE and input
    }
    if (refusesTrace()) {
      throw refuse(new ProtocolException("HTTP method TRACE doesn't support output"));
    }
    if (inputRead && outputRefused == null) {
      // The JDK holds the response's input stream until a refusal disconnects it internally.
      throw refuse(new ProtocolException("Cannot write output after reading input."));
    }
    OutputStream body = connected || reachedHost ? unsentBody() : null;
    if (body != null) {
      connected = true; // the JDK's connection connected again, if it had to
      return body;
    }
    throw refuse(freshFailure()); // the JDK tries its step again and fails
  }

  /**
   * The body stream the JDK's connection hands out after its call ended, or null where it would
   * send ({@link #getOutputStream}): the application's own, as the JDK returns the same one (its
   * buffer, into which a write goes nowhere, as the JDK's buffer is sent only with a response this
   * call never asks again; or the streamed tee, whose JDK stream the response step closed: {@code
   * IOException: Stream is closed}); else, buffered, a new buffer as the JDK's (also where the
   * JDK's let go of the application's: {@link #bodyDropped}; before, that old one, closed). In a
   * streaming mode set after the call (the application's disconnect() allows it) the JDK's
   * connection opens a streamed body when it has none, a buffer of before notwithstanding, and so
   * sends: null there. Before, the buffer of before was handed out, where the JDK sent a new
   * request.
   */
  private OutputStream unsentBody() {
    RequestBody written = request.body();
    if (written != null && written.streamed()) {
      return written.stream(); // the JDK's streamed body, which it hands out in any mode
    }
    if (chunkLength != -1 || fixedContentLength != -1 || fixedContentLengthLong != -1) {
      return null; // a streaming mode, as this connection holds it (set before or after the call)
    }
    if (written != null && !bodyDropped) {
      return written.stream();
    }
    if (unsent == null) {
      unsent = new UnsentBuffer();
    }
    return unsent;
  }

  /**
   * A buffered body the JDK's connection hands out after its call ended (its {@code
   * PosterOutputStream}): kept in memory, never sent, writes after {@code close()} ignored.
   */
  private static final class UnsentBuffer extends ByteArrayOutputStream {
    private boolean closed;

    @Override
    public synchronized void write(int b) {
      if (!closed) {
        super.write(b);
      }
    }

    @Override
    public synchronized void write(byte[] b, int off, int len) {
      if (!closed) {
        super.write(b, off, len);
      }
    }

    @Override
    public synchronized void reset() {
      if (!closed) {
        super.reset();
      }
    }

    @Override
    public synchronized void close() {
      closed = true;
    }
  }

  /**
   * The JDK refuses a body to a plain-http TRACE before it looks at its input or connects (JDK 17
   * and 25), after its doOutput check and its remembered refusal.
   */
  private boolean refusesTrace() {
    return "TRACE".equals(method) && "http".equals(url.getProtocol());
  }

  /**
   * A refusal of {@code getOutputStream()} ({@link #getOutputStream}), as the JDK's: it disconnects
   * internally (the connection counts as not connected from then on: its settings taken, its map
   * answered, no error stream) and remembers it (JDK 22+, JDK-8314978: a chained copy when a body
   * is asked again with doOutput).
   */
  private IOException refuse(IOException refused) {
    outputRefused = refused;
    disconnect(); // the JDK's internal disconnect
    return refused;
  }

  /**
   * The JDK's header getters ask for the response first and ignore its {@code IOException} (read in
   * JDK 17 and 25): the first such ask throws the failure, so the later response methods throw
   * chained copies ({@link #getInputStream}), and a {@code RuntimeException} comes out of the
   * getter itself. Before, the getters asked nothing, and the next response method threw the very
   * failure where the JDK's throws a copy chained to it.
   */
  private void askResponse() {
    try {
      getInputStream();
    } catch (IOException e) {
      // as the JDK's getters: no response, no headers
    }
  }

  @Override
  public String getHeaderField(String name) {
    askResponse();
    return null;
  }

  @Override
  public String getHeaderField(int n) {
    askResponse();
    return null;
  }

  @Override
  public String getHeaderFieldKey(int n) {
    askResponse();
    return null;
  }

  @Override
  public Map<String, List<String>> getHeaderFields() {
    askResponse();
    return super.getHeaderFields();
  }

  /**
   * The JDK's connected connection, disconnected by the application, counts as not connected again
   * (read in JDK 17 and 25): it takes the settings {@link #refuseOnceConnected} guards, and its map
   * answers the headers it wrote. So does this one: the settings' connection, disconnected too (as
   * the application's own disconnect() would have), answers that map; one the agent's release had
   * disconnected already answers it as it is. Before, this did nothing, and all stayed refused.
   * Still different: a response the release read whole (a small body, its socket back in the JDK's
   * pool) leaves that connection counting as connected, which disconnect() no longer changes, so
   * the map is still refused there, where the JDK's connection answers it. The JDK's close of the
   * body stream lets go of its socket ({@code http = null}) and leaves it "connected" (JDK 17 and
   * 25; an application's own connection whose body it read and closed is so too). Not fixed: only a
   * release that leaves the stream open would avoid it, and the JDK's disconnect() of such a
   * connection closes an idle pooled socket to the host, maybe the one the retry took.
   */
  @Override
  public void disconnect() {
    if (connected) {
      connected = false;
      settings.disconnect();
    }
  }

  /**
   * The connection that had the request's settings answers, as the JDK's answers after its failed
   * step: true for one opened with an HTTP proxy, before it connected too. Before, always false.
   */
  @Override
  public boolean usingProxy() {
    return settings.usingProxy();
  }
}
