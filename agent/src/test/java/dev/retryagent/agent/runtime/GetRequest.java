package dev.retryagent.agent.runtime;

import dev.retryagent.engine.RequestInfo;

/** A GET of {@code http://HOST/}, for calls made straight on the runtime's engine. */
final class GetRequest implements RequestInfo {
  private final String host;

  GetRequest(String host) {
    this.host = host;
  }

  @Override
  public String method() {
    return "GET";
  }

  @Override
  public String scheme() {
    return "http";
  }

  @Override
  public String host() {
    return host;
  }

  @Override
  public int port() {
    return 80;
  }

  @Override
  public String path() {
    return "/";
  }

  @Override
  public String header(String name) {
    return null;
  }

  @Override
  public boolean bodyReplayable() {
    return true;
  }
}
