package dev.retryagent.it.apps;

import java.io.File;
import java.io.IOException;
import java.lang.ref.WeakReference;
import java.net.URL;
import java.net.URLClassLoader;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import okhttp3.Call;
import okhttp3.Callback;
import okhttp3.Dispatcher;
import okhttp3.Interceptor;
import okhttp3.OkHttpClient;
import okhttp3.Request;
import okhttp3.Response;
import okhttp3.ResponseBody;
import retrofit2.Retrofit;
import retrofit2.http.GET;

/**
 * An application with no retry code that uses OkHttp in the ways the agent must cope with, one
 * check per argument {@code CHECK|ARG...}, printing {@code CHECK.key=value} lines:
 *
 * <ul>
 *   <li>{@code builders}: every way to build a client; how many interceptors of each class each
 *       holds.
 *   <li>{@code wait|URL}: with one request per host allowed, a call waits between attempts (the
 *       server answers its first request 503 with Retry-After: 2) while a second call to the same
 *       host runs; prints the dispatcher's counts during the wait and which call finished first.
 *   <li>{@code cancel|URL}: a call cancelled while it waits between attempts; its callbacks.
 *   <li>{@code cancelAll|URL}: the same, through {@code dispatcher().cancelAll()}.
 *   <li>{@code once|URL}: an application interceptor that counts its runs, on a call retried once
 *       ({@code execute}).
 *   <li>{@code timeout|URL}: an enqueued call with a call timeout that ends its second attempt:
 *       what its callback hears, where, when, and whether the call says it was cancelled.
 *   <li>{@code queued|URL}: the same, the retry's clone queued behind the host's one slot, which a
 *       call the server never answers holds.
 *   <li>{@code websocket|URL}: a WebSocket whose handshake is retried once, cancelled once open:
 *       does the cancel close it?
 *   <li>{@code retrofit|URL}: a Retrofit interface, called with {@code execute()} and {@code
 *       enqueue()}.
 *   <li>{@code foreign|URL|JARS}: OkHttp in a class loader named like the OpenTelemetry agent's.
 *   <li>{@code other|URL|JARS}: another OkHttp version in a child-first loader, next to the
 *       application's own.
 *   <li>{@code isolated|URL|JARS}: OkHttp in a loader that delegates nothing but {@code java.*} and
 *       refuses the agent's packages (as OSGi may).
 *   <li>{@code unload|URL|JARS|enqueue-or-not}: OkHttp in a loader that the application uses (with
 *       {@code enqueue}: also an enqueued call that fails) and then drops: is it collected?
 * </ul>
 */
public final class OkAgentChecksApp {
  private OkAgentChecksApp() {}

  public static void main(String[] args) throws Exception {
    for (String arg : args) {
      String[] a = arg.split("\\|", -1);
      switch (a[0]) {
        case "builders":
          builders();
          break;
        case "wait":
          waitWithoutASlot(a[1]);
          break;
        case "cancel":
          cancelDuringWait(a[1], false);
          break;
        case "cancelAll":
          cancelDuringWait(a[1], true);
          break;
        case "once":
          interceptorOnce(a[1]);
          break;
        case "timeout":
          callTimeoutOfARetry(a[1]);
          break;
        case "queued":
          callTimeoutOfAQueuedRetry(a[1]);
          break;
        case "websocket":
          webSocketCancelAfterARetriedHandshake(a[1]);
          break;
        case "retrofit":
          retrofit(a[1]);
          break;
        case "foreign":
          inLoader(
              "foreign",
              new io.opentelemetry.javaagent.bootstrap.AgentClassLoader(urls(a[2])),
              a[1]);
          break;
        case "other":
          inLoader(
              "other",
              new ChildFirstLoader(urls(a[2]), OkAgentChecksApp.class.getClassLoader()),
              a[1]);
          break;
        case "isolated":
          inLoader("isolated", new IsolatedLoader(withTheseApps(urls(a[2]))), a[1]);
          break;
        case "unload":
          unload(a[1], a[2], a[3].equals("enqueue"));
          break;
        default:
          throw new IllegalArgumentException(a[0]);
      }
    }
    System.out.println("okhttp.version=" + OkVersions.version());
    // OkHttp's dispatcher threads (Retrofit's client) would keep the JVM up for a minute
    System.exit(0);
  }

  private static String count(OkHttpClient client) {
    return names(client.interceptors());
  }

