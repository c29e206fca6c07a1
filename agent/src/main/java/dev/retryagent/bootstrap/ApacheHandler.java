package dev.retryagent.bootstrap;

/**
 * What the agent does at the Apache HttpClient hooks; implemented in the agent's class loader
 * (which sees no HttpClient), hence the {@code Object} signatures. Every HttpClient object passed
 * here belongs to the copy of the class loader that defined the hooked class.
 */
public interface ApacheHandler {
  /**
   * At the end of each {@code org.apache.hc.client5.http.impl.classic.HttpClientBuilder}
   * constructor (5.x): adds the agent's handlers to the builder's execution chain.
   */
  void builderCreated(Object builder);

  /**
   * At the start of {@code doExecute(HttpHost, HttpRequest, HttpContext)} of HttpClient 4.5's
   * clients.
   *
   * @return {@code null} to run the original method; otherwise the call was taken over and the
   *     value goes to {@link ApacheBridge#deliver} (the response, {@link ApacheBridge#NO_RESPONSE},
   *     or a throwable for the caller)
   */
  Object execute(Object client, Object target, Object request, Object context);
}
