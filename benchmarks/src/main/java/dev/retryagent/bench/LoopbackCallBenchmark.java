package dev.retryagent.bench;

import dev.retryagent.engine.RetryEngine;
import dev.retryagent.jdk.RetryingHttpClient;
import dev.retryagent.okhttp.RetryInterceptor;
import dev.retryagent.policy.Policy;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.concurrent.TimeUnit;
import okhttp3.OkHttpClient;
import okhttp3.Request;
import okhttp3.Response;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * A real call to a loopback server that answers 200 at once, with and without retries wired in by
 * hand: the cost of the library on the success path, next to the cost of the call itself. {@link
 * AgentLoopbackCallBenchmark} makes the same calls through the agent.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(1)
@State(Scope.Benchmark)
public class LoopbackCallBenchmark {
  private LoopbackServer server;
  private HttpClient jdkPlain;
  private HttpClient jdkRetrying;
  private OkHttpClient okPlain;
  private OkHttpClient okRetrying;
  private HttpRequest jdkRequest;
  private Request okRequest;

  @Setup(Level.Trial)
  public void setUp() throws Exception {
    server = LoopbackServer.okWithProbe();
    RetryEngine engine = RetryEngine.builder().policy(Policy.defaults()).build();
    jdkPlain = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
    jdkRetrying = RetryingHttpClient.wrap(jdkPlain, engine);
    okPlain = new OkHttpClient();
    okRetrying = okPlain.newBuilder().addInterceptor(new RetryInterceptor(engine)).build();
    jdkRequest = jdkRequest(server.url("/v1/items"));
    okRequest = new Request.Builder().url(server.url("/v1/items")).build();
    expectStatus(503, jdkProbe(server, jdkPlain, "plain"), "java.net.http without retries");
    expectStatus(200, jdkProbe(server, jdkRetrying, "wrapped"), "RetryingHttpClient.wrap");
    expectStatus(503, okProbe(server, okPlain, "plain"), "OkHttp without retries");
    expectStatus(200, okProbe(server, okRetrying, "wrapped"), "OkHttp with RetryInterceptor");
  }

  @TearDown(Level.Trial)
  public void tearDown() {
    server.close();
    okPlain.dispatcher().executorService().shutdown();
  }

  @Benchmark
  public String jdkDirect() throws Exception {
    return jdk(jdkPlain, jdkRequest);
  }

  @Benchmark
  public String jdkWithRetries() throws Exception {
    return jdk(jdkRetrying, jdkRequest);
  }

  @Benchmark
  public String okhttpDirect() throws Exception {
    return ok(okPlain, okRequest);
  }

  @Benchmark
  public String okhttpWithRetries() throws Exception {
    return ok(okRetrying, okRequest);
  }

  static HttpRequest jdkRequest(String url) {
    return HttpRequest.newBuilder(URI.create(url)).build();
  }

  static String jdk(HttpClient client, HttpRequest request) throws Exception {
    return client.send(request, HttpResponse.BodyHandlers.ofString()).body();
  }

  static String ok(OkHttpClient client, Request request) throws IOException {
    try (Response r = client.newCall(request).execute()) {
      return r.body().string();
    }
  }

  /** The status of a GET to a fresh {@code /probe/} path: 200 when the client retried the 503. */
  static int jdkProbe(LoopbackServer server, HttpClient client, String name) throws Exception {
    return client
        .send(jdkRequest(server.url("/probe/jdk-" + name)), HttpResponse.BodyHandlers.ofString())
        .statusCode();
  }

  static int okProbe(LoopbackServer server, OkHttpClient client, String name) throws IOException {
    Request probe = new Request.Builder().url(server.url("/probe/ok-" + name)).build();
    try (Response r = client.newCall(probe).execute()) {
      return r.code();
    }
  }

  /** Refuses to measure a client that is not wired as the benchmark claims. */
  static void expectStatus(int expected, int actual, String what) {
    if (expected != actual) {
      throw new IllegalStateException(
          what + ": the probe got " + actual + ", expected " + expected + "; not measuring");
    }
  }
}
