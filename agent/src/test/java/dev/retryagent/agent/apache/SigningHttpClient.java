package dev.retryagent.agent.apache;

import java.io.IOException;
import org.apache.http.HttpHost;
import org.apache.http.HttpRequest;
import org.apache.http.client.methods.CloseableHttpResponse;
import org.apache.http.protocol.HttpContext;

/**
 * An application's client that signs each request in its own {@code execute}, over HttpClient's
 * hooked {@code doExecute}: {@link Apache4GlueTest} defines it next to its copy of HttpClient.
 */
@SuppressWarnings("deprecation") // DefaultHttpClient: the 4.5 family such subclasses extend
public class SigningHttpClient extends org.apache.http.impl.client.DefaultHttpClient {
  @Override
  public CloseableHttpResponse execute(HttpHost target, HttpRequest request, HttpContext context)
      throws IOException {
    request.addHeader("X-Signature", "signed");
    return super.execute(target, request, context);
  }
}
