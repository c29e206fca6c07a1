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

  /**
   * The engine that began this call ({@link RetryEngine#begin}): its sleeper and clock, for an
   * adapter whose call waits itself, without a field of its own for them (issue 13: a call of 84 B
   * is 88 B, one of 80 B is 80 B).
   */
  protected final RetryEngine engine() {
    return state.engine;
  }

  /** This call itself. */
  @Override
  public final RequestInfo request() {
    return this;
  }
}
