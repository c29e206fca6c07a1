package dev.retryagent.bench;

import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.util.concurrent.TimeUnit;
import okhttp3.OkHttpClient;
import okhttp3.Request;
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
 * The calls of {@link LoopbackCallBenchmark} made with plain clients in a JVM started with the
 * agent (built-in defaults): what the agent adds per call. The fork's {@code -javaagent} path is
 * relative, so run JMH from the repository root after building {@code agent}. The set-up checks
 * that the agent retries before measuring anything.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(value = 1, jvmArgsAppend = "-javaagent:agent/target/retry-agent.jar")
@State(Scope.Benchmark)
public class AgentLoopbackCallBenchmark {
  private LoopbackServer server;
  private HttpClient jdk;
  private OkHttpClient okhttp;
  private HttpRequest jdkRequest;
  private Request okRequest;

  @Setup(Level.Trial)
  public void setUp() throws Exception {
    server = LoopbackServer.okWithProbe();
    jdk = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
    okhttp = new OkHttpClient();
    jdkRequest = LoopbackCallBenchmark.jdkRequest(server.url("/v1/items"));
    okRequest = new Request.Builder().url(server.url("/v1/items")).build();
    LoopbackCallBenchmark.expectStatus(
        200, LoopbackCallBenchmark.jdkProbe(server, jdk, "agent"), "java.net.http with the agent");
    LoopbackCallBenchmark.expectStatus(
        200, LoopbackCallBenchmark.okProbe(server, okhttp, "agent"), "OkHttp with the agent");
  }

  @TearDown(Level.Trial)
  public void tearDown() {
    server.close();
    okhttp.dispatcher().executorService().shutdown();
  }

  @Benchmark
  public String jdkThroughAgent() throws Exception {
    return LoopbackCallBenchmark.jdk(jdk, jdkRequest);
  }

  @Benchmark
  public String okhttpThroughAgent() throws Exception {
    return LoopbackCallBenchmark.ok(okhttp, okRequest);
  }
}
