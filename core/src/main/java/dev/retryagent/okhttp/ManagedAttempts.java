package dev.retryagent.okhttp;

import dev.retryagent.engine.RetryCall;
import java.util.concurrent.ConcurrentHashMap;
import okhttp3.Call;

/**
 * The attempts of asynchronous calls whose retries {@link AsyncRetrier} runs: for each attempt's
 * {@link Call} (the original, then clones), its number and timeout, so the interceptor makes
 * exactly one attempt for it instead of retrying inside. Entries are removed when the attempt ends.
 */
final class ManagedAttempts {
  /** One attempt of a managed call. */
  static final class Attempt {
    final RetryCall call;
    final OkRequest request;
    final int number;
    final long timeoutNanos;

    Attempt(RetryCall call, OkRequest request, int number, long timeoutNanos) {
      this.call = call;
      this.request = request;
      this.number = number;
      this.timeoutNanos = timeoutNanos;
    }
  }

  // Calls do not override equals: identity keys. Removed when each attempt's callback fires.
  private final ConcurrentHashMap<Call, Attempt> attempts = new ConcurrentHashMap<>();

  void put(Call call, Attempt attempt) {
    attempts.put(call, attempt);
  }

  Attempt get(Call call) {
    return attempts.isEmpty() ? null : attempts.get(call);
  }

  void remove(Call call) {
    attempts.remove(call);
  }

  int size() {
    return attempts.size();
  }
}
