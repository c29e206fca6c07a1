package dev.retryagent.bench;

import com.sun.net.httpserver.HttpServer;
import dev.retryagent.engine.RetryEngine;
import dev.retryagent.jdk.RetryingHttpClient;
import dev.retryagent.okhttp.RetryInterceptor;
import dev.retryagent.policy.Policy;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.Executors;
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
 * hand: the cost of the library on the success path, next to the cost of the call itself.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(1)
@State(Scope.Benchmark)
public class LoopbackCallBenchmark {
  private HttpServer server;
  private HttpClient jdkPlain;
  private HttpClient jdkRetrying;
  private OkHttpClient okPlain;
  private OkHttpClient okRetrying;
  private HttpRequest jdkRequest;
  private Request okRequest;

  @Setup(Level.Trial)
  public void setUp() throws IOException {
    // Without TCP_NODELAY the JDK server's head and body packets meet the client's delayed ACK:
    // every call would take ~40 ms and measure the kernel, not the clients.
    System.setProperty("sun.net.httpserver.nodelay", "true");
    server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 64);
    byte[] body = "ok".getBytes(StandardCharsets.UTF_8);
    server.createContext(
        "/",
        exchange -> {
          exchange.getRequestBody().readAllBytes();
          exchange.sendResponseHeaders(200, body.length);
          try (OutputStream out = exchange.getResponseBody()) {
            out.write(body);
          }
        });
    server.setExecutor(Executors.newFixedThreadPool(2));
    server.start();
    String url = "http://127.0.0.1:" + server.getAddress().getPort() + "/v1/items";
    RetryEngine engine = RetryEngine.builder().policy(Policy.defaults()).build();
    jdkPlain = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
    jdkRetrying = RetryingHttpClient.wrap(jdkPlain, engine);
    okPlain = new OkHttpClient();
    okRetrying = okPlain.newBuilder().addInterceptor(new RetryInterceptor(engine)).build();
    jdkRequest = HttpRequest.newBuilder(URI.create(url)).build();
    okRequest = new Request.Builder().url(url).build();
  }

  @TearDown(Level.Trial)
  public void tearDown() {
    server.stop(0);
    okPlain.dispatcher().executorService().shutdown();
  }

  @Benchmark
  public String jdkDirect() throws Exception {
    return jdkPlain.send(jdkRequest, HttpResponse.BodyHandlers.ofString()).body();
  }

  @Benchmark
  public String jdkWithRetries() throws Exception {
    return jdkRetrying.send(jdkRequest, HttpResponse.BodyHandlers.ofString()).body();
  }

  @Benchmark
  public String okhttpDirect() throws Exception {
    try (Response r = okPlain.newCall(okRequest).execute()) {
      return r.body().string();
    }
  }

  @Benchmark
  public String okhttpWithRetries() throws Exception {
    try (Response r = okRetrying.newCall(okRequest).execute()) {
      return r.body().string();
    }
  }
}
