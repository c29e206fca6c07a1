package dev.retryagent.engine;

/**
 * A GET to api.example.com that is its own request view; the test says when its caller gives up.
 */
class OwnView extends SelfViewCall {
  volatile boolean cancelled;

  @Override
  public String method() {
    return "GET";
  }

  @Override
  public String scheme() {
    return "https";
  }

  @Override
  public String host() {
    return "api.example.com";
  }

  @Override
  public int port() {
    return 443;
  }

  @Override
  public String path() {
    return "/v1";
  }

  @Override
  public String header(String name) {
    return null;
  }

  @Override
  public boolean bodyReplayable() {
    return true;
  }

  @Override
  public boolean callerGaveUp() {
    return cancelled;
  }
}
