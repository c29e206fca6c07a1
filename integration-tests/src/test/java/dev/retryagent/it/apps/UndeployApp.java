package dev.retryagent.it.apps;

import java.lang.ref.WeakReference;
import java.net.URI;
import java.net.URL;
import java.net.URLClassLoader;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * A web application's undeploy, as a servlet container does it: a class of a child class loader
 * (its parent the platform loader, as a webapp's loader sees the JDK) builds a {@code
 * java.net.http} client and makes a {@code send} and a {@code sendAsync}, each answered 503 then
 * 200 (retried with the agent), the calls made with the child loader as the thread's context class
 * loader and an inheritable request context of the webapp's set; then the context is removed, and
 * the loader closed and dropped.
 *
 * <p>Arguments: {@code URL}. Prints {@code child.result=} (the two statuses), then {@code
 * unload.collected=} (whether the loader was collected within 20 s of {@code System.gc()} calls).
 */
public final class UndeployApp {
  private UndeployApp() {}

  public static void main(String[] args) throws Exception {
    WeakReference<ClassLoader> ref = deployUseAndUndeploy(args[0]);
    awaitCollected(List.of(ref), 20);
    System.out.println("unload.collected=" + (ref.get() == null));
  }

  // A method of its own: a local of main's frame would hold the loader while main waits.
  private static WeakReference<ClassLoader> deployUseAndUndeploy(String url) throws Exception {
    URL classes = UndeployApp.class.getProtectionDomain().getCodeSource().getLocation();
    URLClassLoader webapp =
        new URLClassLoader("webapp", new URL[] {classes}, ClassLoader.getPlatformClassLoader());
    return useAndDrop(webapp, Webapp.class.getName(), "child", url);
  }

  /**
   * Calls {@code calls(url)} of class {@code servlet}, which must be {@code webapp}'s own, with
   * {@code webapp} as the thread's context class loader, and prints {@code LABEL.result=} with what
   * it returns; then closes the loader and drops it.
   */
  static WeakReference<ClassLoader> useAndDrop(
      URLClassLoader webapp, String servlet, String label, String url) throws Exception {
    Class<?> c = Class.forName(servlet, true, webapp);
    if (c.getClassLoader() != webapp) {
      throw new IllegalStateException("not the child's class");
    }
    Thread t = Thread.currentThread();
    ClassLoader before = t.getContextClassLoader();
    t.setContextClassLoader(webapp);
    try {
      System.out.println(label + ".result=" + c.getMethod("calls", String.class).invoke(null, url));
    } finally {
      t.setContextClassLoader(before);
    }
    webapp.close();
    return new WeakReference<>(webapp);
  }

  /** Collects the garbage until every loader of {@code refs} is gone or {@code seconds} passed. */
  static void awaitCollected(List<WeakReference<ClassLoader>> refs, long seconds)
      throws InterruptedException {
    long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
    while (alive(refs) && System.nanoTime() < until) {
      System.gc();
      new CountDownLatch(1).await(100, TimeUnit.MILLISECONDS);
    }
  }

  private static boolean alive(List<WeakReference<ClassLoader>> refs) {
    for (WeakReference<ClassLoader> r : refs) {
      if (r.get() != null) {
        return true;
      }
    }
    return false;
  }

  /** The webapp's code, loaded by the child loader. */
  public static final class Webapp {
    /**
     * A request context child threads inherit, as web frameworks keep one (Spring's
     * RequestContextHolder with inheritance, a logging context): its value is the webapp's.
     */
    private static final InheritableThreadLocal<Object> REQUEST = new InheritableThreadLocal<>();

    private Webapp() {}

    public static String calls(String url) throws Exception {
      REQUEST.set(new Webapp());
      try {
        return request(url);
      } finally {
        REQUEST.remove(); // the request is over, as a well-behaved webapp ends it
      }
    }

    private static String request(String url) throws Exception {
      HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
      HttpRequest request = HttpRequest.newBuilder(URI.create(url)).build();
      // the webapp's own body handler class, as an application's often is
      HttpResponse.BodyHandler<String> handler =
          new HttpResponse.BodyHandler<String>() {
            @Override
            public HttpResponse.BodySubscriber<String> apply(HttpResponse.ResponseInfo info) {
              return HttpResponse.BodySubscribers.ofString(java.nio.charset.StandardCharsets.UTF_8);
            }
          };
      int sync = client.send(request, handler).statusCode();
      int async = client.sendAsync(request, handler).get(30, TimeUnit.SECONDS).statusCode();
      return sync + "," + async;
    }
  }
}
