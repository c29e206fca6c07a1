package dev.retryagent.engine;

/** A call whose request view is a separate object ({@link RetryEngine#newCall}). */
final class ViewedCall extends RetryCall {
  private final RequestInfo request;

  ViewedCall(HostState state, RequestInfo request) {
    super(state);
    this.request = request;
  }

  @Override
  public RequestInfo request() {
    return request;
  }
}