  /** The application's own interceptor. */
  private static final class Mine implements Interceptor {
    @Override
    public Response intercept(Chain chain) throws IOException {
      return chain.proceed(chain.request());
    }
  }

  private static void builders() {
    Interceptor mine = new Mine();
    OkHttpClient plain = new OkHttpClient();
    System.out.println("builders.new=" + count(plain));
    OkHttpClient built = new OkHttpClient.Builder().addInterceptor(mine).build();
    System.out.println("builders.builder=" + count(built));
    System.out.println("builders.newBuilder=" + count(built.newBuilder().build()));
    System.out.println(
        "builders.newBuilderTwice=" + count(built.newBuilder().build().newBuilder().build()));
    OkHttpClient.Builder reused =
        plain.newBuilder().addInterceptor(mine).addNetworkInterceptor(mine);
    reused.build();
    reused.build();
    System.out.println("builders.reused=" + count(reused.build()));
    System.out.println(
        "builders.sameInstance="
            + (plain.interceptors().get(0) == built.interceptors().get(1)
                && plain.interceptors().get(0) == reused.build().interceptors().get(1)));
    OkHttpClient network = new OkHttpClient.Builder().addNetworkInterceptor(mine).build();
    System.out.println("builders.network=" + names(network.networkInterceptors()));
  }

  private static String names(List<Interceptor> interceptors) {
    List<String> names = new ArrayList<>();
    for (Interceptor i : interceptors) {
      names.add(i.getClass().getSimpleName());
    }
    return String.join(",", names);
  }

  private static Request get(String url) {
    return new Request.Builder().url(url).build();
  }

  /** Completes with the response or failure of an enqueued call; counts its callbacks. */
  private static final class Result implements Callback {
    final CompletableFuture<String> done = new CompletableFuture<>();
    final AtomicInteger failures = new AtomicInteger();
    final AtomicInteger responses = new AtomicInteger();
    volatile String failure;
    volatile String thread;

    @Override
    public void onFailure(Call call, IOException e) {
      failures.incrementAndGet();
      failure = e.getMessage();
      thread = Thread.currentThread().getName();
      done.complete("failed:" + e.getClass().getName() + ": " + e.getMessage());
    }

    @Override
    public void onResponse(Call call, Response response) {
      responses.incrementAndGet();
      thread = Thread.currentThread().getName();
      try (Response r = response) {
        done.complete(r.code() + ":" + r.body().string());
      } catch (IOException e) {
        done.complete("body failed:" + e);
      }
    }
  }

  /** Polls until the call neither runs nor waits for a slot, yet has not completed: it waits. */
  private static void awaitRetryWait(Dispatcher dispatcher, Result result) throws Exception {
    long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (System.nanoTime() < until) {
      if (dispatcher.runningCallsCount() == 0
          && dispatcher.queuedCallsCount() == 0
          && !result.done.isDone()) {
        return;
      }
      Thread.sleep(5);
    }
    throw new IllegalStateException("the call never waited between attempts: " + result.done);
  }

  private static void waitWithoutASlot(String url) throws Exception {
    Dispatcher dispatcher = new Dispatcher();
    dispatcher.setMaxRequestsPerHost(1);
    OkHttpClient client = new OkHttpClient.Builder().dispatcher(dispatcher).build();
    Result first = new Result();
    client.newCall(get(url + "/first")).enqueue(first);
    awaitRetryWait(dispatcher, first);
    System.out.println("wait.running=" + dispatcher.runningCallsCount());
    System.out.println("wait.queued=" + dispatcher.queuedCallsCount());
    Result second = new Result();
    client.newCall(get(url + "/second")).enqueue(second);
    String secondOutcome = second.done.get(10, TimeUnit.SECONDS);
    System.out.println("wait.secondDoneWhileFirstWaits=" + !first.done.isDone());
    System.out.println("wait.second=" + secondOutcome);
    System.out.println("wait.first=" + first.done.get(10, TimeUnit.SECONDS));
    dispatcher.executorService().shutdown();
  }

