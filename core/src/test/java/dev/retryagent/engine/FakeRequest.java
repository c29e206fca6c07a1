package dev.retryagent.engine;

import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.BooleanSupplier;

/**
 * A request as an adapter would describe it. Header lookup is case-insensitive, as {@link
 * RequestInfo#header} requires of adapters.
 */
final class FakeRequest implements RequestInfo {
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

  static FakeRequest get() {
    return of("GET");
  }

  static FakeRequest post() {
    return of("POST");
  }

  static FakeRequest of(String method) {
    return new FakeRequest(method, "http", "api.example.com", 80, "/v1/things");
  }

  static FakeRequest of(String method, String host) {
    return new FakeRequest(method, "http", host, 80, "/v1/things");
  }

  FakeRequest header(String name, String value) {
    headers.put(name, value);
    return this;
  }

  /** A body that can never be sent again. */
  FakeRequest oneShotBody() {
    bodyReplayable = () -> false;
    return this;
  }

  FakeRequest bodyReplayable(BooleanSupplier replayable) {
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
