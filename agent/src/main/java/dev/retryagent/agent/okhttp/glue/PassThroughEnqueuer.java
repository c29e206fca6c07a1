package dev.retryagent.agent.okhttp.glue;

import dev.retryagent.agent.okhttp.OkHttpEntry;
import dev.retryagent.okhttp.AsyncRetrier;
import okhttp3.Call;
import okhttp3.Callback;

/**
 * Enqueues one attempt with OkHttp's own {@code enqueue}, which the hook must not take over again:
 * a pass-through token on this thread lets that one call run the original method.
 */
final class PassThroughEnqueuer implements AsyncRetrier.Enqueuer {
  static final PassThroughEnqueuer INSTANCE = new PassThroughEnqueuer();

  private PassThroughEnqueuer() {}

  @Override
  public void enqueue(Call call, Callback callback) {
    OkHttpEntry.PASS_THROUGH.next();
    try {
      call.enqueue(callback);
    } finally {
      OkHttpEntry.PASS_THROUGH.clear();
    }
  }
}
