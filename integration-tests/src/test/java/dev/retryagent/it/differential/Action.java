package dev.retryagent.it.differential;

import java.net.URLDecoder;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * What the application does in one case, in client-neutral terms: the request, the timeouts it sets
 * on its client, and whether and when it cancels or interrupts. Each {@link Driver} turns it into
 * its own client's calls. Immutable; every {@code with}-style method returns a copy. It crosses
 * into the forked JVM as one line ({@link #encode()}).
 *
 * <p>Times are in milliseconds; a timeout of 0 leaves the client's default.
 */
public final class Action {
  /** How the application gives up on a call. */
  public enum Cancel {
    NONE,
    /** The client's own cancel of the call ({@code Call.cancel()}, {@code future.cancel(true)}). */
    CALL,
    /** {@code future.thenApply(...).cancel(true)}: a dependent stage, not the call's future. */
    DEPENDENT,
    /** Every call of the client ({@code dispatcher().cancelAll()}). */
    ALL,
    /** {@code Thread.interrupt()} of the thread that waits for the call. */
    INTERRUPT,
    /** {@code client.close()} of the client, graceful (HttpClient 5 async's {@code GRACEFUL}). */
    CLOSE
  }

  /** {@link #cancelAt()} of an action that cancels before the call starts. */
  public static final int BEFORE = -1;

  /** How long the application waits for a result before it stops waiting, unless set. */
  public static final int DEFAULT_BOUND_MILLIS = 4_000;

  private final Map<String, String> p;

  private Action(Map<String, String> properties) {
    this.p = properties;
  }

  public static Action get(String path) {
    return new Action(new LinkedHashMap<>()).with("method", "GET").with("path", path);
  }

  public static Action post(String path, String body) {
    return get(path).with("method", "POST").with("body", body);
  }

  public static Action put(String path, String body) {
    return get(path).with("method", "PUT").with("body", body);
  }

  public static Action patch(String path, String body) {
    return get(path).with("method", "PATCH").with("body", body);
  }

  /** A request of {@code method} with {@code body} (empty: none). */
  public static Action of(String method, String path, String body) {
    return get(path).with("method", method).with("body", body);
  }

  private Action with(String key, Object value) {
    Map<String, String> copy = new LinkedHashMap<>(p);
    copy.put(key, String.valueOf(value));
    return new Action(copy);
  }

  private int number(String key, int otherwise) {
    String v = p.get(key);
    return v == null ? otherwise : Integer.parseInt(v);
  }

  private boolean flag(String key) {
    return Boolean.parseBoolean(p.get(key));
  }

  /** Adds a request header. */
  public Action header(String name, String value) {
    List<String> h = new ArrayList<>(headers());
    h.add(name + ": " + value);
    return with("headers", String.join("\n", h));
  }

  /** The body waits for {@code 100 Continue} ({@link Feature#EXPECT_CONTINUE}). */
  public Action expectContinue() {
    return with("expectContinue", true);
  }

  public boolean expectsContinue() {
    return flag("expectContinue");
  }

  /** A body of this many bytes instead of the text body (larger than any socket buffer). */
  public Action bodyBytes(int n) {
    return with("bodyBytes", n);
  }

  public Action requestTimeout(int millis) {
    return with("requestTimeout", millis);
  }

  public Action connectTimeout(int millis) {
    return with("connectTimeout", millis);
  }

  public Action readTimeout(int millis) {
    return with("readTimeout", millis);
  }

  public Action writeTimeout(int millis) {
    return with("writeTimeout", millis);
  }

  public Action callTimeout(int millis) {
    return with("callTimeout", millis);
  }

  /** The client follows redirects (OkHttp does by default; java.net.http needs NORMAL). */
  public Action followRedirects() {
    return with("followRedirects", true);
  }

  /** The application cancels {@code how}, {@code atMillis} after it started the call. */
  public Action cancel(Cancel how, int atMillis) {
    return with("cancel", how).with("cancelAt", atMillis);
  }

  /** The application cancels {@code how} before it starts the call. */
  public Action cancelBefore(Cancel how) {
    return cancel(how, BEFORE);
  }

  /** The call is a WebSocket opening handshake; once open, the application closes it. */
  public Action webSocket() {
    return with("webSocket", true);
  }

  /** The callback throws once it has the result: {@code io} (an IOException) or {@code runtime}. */
  public Action callbackThrows(String kind) {
    return with("callbackThrows", kind);
  }

  /** An application interceptor (where the client has them) adds this header to every request. */
  public Action interceptorAdds(String name, String value) {
    return with("interceptorHeader", name + ": " + value);
  }

  /**
   * The application reads the whole response body before it reports the status (a failure while
   * reading is then its outcome).
   */
  public Action readBody() {
    return with("readBody", true);
  }

  /**
   * Once the call is over, the application makes a second call, a {@code GET} of {@link
   * dev.retryagent.it.harness.CountingServer#FOLLOW_UP_PATH}, on the same client, whose pool holds
   * one connection where the client has one to bound (OkHttp, Apache HttpClient): it succeeds
   * promptly only if the first call left no connection, body or dispatcher slot behind.
   */
  public Action followUp() {
    return with("followUp", true);
  }

  /**
   * Before the call, the application makes the follow-up call once ({@link #followUp()}), so that
   * the call finds a kept-alive connection to reuse: a fault then meets a connection the client
   * believed good (the case where clients resend on their own).
   */
  public Action primed() {
    return with("prime", true);
  }

  /** A case of the fault matrix: it runs on the APIs that offer {@link Feature#FAULT_MATRIX}. */
  public Action inFaultMatrix() {
    return with("faultMatrix", true);
  }

  /** How long the application waits for the result before it stops waiting. */
  public Action bound(int millis) {
    return with("bound", millis);
  }

  public String method() {
    return p.get("method");
  }

  public String path() {
    return p.get("path");
  }

  /** The text body, empty for none. */
  public String body() {
    return p.getOrDefault("body", "");
  }

  public int bodyBytes() {
    return number("bodyBytes", 0);
  }

  /** Headers as {@code Name: value}. */
  public List<String> headers() {
    String h = p.get("headers");
    return h == null ? List.of() : List.of(h.split("\n"));
  }

  public int requestTimeout() {
    return number("requestTimeout", 0);
  }

  public int connectTimeout() {
    return number("connectTimeout", 0);
  }

  public int readTimeout() {
    return number("readTimeout", 0);
  }

  public int writeTimeout() {
    return number("writeTimeout", 0);
  }

  public int callTimeout() {
    return number("callTimeout", 0);
  }

  public boolean followsRedirects() {
    return flag("followRedirects");
  }

  public boolean readsBody() {
    return flag("readBody");
  }

  public boolean primes() {
    return flag("prime");
  }

  public boolean followsUp() {
    return flag("followUp");
  }

  public Cancel cancel() {
    return Cancel.valueOf(p.getOrDefault("cancel", "NONE"));
  }

  /** Milliseconds after the start, or {@link #BEFORE}. */
  public int cancelAt() {
    return number("cancelAt", 0);
  }

  public boolean isWebSocket() {
    return flag("webSocket");
  }

  /** {@code io}, {@code runtime}, or empty. */
  public String callbackThrows() {
    return p.getOrDefault("callbackThrows", "");
  }

  /** {@code Name: value}, or empty. */
  public String interceptorHeader() {
    return p.getOrDefault("interceptorHeader", "");
  }

  public int bound() {
    return number("bound", DEFAULT_BOUND_MILLIS);
  }

  /** What a client API must offer to run this action. */
  public Set<Feature> needs() {
    Set<Feature> needs = EnumSet.noneOf(Feature.class);
    if (requestTimeout() > 0) {
      needs.add(Feature.REQUEST_TIMEOUT);
    }
    if (connectTimeout() > 0) {
      needs.add(Feature.CONNECT_TIMEOUT);
    }
    if (readTimeout() > 0) {
      needs.add(Feature.READ_TIMEOUT);
    }
    if (writeTimeout() > 0) {
      needs.add(Feature.WRITE_TIMEOUT);
    }
    if (callTimeout() > 0) {
      needs.add(Feature.CALL_TIMEOUT);
    }
    switch (cancel()) {
      case CALL:
        needs.add(cancelAt() == BEFORE ? Feature.CANCEL_BEFORE : Feature.CANCEL);
        break;
      case DEPENDENT:
        needs.add(Feature.CANCEL_DEPENDENT);
        break;
      case ALL:
        needs.add(Feature.CANCEL_ALL);
        break;
      case INTERRUPT:
        needs.add(Feature.INTERRUPT);
        break;
      case CLOSE:
        needs.add(Feature.CLOSE);
        break;
      default:
        break;
    }
    if (isWebSocket()) {
      needs.add(Feature.WEBSOCKET);
    }
    if (method().equals("PATCH")) {
      needs.add(Feature.PATCH);
    }
    if (expectsContinue()) {
      needs.add(Feature.EXPECT_CONTINUE);
    }
    if (flag("faultMatrix")) {
      needs.add(Feature.FAULT_MATRIX);
    }
    if (!interceptorHeader().isEmpty()) {
      needs.add(Feature.APP_INTERCEPTOR);
    }
    if (!callbackThrows().isEmpty()) {
      needs.add(Feature.CALLBACK_THROWS);
    }
    return needs;
  }

  /** One line: {@code key=value&...}, URL-encoded. */
  public String encode() {
    List<String> pairs = new ArrayList<>();
    p.forEach(
        (k, v) ->
            pairs.add(
                URLEncoder.encode(k, StandardCharsets.UTF_8)
                    + "="
                    + URLEncoder.encode(v, StandardCharsets.UTF_8)));
    return String.join("&", pairs);
  }

  public static Action decode(String line) {
    Map<String, String> p = new LinkedHashMap<>();
    for (String pair : line.split("&")) {
      int eq = pair.indexOf('=');
      p.put(
          URLDecoder.decode(pair.substring(0, eq), StandardCharsets.UTF_8),
          URLDecoder.decode(pair.substring(eq + 1), StandardCharsets.UTF_8));
    }
    return new Action(p);
  }

  @Override
  public String toString() {
    return encode();
  }
}