  private static void cancelDuringWait(String url, boolean all) throws Exception {
    String check = all ? "cancelAll" : "cancel";
    OkHttpClient client = new OkHttpClient();
    Result result = new Result();
    Call call = client.newCall(get(url + "/cancelled"));
    call.enqueue(result);
    awaitRetryWait(client.dispatcher(), result);
    if (all) {
      client.dispatcher().cancelAll();
    } else {
      call.cancel();
    }
    result.done.get(10, TimeUnit.SECONDS);
    // The retry was due 2 s after the 503: wait past it, so a request it made would be seen.
    Thread.sleep(3000);
    System.out.println(check + ".isCanceled=" + call.isCanceled());
    System.out.println(check + ".failures=" + result.failures.get());
    System.out.println(check + ".responses=" + result.responses.get());
    System.out.println(check + ".message=" + result.failure);
    System.out.println(check + ".thread=" + threadKind(result.thread));
    client.dispatcher().executorService().shutdown();
  }

  /** OkHttp names a dispatcher thread after the call it runs. */
  private static String threadKind(String name) {
    return name != null && name.startsWith("OkHttp ") ? "OkHttp" : name;
  }

  private static void interceptorOnce(String url) throws Exception {
    AtomicInteger runs = new AtomicInteger();
    OkHttpClient client =
        new OkHttpClient.Builder()
            .addInterceptor(
                chain -> {
                  runs.incrementAndGet();
                  return chain.proceed(chain.request());
                })
            .build();
    try (Response r = client.newCall(get(url + "/once")).execute()) {
      System.out.println("once.status=" + r.code());
    }
    System.out.println("once.runs=" + runs.get());
  }

  private static void callTimeoutOfARetry(String url) throws Exception {
    OkHttpClient client = new OkHttpClient.Builder().callTimeout(2, TimeUnit.SECONDS).build();
    Result result = new Result();
    Call call = client.newCall(get(url + "/timeout"));
    long start = System.nanoTime();
    call.enqueue(result);
    String outcome = result.done.get(10, TimeUnit.SECONDS);
    long millis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
    System.out.println("timeout.outcome=" + outcome);
    System.out.println("timeout.thread=" + threadKind(result.thread));
    System.out.println("timeout.inTime=" + (millis >= 1_900 && millis < 2_800));
    System.out.println("timeout.isCanceled=" + call.isCanceled());
    client.dispatcher().executorService().shutdown();
  }

  private static void callTimeoutOfAQueuedRetry(String url) throws Exception {
    Dispatcher dispatcher = new Dispatcher();
    dispatcher.setMaxRequestsPerHost(1);
    OkHttpClient client =
        new OkHttpClient.Builder().dispatcher(dispatcher).callTimeout(2, TimeUnit.SECONDS).build();
    Result result = new Result();
    Call call = client.newCall(get(url + "/queued"));
    long start = System.nanoTime();
    call.enqueue(result);
    awaitRetryWait(dispatcher, result); // its retry is due 1 s after the 503
    Call slot = client.newCall(get(url + "/slot"));
    slot.timeout().timeout(30, TimeUnit.SECONDS);
    slot.enqueue(new Result());
    String outcome = result.done.get(10, TimeUnit.SECONDS);
    long millis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
    System.out.println("queued.outcome=" + outcome);
    System.out.println("queued.thread=" + threadKind(result.thread));
    System.out.println("queued.inTime=" + (millis >= 1_900 && millis < 2_800));
    System.out.println("queued.isCanceled=" + call.isCanceled());
    System.out.println("queued.clonesQueued=" + dispatcher.queuedCallsCount());
    slot.cancel(); // the clone then leaves the queue, cancelled
    Thread.sleep(500); // time for a request it made to be seen
    System.out.println("queued.failures=" + result.failures.get());
    dispatcher.executorService().shutdown();
  }

  private static void webSocketCancelAfterARetriedHandshake(String url) throws Exception {
    OkHttpClient client = new OkHttpClient();
    CompletableFuture<String> open = new CompletableFuture<>();
    CompletableFuture<String> failed = new CompletableFuture<>();
    okhttp3.WebSocket ws =
        client.newWebSocket(
            get(url + "/ws"),
            new okhttp3.WebSocketListener() {
              @Override
              public void onOpen(okhttp3.WebSocket webSocket, Response response) {
                open.complete(String.valueOf(response.code()));
              }

              @Override
              public void onFailure(okhttp3.WebSocket webSocket, Throwable t, Response response) {
                open.complete("failed: " + t);
                failed.complete(t.getClass().getName());
              }
            });
    System.out.println("websocket.open=" + open.get(10, TimeUnit.SECONDS));
    ws.cancel();
    String closed;
    try {
      closed = failed.get(5, TimeUnit.SECONDS);
    } catch (java.util.concurrent.TimeoutException e) {
      closed = "still open";
    }
    System.out.println("websocket.afterCancel=" + closed);
    client.dispatcher().executorService().shutdown();
  }

