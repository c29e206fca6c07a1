package dev.retryagent.bootstrap;

/**
 * What the agent does with an intercepted {@code java.net.http} call; implemented in the agent's
 * own class loader, where {@code java.net.http} is visible, hence the {@code Object} signatures.
 *
 * <p>Each method returns {@code null} to let the original JDK method run unchanged, or an {@link
 * JdkHttpBridge.Outcome} that becomes the result (or the exception) of the call. Once a handler has
 * made the first attempt it must return an outcome, never throw: a throwable escaping a handler is
 * taken as "not handled" and the original method runs, which would repeat the request.
 */
public interface JdkHttpHandler {
  /** For {@code HttpClientFacade.send(HttpRequest, BodyHandler)}. */
  Object send(Object client, Object request, Object bodyHandler);

  /**
   * For both {@code HttpClientFacade.sendAsync}; null push-promise handler for the 2-argument one.
   */
  Object sendAsync(Object client, Object request, Object bodyHandler, Object pushPromiseHandler);
}
