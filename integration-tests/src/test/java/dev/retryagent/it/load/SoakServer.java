package dev.retryagent.it.load;

import dev.retryagent.it.harness.CountingServer;
import dev.retryagent.it.harness.RecordedRequest;
import dev.retryagent.it.harness.Reply;
import java.io.IOException;
import java.net.URI;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.LongAdder;

/**
 * The soak's server: a {@link CountingServer} on loopback that fails 30% of requests at random (20%
 * {@code 503}, 7% {@code 500}, 3% {@code 429} without {@code Retry-After}; every fault a status, so
 * no request is lost between client and server and each one a client sends is counted here) and
 * counts per route (the first path segment): requests; first attempts and retries, by the attempt
 * header the soak configuration sets; the client's own resends; statuses sent; and keyed POSTs
 * whose body is not the one their key was sent with.
 *
 * <p>A client's own resend (HttpClient 5 resends a 429 or 503 of any method once, unless the policy
 * retries it) carries no attempt header (HttpClient resends a copy of the application's request,
 * made before the agent added it), or, were it given one, would show as a later attempt of a POST
 * without key, which the policy never retries after a status: both count as {@link
 * #CLIENT_RESENDS}, never as first attempts or retries. A retry of a POST without key by the agent
 * would therefore count there too, and break the soak's equation between retries decided and
 * retries seen.
 */
final class SoakServer implements AutoCloseable {
  /** The header the soak configuration names in {@code retry.attemptHeader}. */
  static final String ATTEMPT_HEADER = "X-Attempt";

  static final String REQUESTS = "requests";
  static final String FIRST = "first-attempts";
  static final String RETRIES = "retries";
  static final String CLIENT_RESENDS = "client-resends";
  static final String KEY_BODY_MISMATCH = "key-body-mismatch";

  /** Statuses a client may resend by itself, sent to POSTs without key. */
  static final String UNKEYED_POST_RESENDABLE = "unkeyed-post-429-503";

  private final CountingServer server;
  private final Map<String, LongAdder> counts = new ConcurrentHashMap<>();

  private SoakServer(CountingServer server) {
    this.server = server;
    server.answerWith(this::answer);
  }

  static SoakServer start() throws IOException {
    return new SoakServer(CountingServer.start());
  }

  URI base() {
    return server.uri("");
  }

  int port() {
    return server.port();
  }

  private Reply answer(RecordedRequest r) {
    String route = r.target().split("/")[1];
    tally(route, REQUESTS);
    String attempt = r.header(ATTEMPT_HEADER);
    String key = r.header("Idempotency-Key");
    boolean unkeyedPost = r.method().equals("POST") && key == null;
    if (attempt == null || (unkeyedPost && !attempt.equals("1"))) {
      tally(route, CLIENT_RESENDS);
    } else {
      tally(route, attempt.equals("1") ? FIRST : RETRIES);
    }
    if (key != null && !r.bodyText().equals("{\"key\":\"" + key + "\"}")) {
      tally(route, KEY_BODY_MISMATCH);
    }
    int roll = ThreadLocalRandom.current().nextInt(100);
    int status = roll < 20 ? 503 : roll < 27 ? 500 : roll < 30 ? 429 : 200;
    tally(route, "status." + status);
    if (unkeyedPost && (status == 503 || status == 429)) {
      tally(route, UNKEYED_POST_RESENDABLE);
    }
    return status == 200 ? Reply.ok("ok") : Reply.status(status);
  }

  private void tally(String route, String what) {
    counts.computeIfAbsent(route + "." + what, k -> new LongAdder()).increment();
  }

  /** The count of {@code what} for {@code route}; 0 when none. */
  long count(String route, String what) {
    LongAdder n = counts.get(route + "." + what);
    return n == null ? 0 : n.sum();
  }

  /** Every count, {@code ROUTE.WHAT -> N}, sorted. */
  Map<String, Long> counts() {
    Map<String, Long> out = new TreeMap<>();
    counts.forEach((k, v) -> out.put(k, v.sum()));
    return out;
  }

  long requestCount() {
    return server.requestCount();
  }

  @Override
  public void close() throws IOException {
    server.close();
  }
}
