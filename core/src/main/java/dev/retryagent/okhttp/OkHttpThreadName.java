package dev.retryagent.okhttp;

import okhttp3.Call;

/**
 * The name OkHttp gives a dispatcher thread while it runs a call ({@code RealCall.AsyncCall}:
 * {@code "OkHttp " + redactedUrl()} from 3.12 to 5.x, the URL as OkHttp redacts it: scheme, host
 * and port, no path, query or user-info), for what the agent tells a callback from a dispatcher
 * thread outside OkHttp's run of a call: the callback sees the thread named as without the agent.
 */
final class OkHttpThreadName {
  private OkHttpThreadName() {}

  /** Runs {@code task} on this thread under the name OkHttp gives it for {@code call}. */
  static void run(Call call, Runnable task) {
    Thread thread = Thread.currentThread();
    String before = thread.getName();
    boolean renamed = false;
    try {
      thread.setName("OkHttp " + call.request().url().redact());
      renamed = true;
    } catch (RuntimeException | LinkageError e) {
      // a SecurityException: told under the thread's own name
    }
    try {
      task.run();
    } finally {
      if (renamed) {
        thread.setName(before);
      }
    }
  }
}
