package dev.retryagent.demo.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.retryagent.demo.json.Json;
import java.io.IOException;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.EnumMap;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

class FlakyLlmProviderTest {
  private static final String TEXT = "Solar startup reports record growth. More later.";

  private final AtomicLong clock = new AtomicLong(1_000_000_000L);
  private final HttpClient http = HttpClient.newHttpClient();
  private MiniHttpServer server;

  private FlakyLlmProvider provider(double rateLimit, double serverErrors, double resets)
      throws IOException {
    FlakyLlmProvider p =
        new FlakyLlmProvider(
            new FaultPlan(42, rateLimit, serverErrors, resets),
            Duration.ofSeconds(1),
            Duration.ZERO,
            clock::get);
    server = MiniHttpServer.start("llm-test", p);
    return p;
  }

  @AfterEach
  void stop() {
    if (server != null) {
      server.close();
    }
  }

  private HttpResponse<String> post(String path, String key) throws Exception {
    HttpRequest.Builder b =
        HttpRequest.newBuilder(server.baseUri().resolve(path))
            .timeout(Duration.ofSeconds(5))
            .POST(HttpRequest.BodyPublishers.ofString("{\"text\":" + Json.quote(TEXT) + "}"));
    if (key != null) {
      b.header("Idempotency-Key", key);
    }
    return http.send(b.build(), HttpResponse.BodyHandlers.ofString());
  }

  @Test
  void summarisesAndJudgesSentimentWhenNoFaultsAreSet() throws Exception {
    FlakyLlmProvider p = provider(0, 0, 0);

    HttpResponse<String> summary = post(FlakyLlmProvider.SUMMARISE, "a-1-summarise");
    HttpResponse<String> sentiment = post(FlakyLlmProvider.SENTIMENT, "a-1-sentiment");

    assertThat(summary.statusCode()).isEqualTo(200);
    assertThat(Json.field(summary.body(), "summary"))
        .isEqualTo("Solar startup reports record growth");
    assertThat(sentiment.statusCode()).isEqualTo(200);
    assertThat(Json.field(sentiment.body(), "sentiment")).isEqualTo("positive");
    assertThat(p.requests()).isEqualTo(2);
    assertThat(p.succeeded()).isEqualTo(2);
  }

  @Test
  void rateLimitsWithRetryAfterAndAdmitsTheKeyOnceItWaited() throws Exception {
    FlakyLlmProvider p = provider(1.0, 0, 0); // every fresh draw is a 429

    HttpResponse<String> first = post(FlakyLlmProvider.SUMMARISE, "k");
    clock.addAndGet(999_000_000L);
    HttpResponse<String> tooEarly = post(FlakyLlmProvider.SUMMARISE, "k");
    clock.addAndGet(1_000_000_000L);
    HttpResponse<String> afterWaiting = post(FlakyLlmProvider.SUMMARISE, "k");
    HttpResponse<String> otherKey = post(FlakyLlmProvider.SUMMARISE, "other");

    assertThat(first.statusCode()).isEqualTo(429);
    assertThat(first.headers().firstValue("Retry-After")).hasValue("1");
    assertThat(tooEarly.statusCode()).isEqualTo(429); // came back early: wait again
    assertThat(afterWaiting.statusCode()).isEqualTo(200);
    assertThat(otherKey.statusCode()).isEqualTo(429);
    assertThat(p.rateLimited()).isEqualTo(3);
    assertThat(p.requests()).isEqualTo(4);
  }

  @Test
  void aKeyIsScopedToItsEndpoint() throws Exception {
    provider(1.0, 0, 0);

    post(FlakyLlmProvider.SUMMARISE, "same");
    clock.addAndGet(2_000_000_000L);

    assertThat(post(FlakyLlmProvider.SENTIMENT, "same").statusCode()).isEqualTo(429);
  }