  /** A Retrofit service: raw bodies, so no converter is needed. */
  interface Items {
    @GET("items")
    retrofit2.Call<ResponseBody> items();
  }

  private static void retrofit(String url) throws Exception {
    Retrofit retrofit = new Retrofit.Builder().baseUrl(url + "/").build();
    Items items = retrofit.create(Items.class);
    retrofit2.Response<ResponseBody> sync = items.items().execute();
    System.out.println("retrofit.execute=" + sync.code() + ":" + sync.body().string());
    CompletableFuture<String> async = new CompletableFuture<>();
    items
        .items()
        .enqueue(
            new retrofit2.Callback<ResponseBody>() {
              @Override
              public void onResponse(
                  retrofit2.Call<ResponseBody> call, retrofit2.Response<ResponseBody> response) {
                try {
                  async.complete(response.code() + ":" + response.body().string());
                } catch (IOException e) {
                  async.completeExceptionally(e);
                }
              }

              @Override
              public void onFailure(retrofit2.Call<ResponseBody> call, Throwable t) {
                async.completeExceptionally(t);
              }
            });
    System.out.println("retrofit.enqueue=" + async.get(10, TimeUnit.SECONDS));
  }

  private static URL[] urls(String jars) throws Exception {
    List<URL> urls = new ArrayList<>();
    for (String jar : jars.split(File.pathSeparator)) {
      urls.add(new File(jar).toURI().toURL());
    }
    // the driver itself, defined by the loader next to its OkHttp
    urls.add(OkAgentChecksApp.class.getProtectionDomain().getCodeSource().getLocation());
    return urls.toArray(new URL[0]);
  }

  /** {@code jars} and this class's own location, where {@link OkDriver} is. */
  private static URL[] withTheseApps(URL[] jars) {
    URL[] all = java.util.Arrays.copyOf(jars, jars.length + 1);
    all[jars.length] = OkAgentChecksApp.class.getProtectionDomain().getCodeSource().getLocation();
    return all;
  }

  private static void inLoader(String check, ClassLoader loader, String url) throws Exception {
    Class<?> driver = Class.forName(OkDriver.class.getName(), true, loader);
    String result = (String) driver.getMethod("get", String.class).invoke(null, url);
    System.out.println(check + ".loader=" + loader.getClass().getName());
    for (String kv : result.split(";")) {
      System.out.println(check + "." + kv);
    }
    System.out.println(
        check
            + ".sameOkHttp="
            + (Class.forName("okhttp3.OkHttpClient", false, loader) == OkHttpClient.class));
    System.out.println("main.status=" + mainCall(url));
  }

  /** The application's own OkHttp, for comparison, after the other loader's call. */
  private static int mainCall(String url) throws IOException {
    OkHttpClient client = new OkHttpClient();
    try (Response r = client.newCall(get(url)).execute()) {
      return r.code();
    }
  }

  private static void unload(String url, String jars, boolean enqueue) throws Exception {
    WeakReference<ClassLoader> ref = useAndDrop(url, jars, enqueue);
    long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
    while (ref.get() != null && System.nanoTime() < until) {
      System.gc();
      new CountDownLatch(1).await(100, TimeUnit.MILLISECONDS);
    }
    System.out.println("unload.collected=" + (ref.get() == null));
    if (ref.get() != null) {
      List<String> threads = new ArrayList<>();
      for (Thread t : Thread.getAllStackTraces().keySet()) {
        threads.add(t.getName());
      }
      System.out.println("unload.threads=" + threads);
    }
  }

  private static WeakReference<ClassLoader> useAndDrop(String url, String jars, boolean enqueue)
      throws Exception {
    URLClassLoader loader = new URLClassLoader(urls(jars), ClassLoader.getPlatformClassLoader());
    Class<?> driver = Class.forName(OkDriver.class.getName(), true, loader);
    String[] touched =
        ((String) driver.getMethod("touch", String.class, boolean.class).invoke(null, url, enqueue))
            .split(";");
    System.out.println("unload.interceptors=" + touched[0]);
    System.out.println("unload.enqueued=" + touched[1]);
    loader.close();
    return new WeakReference<>(loader);
  }
}
