package dev.retryagent.demo;

import dev.retryagent.demo.json.Json;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;

/**
 * The service's LLM calls, over {@code java.net.http.HttpClient}: one request per call, no retry of
 * any kind. A non-2xx answer is an error, as is any exception.
 *
 * <p>Each request carries an {@code Idempotency-Key} per (article, operation), the way LLM provider
 * SDKs send one so that a repeated request is not billed or run twice. That key is also what makes
 * a retry of this POST safe, and the demo's agent configuration retries these routes with {@code
 * unsafeMethods: if-idempotency-key}: without the key, a POST that reached the server must not be
 * repeated, and the agent rightly would not repeat it.
 */
final class LlmClient {
  private static final Duration TIMEOUT = Duration.ofSeconds(10);

  private final HttpClient http;
  private final URI base;

  LlmClient(HttpClient http, URI base) {
    this.http = http;
    this.base = base;
  }

  /** A one-line summary of the article. */
  String summarise(Article a) throws IOException, InterruptedException, ProviderException {
    return Json.field(call("summarise", a), "summary");
  }

  /** {@code positive}, {@code negative} or {@code neutral}. */
  String sentiment(Article a) throws IOException, InterruptedException, ProviderException {
    return Json.field(call("sentiment", a), "sentiment");
  }

  private String call(String operation, Article a)
      throws IOException, InterruptedException, ProviderException {
    String body = "{\"article_id\":" + a.id() + ",\"text\":" + Json.quote(a.text()) + "}";
    HttpRequest request =
        HttpRequest.newBuilder(base.resolve("/v1/" + operation))
            .timeout(TIMEOUT)
            .header("Content-Type", "application/json")
            .header("Idempotency-Key", "article-" + a.id() + "-" + operation)
            .POST(HttpRequest.BodyPublishers.ofString(body))
            .build();
    HttpResponse<String> response = http.send(request, HttpResponse.BodyHandlers.ofString());
    if (response.statusCode() / 100 != 2) {
      String retryAfter = response.headers().firstValue("Retry-After").orElse(null);
      throw new ProviderException(
          operation,
          response.statusCode(),
          retryAfter == null ? "" : "(Retry-After: " + retryAfter + ")");
    }
    return response.body();
  }
}
