package dev.retryagent.bench;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The server of {@link AsyncScaleRun}, in a process of its own: 10,000 concurrent java.net.http
 * calls hold 10,000 sockets on each side, more than one process may open here (20,000 files).
 *
 * <p>The first request to each path under {@code /wait/} gets {@code 503} with {@code Retry-After}
 * (1 s under {@code /wait/warm-}, for the warm-up), every later one {@code 200}; under {@code
 * /probe/} the first gets a plain {@code 503}. Prints {@code port N}, then answers each {@code
 * stats} line on standard input with {@code first=A retries=B} (first requests answered 503, later
 * requests answered 200), and exits at the end of its input.
 *
 * <p>Arguments: {@code RETRY_AFTER_SECONDS CLOSE}, where {@code CLOSE} ({@code true} or {@code
 * false}) adds {@code Connection: close} to every answer.
 */
public final class AsyncScaleServer {
  private AsyncScaleServer() {}

  public static void main(String[] args) throws Exception {
    String retryAfter = args[0];
    boolean close = Boolean.parseBoolean(args[1]);
    Set<String> seen = ConcurrentHashMap.newKeySet();
    AtomicLong first = new AtomicLong();
    AtomicLong retries = new AtomicLong();
    try (LoopbackServer server =
        LoopbackServer.start(
            16_384,
            (method, path) -> {
              boolean isFirst = seen.add(path);
              if (path.startsWith("/wait/")) {
                (isFirst ? first : retries).incrementAndGet();
                return isFirst
                    ? LoopbackServer.Reply.of(503)
                        .retryAfter(path.startsWith("/wait/warm-") ? "1" : retryAfter)
                        .closingIf(close)
                    : LoopbackServer.Reply.of(200).closingIf(close);
              }
              return LoopbackServer.Reply.of(isFirst && path.startsWith("/probe/") ? 503 : 200)
                  .closingIf(close);
            })) {
      System.out.println("port " + server.port());
      System.out.flush();
      BufferedReader in =
          new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
      for (String line = in.readLine(); line != null; line = in.readLine()) {
        if (line.equals("stats")) {
          System.out.println("first=" + first.get() + " retries=" + retries.get());
          System.out.flush();
        }
      }
    }
  }
}
