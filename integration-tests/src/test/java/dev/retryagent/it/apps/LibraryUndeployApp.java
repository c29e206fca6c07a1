package dev.retryagent.it.apps;

import java.io.File;
import java.io.IOException;
import java.lang.ref.WeakReference;
import java.net.URL;
import java.net.URLClassLoader;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * {@link UndeployApp} for the libraries a webapp carries in its own {@code WEB-INF/lib}: each
 * library's jars and the webapp's code in a child loader of their own (its parent the platform
 * loader), which makes retried calls with the child loader as the thread's context class loader and
 * an inheritable request context of the webapp's set, closes its clients as a webapp's shutdown
 * does, and is then dropped.
 *
 * <p>Arguments: {@code URL LIBRARY=JARS...}, {@code LIBRARY} one of {@code okhttp} ({@code execute}
 * and {@code enqueue}), {@code apache4} (classic {@code execute}), {@code apache5} (classic {@code
 * execute} and the async client's {@code execute}), {@code JARS} separated by the path separator.
 * Prints, per library, {@code LIBRARY.result=} (the statuses), then {@code LIBRARY.collected=}
 * (whether its loader was collected within 90 s of {@code System.gc()} calls, all loaders waited
 * for together).
 */
public final class LibraryUndeployApp {
  private LibraryUndeployApp() {}

  public static void main(String[] args) throws Exception {
    String url = args[0];
    List<String> names = new ArrayList<>();
    List<WeakReference<ClassLoader>> refs = new ArrayList<>();
    for (int i = 1; i < args.length; i++) {
      String[] kv = args[i].split("=", 2);
      names.add(kv[0]);
      refs.add(deployUseAndUndeploy(kv[0], kv[1], url + "/" + kv[0]));
    }
    // OkHttp 4's own task thread (its connection pool's cleanup) keeps its loader for 60 s after
    // its last task, with the agent or without: a bound past that.
    UndeployApp.awaitCollected(refs, 90);
    for (int i = 0; i < names.size(); i++) {
      System.out.println(names.get(i) + ".collected=" + (refs.get(i).get() == null));
    }
    boolean allCollected = true;
    for (WeakReference<ClassLoader> r : refs) {
      allCollected &= r.get() == null;
    }
    if (!allCollected) {
      // what may hold one: the threads still alive, with their context class loader
      List<String> threads = new ArrayList<>();
      for (Thread t : Thread.getAllStackTraces().keySet()) {
        threads.add(t.getName() + "/" + t.getContextClassLoader());
      }
      System.out.println("threads=" + threads);
    }
  }

  private static WeakReference<ClassLoader> deployUseAndUndeploy(
      String library, String jars, String url) throws Exception {
    List<URL> urls = new ArrayList<>();
    for (String jar : jars.split(File.pathSeparator)) {
      urls.add(new File(jar).toURI().toURL());
    }
    urls.add(LibraryUndeployApp.class.getProtectionDomain().getCodeSource().getLocation());
    URLClassLoader webapp =
        new URLClassLoader(
            "webapp-" + library, urls.toArray(new URL[0]), ClassLoader.getPlatformClassLoader());
    String name;
    switch (library) {
      case "okhttp":
        name = OkWebapp.class.getName();
        break;
      case "apache4":
        name = Apache4Webapp.class.getName();
        break;
      case "apache5":
        name = Apache5Webapp.class.getName();
        break;
      default:
        throw new IllegalArgumentException(library);
    }
    return UndeployApp.useAndDrop(webapp, name, library, url);
  }

  /**
   * A request context child threads inherit, as web frameworks keep one; loaded by each webapp's
   * loader, its value is that webapp's.
   */
  public static final class RequestContext {
    static final InheritableThreadLocal<Object> CURRENT = new InheritableThreadLocal<>();

    private RequestContext() {}

    static void begin() {
      CURRENT.set(new RequestContext());
    }

    static void end() {
      CURRENT.remove();
    }
  }

  /** A webapp on OkHttp. */
  public static final class OkWebapp {
    private OkWebapp() {}

    public static String calls(String url) throws Exception {
      RequestContext.begin();
      okhttp3.OkHttpClient client = new okhttp3.OkHttpClient();
      try {
        int sync;
        try (okhttp3.Response r =
            client.newCall(new okhttp3.Request.Builder().url(url + "/execute").build()).execute()) {
          r.body().string();
          sync = r.code();
        }
        CompletableFuture<Integer> done = new CompletableFuture<>();
        client
            .newCall(new okhttp3.Request.Builder().url(url + "/enqueue").build())
            .enqueue(
                new okhttp3.Callback() {
                  @Override
                  public void onFailure(okhttp3.Call call, IOException e) {
                    done.completeExceptionally(e);
                  }

                  @Override
                  public void onResponse(okhttp3.Call call, okhttp3.Response response) {
                    // closed before the webapp hears of it: a connection still in use when the
                    // webapp evicts its pool stays there, and so does OkHttp's cleanup thread
                    int code;
                    try (okhttp3.Response r = response) {
                      code = r.code();
                    }
                    done.complete(code);
                  }
                });
        return sync + "," + done.get(30, TimeUnit.SECONDS);
      } finally {
        RequestContext.end();
        // a webapp's shutdown, as OkHttp documents it: its threads end, its connections close
        client.dispatcher().executorService().shutdown();
        client.connectionPool().evictAll();
        client.dispatcher().executorService().awaitTermination(10, TimeUnit.SECONDS);
      }
    }
  }

  /** A webapp on Apache HttpClient 4.5. */
  public static final class Apache4Webapp {
    private Apache4Webapp() {}

    public static String calls(String url) throws Exception {
      RequestContext.begin();
      try (org.apache.http.impl.client.CloseableHttpClient client =
          org.apache.http.impl.client.HttpClients.createDefault()) {
        try (org.apache.http.client.methods.CloseableHttpResponse r =
            client.execute(new org.apache.http.client.methods.HttpGet(url + "/execute"))) {
          org.apache.http.util.EntityUtils.consume(r.getEntity());
          return Integer.toString(r.getStatusLine().getStatusCode());
        }
      } finally {
        RequestContext.end();
      }
    }
  }

  /** A webapp on Apache HttpClient 5.x, classic and async. */
  public static final class Apache5Webapp {
    private Apache5Webapp() {}

    public static String calls(String url) throws Exception {
      RequestContext.begin();
      try (org.apache.hc.client5.http.impl.classic.CloseableHttpClient classic =
              org.apache.hc.client5.http.impl.classic.HttpClients.createDefault();
          org.apache.hc.client5.http.impl.async.CloseableHttpAsyncClient async =
              org.apache.hc.client5.http.impl.async.HttpAsyncClients.createDefault()) {
        int sync =
            classic.execute(
                new org.apache.hc.client5.http.classic.methods.HttpGet(url + "/execute"),
                new org.apache.hc.core5.http.io.HttpClientResponseHandler<Integer>() {
                  @Override
                  public Integer handleResponse(org.apache.hc.core5.http.ClassicHttpResponse r)
                      throws IOException {
                    org.apache.hc.core5.http.io.entity.EntityUtils.consume(r.getEntity());
                    return r.getCode();
                  }
                });
        async.start();
        int later =
            async
                .execute(
                    org.apache.hc.client5.http.async.methods.SimpleRequestBuilder.get(
                            url + "/async")
                        .build(),
                    null)
                .get(30, TimeUnit.SECONDS)
                .getCode();
        return sync + "," + later;
      } finally {
        RequestContext.end();
      }
    }
  }
}
