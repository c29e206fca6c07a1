package dev.retryagent.agent;

/**
 * The seam where the retry engine plugs in. Today every call passes through; once {@code
 * dev.retryagent.jdk.JdkRetrying} and {@code JdkTransport} are in core:
 *
 * <pre>{@code
 * // ClientTransport: add "implements dev.retryagent.jdk.JdkTransport" (its methods already match)
 * static JdkCalls create(AgentSettings settings) {
 *   JdkRetrying retrying = ...;   // from the loaded configuration
 *   return new JdkCalls() {
 *     public <T> HttpResponse<T> send(ClientTransport t, HttpRequest r, BodyHandler<T> h)
 *         throws IOException, InterruptedException {
 *       return retrying.send(t, r, h);
 *     }
 *     public <T> CompletableFuture<HttpResponse<T>> sendAsync(
 *         ClientTransport t, HttpRequest r, BodyHandler<T> h, PushPromiseHandler<T> p) {
 *       return retrying.sendAsync(t, r, h, p);
 *     }
 *   };
 * }
 * }</pre>
 */
final class JdkCallsFactory {
  private JdkCallsFactory() {}

  /** Called once, on the first intercepted call. */
  static JdkCalls create(AgentSettings settings) {
    return new PassThroughJdkCalls();
  }
}
