package dev.retryagent.demo;

import dev.retryagent.demo.server.FlakyLlmProvider;
import dev.retryagent.demo.server.FlakyPaymentGateway;
import dev.retryagent.demo.server.MiniHttpServer;
import java.io.IOException;
import java.io.PrintStream;
import java.net.http.HttpClient;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;
import okhttp3.HttpUrl;
import okhttp3.OkHttpClient;

/**
 * The demo: a news-processing service written the way many are, with no retry code at all. Every
 * article gets a summary and a sentiment from an LLM provider, then one order is charged through a
 * payment gateway. Both are simulated in-process on 127.0.0.1 and fail the way real ones do.
 *
 * <p>Run it plain to see the failures; run it with {@code -javaagent:retry-agent.jar=demo.yml} to
 * see the same code succeed. It exits 0 either way.
 */
public final class NewsProcessor {
  /** The simulated generation time of one LLM call. */
  static final Duration PROVIDER_LATENCY = Duration.ofMillis(20);

  static final long PRICE_PER_ARTICLE_CENTS = 5;

  private NewsProcessor() {}

  public static void main(String[] args) throws IOException, InterruptedException {
    Options options;
    try {
      options = Options.parse(args);
    } catch (IllegalArgumentException e) {
      System.err.println("demo-app: " + e.getMessage());
      System.err.print(Options.usage());
      System.exit(2);
      return;
    }
    if (options.help()) {
      System.out.print(Options.usage());
      return;
    }
    run(options, System.out);
  }

  /**
   * One run with fresh servers: processes the articles, charges the order, prints one line per
   * article, a line for the charge and the two summary lines to {@code out}.
   */
  public static RunResult run(Options o, PrintStream out) throws IOException, InterruptedException {
    FlakyLlmProvider provider =
        new FlakyLlmProvider(
            o.faultPlan(),
            FlakyLlmProvider.DEFAULT_RETRY_AFTER,
            PROVIDER_LATENCY,
            System::nanoTime);
    FlakyPaymentGateway gateway = new FlakyPaymentGateway(o.gatewayFailures());
    try (MiniHttpServer llm = MiniHttpServer.start("llm-provider", provider);
        MiniHttpServer pay = MiniHttpServer.start("payment-gateway", gateway)) {
      out.println(header(o));
      long start = System.nanoTime();
      int[] outcome = processArticles(o, new LlmClient(newHttpClient(), llm.baseUri()), out);
      charge(o, pay, out);
      Duration took = Duration.ofNanos(System.nanoTime() - start);
      RunResult result =
          new RunResult(
              outcome[0], outcome[1], provider.requests(), gateway.chargesCreated(), took);
      out.println(result.outcomeLine());
      out.println(result.truthLine());
      out.flush();
      return result;
    }
  }

  private static String header(Options o) {
    return String.format(
        Locale.ROOT,
        "news-processor: %d articles, %d workers, seed %d | provider faults: 429 %.0f%%, 503"
            + " %.0f%%, reset %.0f%% | gateway: 503 on the first %d attempts",
        o.articles(),
        o.workers(),
        o.seed(),
        o.rateLimit() * 100,
        o.serverErrors() * 100,
        o.resets() * 100,
        o.gatewayFailures());
  }

  private static HttpClient newHttpClient() {
    return HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();
  }

  /** Returns {succeeded, failed}. */
  private static int[] processArticles(Options o, LlmClient llm, PrintStream out)
      throws InterruptedException {
    List<Article> articles = Article.first(o.articles());
    int width = Integer.toString(o.articles()).length();
    AtomicInteger ok = new AtomicInteger();
    AtomicInteger failed = new AtomicInteger();
    ExecutorService workers = Executors.newFixedThreadPool(o.workers(), NewsProcessor::worker);
    try {
      List<Future<?>> done = new ArrayList<>();
      for (Article a : articles) {
        done.add(
            workers.submit(
                () -> {
                  String label = String.format(Locale.ROOT, "[article %0" + width + "d]", a.id());
                  String line;
                  try {
                    String summary = llm.summarise(a);
                    String sentiment = llm.sentiment(a);
                    ok.incrementAndGet();
                    line =
                        String.format(
                            Locale.ROOT, "%s ok      %-8s  %s", label, sentiment, summary);
                  } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    failed.incrementAndGet();
                    line = label + " FAILED  interrupted";
                  } catch (Exception e) {
                    failed.incrementAndGet();
                    line = label + " FAILED  " + describe(e);
                  }
                  synchronized (out) {
                    out.println(line);
                  }
                }));
      }
      for (Future<?> f : done) {
        try {
          f.get();
        } catch (java.util.concurrent.ExecutionException e) {
          throw new IllegalStateException("worker crashed", e.getCause());
        }
      }
    } finally {
      workers.shutdownNow();
    }
    return new int[] {ok.get(), failed.get()};
  }

  private static void charge(Options o, MiniHttpServer gateway, PrintStream out) {
    OkHttpClient http = new OkHttpClient();
    String order = "order-" + Long.toUnsignedString(o.seed() & 0xffffffL, 36);
    long amount = PRICE_PER_ARTICLE_CENTS * o.articles();
    String label =
        String.format(Locale.ROOT, "[charge] %s, %d.%02d EUR:", order, amount / 100, amount % 100);
    try {
      String id = new PaymentClient(http, HttpUrl.get(gateway.baseUri())).charge(order, amount);
      out.println(label + " ok, " + id);
    } catch (Exception e) {
      out.println(label + " FAILED  " + describe(e));
    } finally {
      http.dispatcher().executorService().shutdown();
      http.connectionPool().evictAll();
    }
  }

  /** The error as a person reads it: the HTTP status, or the exception and its message. */
  static String describe(Exception e) {
    if (e instanceof ProviderException) {
      return e.getMessage();
    }
    Throwable root = e;
    while (root.getCause() != null && root.getCause() != root) {
      root = root.getCause();
    }
    return text(e) + (root == e ? "" : " (cause: " + text(root) + ")");
  }

  private static String text(Throwable t) {
    String m = t.getMessage();
    return t.getClass().getName() + (m == null || m.isEmpty() ? "" : ": " + m);
  }

  private static Thread worker(Runnable r) {
    Thread t = new Thread(r, "news-worker");
    t.setDaemon(true);
    return t;
  }
}
