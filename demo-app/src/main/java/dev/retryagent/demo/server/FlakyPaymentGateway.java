package dev.retryagent.demo.server;

import dev.retryagent.demo.json.Json;
import java.util.HashMap;
import java.util.Map;

/**
 * A simulated payment gateway in the middle of a deploy: {@code POST /v1/charges} with {@code
 * {"order": "...", "amount_cents": N, "currency": "EUR"}}.
 *
 * <p>For each idempotency key, the first {@code failFirst} attempts answer 503. The last of them
 * has already committed the charge when it fails (the gateway crashed before answering), which is
 * exactly why charges are keyed: a later attempt with the same key gets the stored charge back,
 * marked {@code Idempotent-Replayed: true}, and never creates a second one. Requests without a key
 * cannot be deduplicated: they count as attempts of one shared anonymous client, and each committed
 * one is a new charge.
 *
 * <p>Thread safe (one lock; a gateway sees a handful of requests in the demo).
 */
public final class FlakyPaymentGateway implements Handler {
  public static final String CHARGES = "/v1/charges";

  /** The seed article's gateway: 503, 503, then success. */
  public static final int DEFAULT_FAIL_FIRST = 2;

  private final int failFirst;
  private final Map<String, Integer> attempts = new HashMap<>();
  private final Map<String, String> chargeByKey = new HashMap<>();
  private int requests;
  private int keylessAttempts;
  private int chargesCreated;

  /**
   * @param failFirst attempts per key that fail with 503 before one succeeds; 0..10
   */
  public FlakyPaymentGateway(int failFirst) {
    if (failFirst < 0 || failFirst > 10) {
      throw new IllegalArgumentException("failFirst must be in [0, 10], was " + failFirst);
    }
    this.failFirst = failFirst;
  }

  @Override
  public synchronized ServerReply handle(ServerRequest request) {
    requests++;
    if (!CHARGES.equals(request.path())) {
      return error(404, "Not Found", "no such endpoint");
    }
    if (!"POST".equals(request.method())) {
      return error(405, "Method Not Allowed", "use POST");
    }
    String body = request.bodyText();
    String order = Json.field(body, "order");
    String amount = Json.field(body, "amount_cents");
    if (order == null || amount == null || !amount.matches("[1-9][0-9]{0,9}")) {
      return error(400, "Bad Request", "order and a positive amount_cents are required");
    }
    String key = request.header("Idempotency-Key");
    int attempt = key == null ? ++keylessAttempts : attempts.merge(key, 1, Integer::sum);
    if (attempt < failFirst) {
      return unavailable();
    }
    String charge = key == null ? null : chargeByKey.get(key);
    boolean replayed = charge != null;
    if (charge == null) {
      charge =
          String.format(
              "{\"id\":\"ch_%06d\",\"order\":%s,\"amount_cents\":%s,\"status\":\"succeeded\"}",
              ++chargesCreated, Json.quote(order), amount);
      if (key != null) {
        chargeByKey.put(key, charge);
      }
    }
    if (attempt == failFirst) {
      return unavailable(); // committed, but the answer is lost
    }
    return ServerReply.json(
        200, "OK", replayed ? Map.of("Idempotent-Replayed", "true") : Map.of(), charge);
  }

  private static ServerReply unavailable() {
    return error(503, "Service Unavailable", "deploy in progress");
  }

  private static ServerReply error(int status, String reason, String message) {
    return ServerReply.json(
        status, reason, Map.of(), "{\"error\":{\"message\":" + Json.quote(message) + "}}");
  }

  /** Every request read, whatever its outcome. */
  public synchronized int requests() {
    return requests;
  }

  /** Distinct charges stored: what the customer is billed for. */
  public synchronized int chargesCreated() {
    return chargesCreated;
  }
}
