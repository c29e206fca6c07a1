package dev.retryagent.agent.jdk;

/**
 * What the agent does with an intercepted {@code java.net.http} call, as {@link JdkHttpEntry} hands
 * it over; {@code Object} signatures, as the bridge passes them.
 *
 * <p>Each method returns {@code null} to let the original JDK method run unchanged, a {@link
 * Throwable} that the caller receives unchanged, or {@code Bridge.returned(value)}, the call's
 * result. Once a handler has made the first attempt it must return, never throw: a throwable
 * escaping a handler is taken as "not handled" and the original method runs, which would repeat the
 * request.
 */
interface JdkHttpHandler {
  /** For {@code HttpClientImpl.send(HttpRequest, BodyHandler)}. */
  Object send(Object client, Object request, Object bodyHandler);

  /** For {@code HttpClientImpl.sendAsync(HttpRequest, BodyHandler, PushPromiseHandler)}. */
  Object sendAsync(Object client, Object request, Object bodyHandler, Object pushPromiseHandler);
}