  @Test
  void answers503AtServerErrorProbabilityOne() throws Exception {
    FlakyLlmProvider p = provider(0, 1.0, 0);

    HttpResponse<String> r = post(FlakyLlmProvider.SENTIMENT, "k");

    assertThat(r.statusCode()).isEqualTo(503);
    assertThat(r.headers().firstValue("Retry-After")).isEmpty();
    assertThat(p.serverErrors()).isEqualTo(1);
  }

  @Test
  void resetsTheConnectionAfterReadingTheRequest() throws Exception {
    FlakyLlmProvider p = provider(0, 0, 1.0);

    try (RawClient c = new RawClient(server.port())) {
      c.send(RawClient.post(FlakyLlmProvider.SUMMARISE, "{\"text\":\"x\"}", "Idempotency-Key: k"));

      assertThatThrownBy(c::read)
          .isInstanceOf(java.net.SocketException.class)
          .hasMessageContaining("reset");
    }
    assertThatThrownBy(() -> post(FlakyLlmProvider.SUMMARISE, "k2"))
        .isInstanceOf(IOException.class);
    assertThat(p.resets()).isEqualTo(2);
    assertThat(p.requests()).isEqualTo(2);
  }

  @Test
  void injectsExactlyTheFaultsItsPlanDecidesAtRoughlyTheConfiguredRates() throws Exception {
    FlakyLlmProvider p = provider(0.3, 0.1, 0.05);
    FaultPlan plan = new FaultPlan(42, 0.3, 0.1, 0.05);
    int n = 400;
    Map<FaultPlan.Fault, Integer> expected = new EnumMap<>(FaultPlan.Fault.class);
    int rateLimited = 0;
    int serverErrors = 0;
    int resets = 0;
    for (int i = 0; i < n; i++) {
      String key = "article-" + i + "-summarise";
      expected.merge(plan.decide(FlakyLlmProvider.SUMMARISE + " " + key, 1), 1, Integer::sum);
      try {
        int status = post(FlakyLlmProvider.SUMMARISE, key).statusCode();
        rateLimited += status == 429 ? 1 : 0;
        serverErrors += status == 503 ? 1 : 0;
      } catch (IOException e) {
        resets++;
      }
    }

    assertThat(rateLimited).isEqualTo(expected.getOrDefault(FaultPlan.Fault.RATE_LIMIT, 0));
    assertThat(serverErrors).isEqualTo(expected.getOrDefault(FaultPlan.Fault.SERVER_ERROR, 0));
    assertThat(resets).isEqualTo(expected.getOrDefault(FaultPlan.Fault.RESET, 0));
    // 400 draws: within four standard deviations of 120, 40 and 20.
    assertThat(rateLimited).isBetween(83, 157);
    assertThat(serverErrors).isBetween(16, 64);
    assertThat(resets).isBetween(3, 37);
    assertThat(p.requests()).isEqualTo(n);
  }

  @Test
  void refusesWrongPathsMethodsAndBodies() throws Exception {
    FlakyLlmProvider p = provider(0, 0, 0);

    HttpResponse<String> notFound = post("/v1/translate", "k");
    HttpResponse<String> get =
        http.send(
            HttpRequest.newBuilder(server.baseUri().resolve(FlakyLlmProvider.SUMMARISE)).build(),
            HttpResponse.BodyHandlers.ofString());
    HttpResponse<String> noText =
        http.send(
            HttpRequest.newBuilder(server.baseUri().resolve(FlakyLlmProvider.SUMMARISE))
                .POST(HttpRequest.BodyPublishers.ofString("{}"))
                .build(),
            HttpResponse.BodyHandlers.ofString());

    assertThat(notFound.statusCode()).isEqualTo(404);
    assertThat(get.statusCode()).isEqualTo(405);
    assertThat(noText.statusCode()).isEqualTo(400);
    assertThat(p.requests()).isEqualTo(3);
  }

  @Test
  void retryAfterMustBeWholeSeconds() {
    FaultPlan plan = new FaultPlan(1, 0, 0, 0);
    assertThatThrownBy(
            () ->
                new FlakyLlmProvider(plan, Duration.ofMillis(500), Duration.ZERO, System::nanoTime))
        .hasMessageContaining("retryAfter");
  }
}
