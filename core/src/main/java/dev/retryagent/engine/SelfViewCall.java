package dev.retryagent.engine;

/**
 * SPI: a call that is its own request view, for an adapter that makes one object per call where
 * {@link RetryEngine#newCall} makes two, the view and the call (issue 13: OkHttp's synchronous
 * call, one object of ours per call). The subclass implements {@link RequestInfo} over its client's
 * request, and hands the new object to {@link RetryEngine#begin} before anything else: until then
 * it has no policy. Everything else is as for any {@link RetryCall}.
 */
public abstract class SelfViewCall extends RetryCall implements RequestInfo {
  /** A call not begun yet: {@link RetryEngine#begin} gives it its policy and host state. */
  protected SelfViewCall() {}

  /** This call itself. */
  @Override
  public final RequestInfo request() {
    return this;
  }
}
