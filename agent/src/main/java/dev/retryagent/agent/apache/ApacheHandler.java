package dev.retryagent.agent.apache;

/**
 * What the agent does at the Apache HttpClient hooks, as {@link ApacheEntry} hands them over;
 * implemented in the agent's class loader (which sees no HttpClient) and by the glue next to each
 * HttpClient copy, hence the {@code Object} signatures. Every HttpClient object passed here belongs
 * to the copy of the class loader that defined the hooked class. Public: the glue lives in another
 * class loader.
 */
public interface ApacheHandler {
  /**
   * At the end of each {@code HttpClientBuilder} constructor: 5.x's ({@code
   * org.apache.hc.client5.http.impl.classic}, and its async {@code HttpAsyncClientBuilder} and
   * {@code H2AsyncClientBuilder}) gets the agent's handlers in its execution chain and a governed
   * retry strategy, 4.5's ({@code org.apache.http.impl.client}) a governed retry handler.
   */
  void builderCreated(Object builder);

  /**
   * At the start of {@code doExecute(HttpHost, HttpRequest, HttpContext)} of HttpClient 4.5's
   * clients.
   *
   * @return {@code null} to run the original method; otherwise the call was taken over: {@code
   *     Bridge.returned(response)} (the response may be {@code null}), or a throwable for the
   *     caller
   */
  Object execute(Object client, Object target, Object request, Object context);

  /**
   * One attempt of the application's own copy of the library's HttpClient 4.5 adapter, to be made
   * on {@code client} past the {@code doExecute} hook (the library retries it already).
   *
   * @return as {@link #execute}; {@code null} runs the library's own code (the attempt then meets
   *     the hook)
   */
  default Object libraryExecute(Object client, Object target, Object request, Object context) {
    return null;
  }
}
