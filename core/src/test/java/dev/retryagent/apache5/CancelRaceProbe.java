package dev.retryagent.apache5;

import dev.retryagent.engine.RetryEngine;
import dev.retryagent.testing.ScriptedHttpServer;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.apache.hc.client5.http.async.AsyncExecCallback;
import org.apache.hc.client5.http.async.AsyncExecChain;
import org.apache.hc.client5.http.async.AsyncExecChainHandler;
import org.apache.hc.client5.http.async.methods.SimpleHttpRequest;
import org.apache.hc.client5.http.async.methods.SimpleHttpResponse;
import org.apache.hc.client5.http.async.methods.SimpleRequestProducer;
import org.apache.hc.client5.http.async.methods.SimpleResponseConsumer;
import org.apache.hc.client5.http.impl.ChainElement;
import org.apache.hc.client5.http.impl.async.CloseableHttpAsyncClient;
import org.apache.hc.client5.http.impl.async.HttpAsyncClientBuilder;
import org.apache.hc.client5.http.impl.async.HttpAsyncClients;
import org.apache.hc.core5.concurrent.FutureCallback;
import org.apache.hc.core5.http.HttpException;
import org.apache.hc.core5.http.HttpRequest;
import org.apache.hc.core5.http.nio.AsyncEntityProducer;
import org.apache.hc.core5.io.CloseMode;

/**
 * Not a test (run by hand, see its main): the race of a {@code Future.cancel(true)} made as soon as
 * {@code CloseableHttpAsyncClient.execute} returns, with and without {@link AsyncRetryExecHandler}
 * (the core of what the agent puts in the chain). Per call: the time {@code execute} took, the time
 * from the request's hand-over to HttpClient's connect element (its dispatch: from there the I/O
 * thread may go on) to {@code execute}'s return, and what the callback heard.
 *
 * <pre>
 * java -cp ... dev.retryagent.apache5.CancelRaceProbe plain|wrapped CALLS fresh|shared [SPIN_US]
 * </pre>
 */
public final class CancelRaceProbe {
  private CancelRaceProbe() {}

  /** When the caller's thread handed the request to the connect element, per call. */
  private static final ThreadLocal<long[]> DISPATCHED = ThreadLocal.withInitial(() -> new long[1]);

  /** Before HttpClient's connect element: notes when the request got there on the caller. */
  private static final class Dispatch implements AsyncExecChainHandler {
    @Override
    public void execute(
        HttpRequest request,
        AsyncEntityProducer producer,
        AsyncExecChain.Scope scope,
        AsyncExecChain chain,
        AsyncExecCallback callback)
        throws HttpException, IOException {
      DISPATCHED.get()[0] = System.nanoTime();
      chain.proceed(request, producer, scope, callback);
    }
  }

  /** When the connection was ready and the request went on past the connect element, per call. */
  private static volatile long connected;

  /** After HttpClient's connect element: notes when the request got past it, on any thread. */
  private static final class Connected implements AsyncExecChainHandler {
    @Override
    public void execute(
        HttpRequest request,
        AsyncEntityProducer producer,
        AsyncExecChain.Scope scope,
        AsyncExecChain chain,
        AsyncExecCallback callback)
        throws HttpException, IOException {
      connected = System.nanoTime();
      chain.proceed(request, producer, scope, callback);
    }
  }

