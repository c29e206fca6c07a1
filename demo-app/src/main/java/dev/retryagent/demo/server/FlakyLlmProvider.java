package dev.retryagent.demo.server;

import dev.retryagent.demo.json.Json;
import java.time.Duration;
import java.util.Arrays;
import java.util.HashSet;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.LongSupplier;
import java.util.regex.Pattern;

/**
 * A simulated LLM provider: {@code POST /v1/summarise} and {@code POST /v1/sentiment}, each taking
 * {@code {"text": "..."}}. Faults come from a {@link FaultPlan} drawn per (idempotency key,
 * attempt): 429 with {@code Retry-After}, 503, or a connection reset after the request was read.
 *
 * <p>Its rate limiter keeps the promise a {@code Retry-After} makes, as a token bucket does: a
 * request that carries the same key and arrives once the announced time has passed is admitted (it
 * can still meet a 503 or a reset), and one that comes back earlier is told to wait again. So
 * honouring Retry-After is what gets a rate-limited request through; hammering does not.
 *
 * <p>Thread safe. Counts every request it reads, including those it resets.
 */
public final class FlakyLlmProvider implements Handler {
  public static final String SUMMARISE = "/v1/summarise";
  public static final String SENTIMENT = "/v1/sentiment";

  /** The shortest wait {@code Retry-After} can express (delta-seconds are integral). */
  public static final Duration DEFAULT_RETRY_AFTER = Duration.ofSeconds(1);

  private static final Set<String> POSITIVE =
      new HashSet<>(
          Arrays.asList(
              "record",
              "growth",
              "gains",
              "rises",
              "wins",
              "breakthrough",
              "cools",
              "recovers",
              "approves",
              "opens",
              "beats",
              "surge",
              "success",
              "steady"));
  private static final Set<String> NEGATIVE =
      new HashSet<>(
          Arrays.asList(
              "falls",
              "losses",
              "cuts",
              "strike",
              "outage",
              "recall",
              "fine",
              "delays",
              "crisis",
              "warning",
              "drops",
              "layoffs",
              "shortage",
              "storm"));

  private static final Pattern NON_LETTERS = Pattern.compile("[^a-z]+");

  private final FaultPlan plan;
  private final long retryAfterSeconds;
  private final long latencyMillis;
  private final LongSupplier nanoClock;

  private final AtomicInteger requests = new AtomicInteger();
  private final AtomicInteger succeeded = new AtomicInteger();
  private final AtomicInteger rateLimited = new AtomicInteger();
  private final AtomicInteger serverErrors = new AtomicInteger();
  private final AtomicInteger resets = new AtomicInteger();
  private final AtomicInteger keyless = new AtomicInteger();
  private final Map<String, AtomicInteger> attempts = new ConcurrentHashMap<>();
  private final Map<String, Long> waitUntil = new ConcurrentHashMap<>();

  /**
   * @param retryAfter what a 429 asks for; whole seconds, at least 1
   * @param latency how long each request takes to "generate" (zero in tests)
   * @param nanoClock a monotonic clock in nanoseconds ({@code System::nanoTime})
   */
  public FlakyLlmProvider(
      FaultPlan plan, Duration retryAfter, Duration latency, LongSupplier nanoClock) {
    if (retryAfter.getSeconds() < 1 || retryAfter.getNano() != 0) {
      throw new IllegalArgumentException(
          "retryAfter must be a whole number of seconds >= 1, was " + retryAfter);
    }
    if (latency.isNegative()) {
      throw new IllegalArgumentException("latency must not be negative, was " + latency);
    }
    this.plan = plan;
    this.retryAfterSeconds = retryAfter.getSeconds();
    this.latencyMillis = latency.toMillis();
    this.nanoClock = nanoClock;
  }

