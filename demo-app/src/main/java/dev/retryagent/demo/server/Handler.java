package dev.retryagent.demo.server;

/** The behaviour of a demo server. Called from many connection threads at once. */
@FunctionalInterface
public interface Handler {
  /**
   * The reply to one request.
   *
   * @throws InterruptedException when the server is closing while the handler waits
   */
  ServerReply handle(ServerRequest request) throws InterruptedException;
}
