package dev.retryagent.observe;

import dev.retryagent.engine.RequestInfo;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;

/** A request as an adapter would describe it; headers are matched case-insensitively. */
final class FakeRequest implements RequestInfo {
  private final String method;
  private final String scheme;
  private final String host;
  private final int port;
  private final String path;
  private final Map<String, String> headers = new TreeMap<>(String.CASE_INSENSITIVE_ORDER);
  private boolean replayable = true;

  FakeRequest(String method, String scheme, String host, int port, String path) {
    this.method = method.toUpperCase(Locale.ROOT);
    this.scheme = scheme;
    this.host = host;
    this.port = port;
    this.path = path;
  }

  static FakeRequest get(String host, String path) {
    return new FakeRequest("GET", "https", host, 443, path);
  }

  static FakeRequest post(String host, String path) {
    return new FakeRequest("POST", "https", host, 443, path);
  }

  FakeRequest header(String name, String value) {
    headers.put(name, value);
    return this;
  }

  FakeRequest oneShotBody() {
    replayable = false;
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
    return replayable;
  }
}
