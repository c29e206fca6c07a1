package dev.retryagent.agent.okhttp;

/**
 * What the agent does at the OkHttp hooks, as {@link OkHttpEntry} hands them over; implemented in
 * the agent's class loader (which sees no OkHttp) and by the glue next to each OkHttp copy, hence
 * the {@code Object} signatures. Every OkHttp object passed here belongs to the OkHttp copy of the
 * class loader that defined the hooked class. Public: the glue lives in another class loader.
 */
public interface OkHttpHandler {
  /**
   * At the end of each {@code okhttp3.OkHttpClient$Builder} constructor and at the start of its
   * {@code build()}: makes the builder's interceptors hold the agent's exactly once, last.
   */
  void builderCreated(Object builder);

  /**
   * At the start of the OkHttp call's {@code enqueue(Callback)}.
   *
   * @param call the {@code RealCall}
   * @param client its {@code OkHttpClient}
   * @param callback the caller's callback
   * @return {@code null} to run the original method; otherwise the call was taken over: {@code
   *     Bridge.TAKEN}, or a throwable for the caller
   */
  Object enqueue(Object call, Object client, Object callback);

  /**
   * At the start of the OkHttp call's {@code cancel()}, and of {@code Dispatcher.cancelAll()} (then
   * {@code call} is the dispatcher); the original method runs afterwards.
   */
  void cancel(Object call);

  /**
   * At the start of OkHttp's {@code CallServerInterceptor.intercept(Chain)}: a request of the
   * chain's call is about to be written to its connection, on this thread.
   */
  void sending(Object chain);

  /**
   * OkHttp's {@code CallServerInterceptor.intercept(Chain)} is about to throw an {@code
   * IOException} ({@code failure}): the request of the chain's call failed on its connection, on
   * this thread.
   */
  void sendFailed(Object chain, Object failure);
}
