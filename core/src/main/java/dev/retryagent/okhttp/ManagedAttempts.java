package dev.retryagent.okhttp;

import java.io.IOException;
import java.util.concurrent.ConcurrentHashMap;
import okhttp3.Call;

/**
 * The attempts of asynchronous calls whose retries {@link AsyncRetrier} runs: for each attempt's
 * {@link Call} (the original, then clones), the call it belongs to, its number and timeout, so the
 * interceptor makes exactly one attempt for it instead of retrying inside. Entries are removed when
 * the attempt ends.
 */
final class ManagedAttempts {
  /** One attempt of a managed call. */
  static class Attempt {
    final EnqueuedCall owner;
    final int number;
    final long timeoutNanos;

    /**
     * Not an attempt: the failure to deliver through OkHttp (a cancel during the wait, the breaker
     * open, no rate-limit permit), so that the callback hears of it where OkHttp tells it anything;
     * the interceptor throws it without a request. Null for a real attempt.
     */
    final IOException failure;

    Attempt(EnqueuedCall owner, int number, long timeoutNanos, IOException failure) {
      this.owner = owner;
      this.number = number;
      this.timeoutNanos = timeoutNanos;
      this.failure = failure;
    }
  }

  /**
   * Not begun yet: the first attempt, the call itself, enqueued at once (so that OkHttp marks it
   * executed inside {@code enqueue}, as without the agent), whose rate-limit permit comes at {@link
   * #permitAtNanos} (the engine's clock); the interceptor waits for it, then begins the attempt
   * ({@link EnqueuedCall#attempt}). A class of its own: every other attempt stays as small as it
   * was (issue 13).
   */
  static final class PermitWait extends Attempt {
    final long permitAtNanos;

    PermitWait(EnqueuedCall owner, long permitAtNanos) {
      super(owner, 0, -1, null);
      this.permitAtNanos = permitAtNanos;
    }
  }

  /**
   * A retry's clone {@link EnqueuedCall#endIfQueued ended} while it waited in the dispatcher's
   * queue (the call's deadline, a cancel): the application heard of the call already, so the
   * clone's own run (once a slot frees) is not heard, and it sends nothing. Made only then (the
   * failure path).
   */
  static final class Expired extends Attempt {
    Expired(EnqueuedCall owner) {
      super(owner, 0, -1, new IOException("Canceled"));
    }
  }

  /**
   * Not an attempt: a retry's wait ended past the call's deadline after its attempt's response was
   * released for it, for a call whose dispatcher is not known ({@link EnqueuedCall#giveBack}): the
   * interceptor returns the copy kept of that response without a request, so that the callback
   * hears it where OkHttp tells it anything. Its {@link #failure} (the engine's exception) is what
   * any other end of it tells. Made only then.
   */
  static final class GiveBack extends Attempt {
    final okhttp3.Response response;

    GiveBack(EnqueuedCall owner, IOException failure, okhttp3.Response response) {
      super(owner, 0, -1, failure);
      this.response = response;
    }
  }

  // Calls do not override equals: identity keys. Removed when each attempt's callback fires.
  private final ConcurrentHashMap<Call, Attempt> attempts;

  /**
   * Set before the first attempt is put, never cleared: until then no call is an attempt, and a
   * client whose calls are all {@code execute()}d looks at nothing more (no hash of its call). Not
   * the map's {@code isEmpty()}: it sums counts that other threads change as it reads them, and
   * read while another attempt was put on one thread and removed on another (as every attempt is),
   * it can answer empty for a map that holds the attempt asked for. The interceptor then ran that
   * attempt as a call of its own: one call and one attempt more in the metrics than the callbacks
   * heard and the host got (the soak's ok-enqueue route, once in ~37,000 calls).
   */
  private volatile boolean used;

  ManagedAttempts() {
    this(new ConcurrentHashMap<>());
  }

  /** Test only: over {@code attempts}. */
  ManagedAttempts(ConcurrentHashMap<Call, Attempt> attempts) {
    this.attempts = attempts;
  }

  void put(Call call, Attempt attempt) {
    if (!used) {
      used = true; // before the put, which the thread that runs the call sees after it
    }
    attempts.put(call, attempt);
  }

  Attempt get(Call call) {
    return used ? attempts.get(call) : null;
  }

  Attempt remove(Call call) {
    return attempts.remove(call);
  }

  int size() {
    return attempts.size();
  }
}
