package dev.retryagent.testing;

import dev.retryagent.engine.RequestInfo;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.BooleanSupplier;

/**
 * A request as an adapter would describe it, for tests of the engine and its listeners. Header
 * lookup is case-insensitive, as {@link RequestInfo#header} requires of adapters.
 */
public final class FakeRequest implements RequestInfo {
  private final String method;
  private final String scheme;
  private final String host;
  private final int port;
  private final String path;
  private final Map<String, String> headers = new TreeMap<>(String.CASE_INSENSITIVE_ORDER);
  private BooleanSupplier bodyReplayable = () -> true;

  private FakeRequest(String method, String scheme, String host, int port, String path) {
    this.method = method.toUpperCase(Locale.ROOT);
    this.scheme = scheme;
    this.host = host;
    this.port = port;
    this.path = path;
  }

  public static FakeRequest get() {
    return of("GET");
  }

  public static FakeRequest post() {
    return of("POST");
  }

  public static FakeRequest of(String method) {
    return new FakeRequest(method, "http", "api.example.com", 80, "/v1/things");
  }

  public static FakeRequest of(String method, String host) {
    return new FakeRequest(method, "http", host, 80, "/v1/things");
  }

  /** {@code GET https://host:443/path}. */
  public static FakeRequest get(String host, String path) {
    return new FakeRequest("GET", "https", host, 443, path);
  }

  /** {@code POST https://host:443/path}. */
  public static FakeRequest post(String host, String path) {
    return new FakeRequest("POST", "https", host, 443, path);
  }

  public static FakeRequest of(String method, String scheme, String host, int port, String path) {
    return new FakeRequest(method, scheme, host, port, path);
  }

  public FakeRequest header(String name, String value) {
    headers.put(name, value);
    return this;
  }

  /** A body that can never be sent again. */
  public FakeRequest oneShotBody() {
    bodyReplayable = () -> false;
    return this;
  }

  public FakeRequest bodyReplayable(BooleanSupplier replayable) {
    bodyReplayable = replayable;
    return this;
  }

  @Override
  public String method() {
    return method;
  }

  @Override
  public String scheme() {
    return scheme;
  }

  @Override
  public String host() {
    return host;
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
  public String header(String name) {
    return headers.get(name);
  }

  @Override
  public boolean bodyReplayable() {
    return bodyReplayable.getAsBoolean();
  }
}