  public static void main(String[] args) throws Exception {
    boolean wrapped = args[0].equals("wrapped");
    int calls = Integer.parseInt(args[1]);
    boolean fresh = args.length < 3 || args[2].equals("fresh");
    // Busy work on the caller before each execute (µs): whether a later dispatch alone, not the
    // handler, changes the outcomes (the pool's state when the call leases).
    long spinNanos = args.length < 4 ? 0 : Long.parseLong(args[3]) * 1000;
    RetryEngine engine = wrapped ? RetryEngine.builder().build() : null;
    List<long[]> rows = new ArrayList<>();
    try (ScriptedHttpServer server = new ScriptedHttpServer()) {
      server.otherwise(ScriptedHttpServer.Action.ok("ok"));
      CloseableHttpAsyncClient shared = fresh ? null : client(wrapped, engine);
      for (int i = 0; i < calls; i++) {
        CloseableHttpAsyncClient client = fresh ? client(wrapped, engine) : shared;
        int before = server.requestCount();
        CompletableFuture<String> heard = new CompletableFuture<>();
        SimpleHttpRequest request = new SimpleHttpRequest("GET", server.url("/").toString());
        DISPATCHED.get()[0] = 0;
        connected = 0;
        for (long until = System.nanoTime() + spinNanos; System.nanoTime() - until < 0; ) {
          Thread.onSpinWait();
        }
        long t0 = System.nanoTime();
        Future<SimpleHttpResponse> f =
            client.execute(
                SimpleRequestProducer.create(request),
                SimpleResponseConsumer.create(),
                new FutureCallback<SimpleHttpResponse>() {
                  @Override
                  public void completed(SimpleHttpResponse r) {
                    heard.complete("completed");
                  }

                  @Override
                  public void failed(Exception e) {
                    heard.complete("failed " + e);
                  }

                  @Override
                  public void cancelled() {
                    heard.complete("cancelled");
                  }
                });
        long t1 = System.nanoTime();
        f.cancel(true);
        String outcome = heard.get(10, TimeUnit.SECONDS);
        if (fresh) {
          close(client);
        }
        long d = DISPATCHED.get()[0];
        long afterDispatch = d == 0 ? -1 : t1 - d;
        int kind = outcome.equals("cancelled") ? 0 : outcome.equals("completed") ? 1 : 2;
        if (kind == 2) {
          System.out.println("call " + i + ": " + outcome);
        }
        long c = connected;
        rows.add(
            new long[] {
              t1 - t0,
              afterDispatch,
              kind,
              server.requestCount() - before,
              c == 0 ? 0 : c < t1 ? 1 : 2
            });
      }
      if (shared != null) {
        close(shared);
      }
    }
    report(args[0] + " " + (fresh ? "fresh" : "shared"), rows);
  }

  private static void close(CloseableHttpAsyncClient client) {
    try {
      client.close(CloseMode.GRACEFUL);
    } catch (RuntimeException e) {
      // HttpClient 5.1.3's close may throw IOReactorShutdownException out of a connect the cancel
      // raced with (the pool's close completes the lease, which connects on the reactor shut down)
    }
  }

  private static CloseableHttpAsyncClient client(boolean wrapped, RetryEngine engine) {
    HttpAsyncClientBuilder b = HttpAsyncClients.custom();
    b.addExecInterceptorBefore(ChainElement.CONNECT.name(), "probe-dispatch", new Dispatch());
    b.addExecInterceptorAfter(ChainElement.CONNECT.name(), "probe-connected", new Connected());
    if (wrapped) {
      AsyncRetryExecHandler.addTo(b, engine);
    }
    CloseableHttpAsyncClient c = b.build();
    c.start();
    return c;
  }

  private static void report(String what, List<long[]> rows) {
    long[] first = rows.get(0);
    System.out.printf(
        Locale.ROOT,
        "%s first: execute %d us, after dispatch %d us, %s, requests %d, past connect %s%n",
        what,
        first[0] / 1000,
        first[1] / 1000,
        first[2] == 0 ? "cancelled" : first[2] == 1 ? "completed" : "failed",
        first[3],
        first[4] == 0 ? "never" : first[4] == 1 ? "before return" : "after return");
    if (rows.size() < 2) {
      return;
    }
    List<Long> exec = new ArrayList<>();
    List<Long> after = new ArrayList<>();
    int[] kinds = new int[3];
    int sent = 0;
    int[] conn = new int[3];
    for (long[] r : rows.subList(1, rows.size())) {
      exec.add(r[0]);
      after.add(r[1]);
      kinds[(int) r[2]]++;
      sent += r[3] > 0 ? 1 : 0;
      conn[(int) r[4]]++;
    }
    Collections.sort(exec);
    Collections.sort(after);
    System.out.printf(
        Locale.ROOT,
        "%s rest (%d): execute p50 %d us p90 %d us p99 %d us; after dispatch p50 %d us p90 %d us"
            + " p99 %d us; cancelled %d, completed %d, failed %d; a request on the server %d;"
            + " past connect: never %d, before execute returned %d, after %d%n",
        what,
        exec.size(),
        pct(exec, 50),
        pct(exec, 90),
        pct(exec, 99),
        pct(after, 50),
        pct(after, 90),
        pct(after, 99),
        kinds[0],
        kinds[1],
        kinds[2],
        sent,
        conn[0],
        conn[1],
        conn[2]);
  }

  private static long pct(List<Long> sorted, int p) {
    return sorted.get(Math.min(sorted.size() - 1, sorted.size() * p / 100)) / 1000;
  }
}