  @Override
  public ServerReply handle(ServerRequest request) throws InterruptedException {
    requests.incrementAndGet();
    if (!SUMMARISE.equals(request.path()) && !SENTIMENT.equals(request.path())) {
      return error(404, "Not Found", "not_found", "no such endpoint", Map.of());
    }
    if (!"POST".equals(request.method())) {
      return error(405, "Method Not Allowed", "method_not_allowed", "use POST", Map.of());
    }
    String text = Json.field(request.bodyText(), "text");
    if (text == null) {
      return error(400, "Bad Request", "invalid_request", "body needs a \"text\" field", Map.of());
    }
    String key = request.header("Idempotency-Key");
    // Each operation has its own slot: a key is scoped to the endpoint, as providers do.
    String slot =
        request.path() + " " + (key != null ? key : "#anonymous-" + keyless.incrementAndGet());
    int attempt = attempts.computeIfAbsent(slot, k -> new AtomicInteger()).incrementAndGet();
    if (latencyMillis > 0) {
      Thread.sleep(latencyMillis);
    }
    long now = nanoClock.getAsLong();
    Long until = waitUntil.get(slot);
    if (until != null && now - until < 0) {
      long left = (until - now + 999_999_999L) / 1_000_000_000L;
      return rateLimit(slot, now, Math.max(1, left));
    }
    FaultPlan.Fault fault = plan.decide(slot, attempt);
    if (fault == FaultPlan.Fault.RATE_LIMIT && until != null) {
      fault = FaultPlan.Fault.NONE; // it waited as told: the limiter kept its slot
    }
    switch (fault) {
      case RATE_LIMIT:
        return rateLimit(slot, now, retryAfterSeconds);
      case SERVER_ERROR:
        serverErrors.incrementAndGet();
        return error(503, "Service Unavailable", "overloaded", "the model is overloaded", Map.of());
      case RESET:
        resets.incrementAndGet();
        return ServerReply.reset();
      default:
        succeeded.incrementAndGet();
        return ServerReply.json(200, "OK", Map.of(), answer(request.path(), text));
    }
  }

  private ServerReply rateLimit(String slot, long now, long seconds) {
    rateLimited.incrementAndGet();
    waitUntil.put(slot, now + seconds * 1_000_000_000L);
    return error(
        429,
        "Too Many Requests",
        "rate_limit_exceeded",
        "rate limit reached, retry after " + seconds + "s",
        Map.of("Retry-After", Long.toString(seconds)));
  }

  private static ServerReply error(
      int status, String reason, String type, String message, Map<String, String> headers) {
    return ServerReply.json(
        status,
        reason,
        headers,
        "{\"error\":{\"type\":" + Json.quote(type) + ",\"message\":" + Json.quote(message) + "}}");
  }

  private static String answer(String path, String text) {
    if (SUMMARISE.equals(path)) {
      return "{\"summary\":" + Json.quote(summarise(text)) + "}";
    }
    int score = 0;
    for (String w : NON_LETTERS.split(text.toLowerCase(Locale.ROOT))) {
      score += POSITIVE.contains(w) ? 1 : NEGATIVE.contains(w) ? -1 : 0;
    }
    String label = score > 0 ? "positive" : score < 0 ? "negative" : "neutral";
    return "{\"sentiment\":" + Json.quote(label) + ",\"score\":" + score + "}";
  }

  /** The first sentence, at most 72 characters: a summary as good as the demo needs. */
  private static String summarise(String text) {
    int dot = text.indexOf(". ");
    String first = dot < 0 ? text : text.substring(0, dot);
    return first.length() <= 72 ? first : first.substring(0, 71) + "…";
  }

  /** Every request read, whatever its outcome. */
  public int requests() {
    return requests.get();
  }

  public int succeeded() {
    return succeeded.get();
  }

  /** 429 answers, including those to requests that came back before their Retry-After. */
  public int rateLimited() {
    return rateLimited.get();
  }

  public int serverErrors() {
    return serverErrors.get();
  }

  public int resets() {
    return resets.get();
  }
}
