package dev.retryagent.okhttp;

import dev.retryagent.engine.RetryCall;
import dev.retryagent.engine.RetryEngine;
import java.lang.ref.WeakReference;
import java.util.Collections;
import java.util.Map;
import java.util.Objects;
import java.util.WeakHashMap;
import java.util.concurrent.ConcurrentHashMap;
import okhttp3.Call;
import okhttp3.Callback;
import okhttp3.Dispatcher;

/**
 * Runs {@code enqueue}d OkHttp calls with retries without holding a dispatcher thread or a per-host
 * slot while a retry waits: the first attempt is the call itself; after a retryable outcome, its
 * response is closed and, once the delay has passed on the engine's scheduler, a {@link
 * Call#clone() clone} of the call is enqueued, bounded by the original call's own {@code
 * callTimeout}. The caller's callback is told once, with the original call, about the final
 * response or failure, where OkHttp itself would tell it: on a dispatcher thread, from OkHttp's run
 * of the last attempt, with OkHttp's own exceptions.
 *
 * <p>The agent routes {@code Call.enqueue}, {@code Call.cancel} and {@code Dispatcher.cancelAll}
 * here. Code that wires retries by hand calls {@link #enqueue} instead of {@code call.enqueue}, and
 * should call {@link #cancel} with {@code call.cancel()} and {@link #cancelAll} with {@code
 * dispatcher.cancelAll()}: otherwise a call cancelled while it waits for a retry hears of it only
 * when the wait is over (and no retry is made). The {@link #interceptor()} must be on the client,
 * last among the application interceptors, so that each attempt of a managed call is made exactly
 * once. Thread-safe; one per engine is enough.
 */
public final class AsyncRetrier {
  /** How an attempt is enqueued; the agent passes one that is not intercepted again. */
  @FunctionalInterface
  public interface Enqueuer {
    void enqueue(Call call, Callback callback);
  }

  private final RetryEngine engine;
  private final Enqueuer enqueuer;
  private final ManagedAttempts attempts;
  private final RetryInterceptor interceptor;
  private final ConcurrentHashMap<Call, EnqueuedCall> running = new ConcurrentHashMap<>();

  /**
   * For each call whose response came from a clone: that clone, so that the call's {@code cancel()}
   * still reaches the exchange the application holds (a response body being read, a WebSocket).
   * Weak keys, and weak values: what the application holds of that exchange holds the clone (the
   * response's exchange, the WebSocket), and once it lets go there is nothing left to cancel. A
   * strong value kept the clone, with its request and its attempt's connection state, as long as
   * the call, and after that until the map's next use (only a use drops a stale entry): ~1.5 KiB a
   * call after a burst of retried calls (docs/BENCHMARKS.md, issue 13, twelfth pass).
   */
  private final Map<Call, WeakReference<Call>> delivered =
      Collections.synchronizedMap(new WeakHashMap<>());

  /**
   * For each call waiting to retry: the outcome of the attempt before the wait, which the call ends
   * with if the retry is not made (the wait ended past its deadline, {@link
   * EnqueuedCall#retryAfterWait}; the application shut the dispatcher's executor down meanwhile): a
   * copy of the response released for the retry ({@code ResponseAccess.copyToGiveBack}), or the
   * attempt's failure. Here rather than in a field of {@link EnqueuedCall}: only a call waiting to
   * retry holds one, and the object every call makes stays as small as it was (issue 13). Removed
   * when the wait ends, or with the call.
   */
  private final ConcurrentHashMap<EnqueuedCall, Object> giveBacks;

  /**
   * Set before the first outcome is kept in {@link #giveBacks}, never cleared: until then a call's
   * end looks at nothing more (no hash of it). Not the map's {@code isEmpty()}, which can answer
   * empty for a map holding the call's outcome while other calls' are put and taken meanwhile
   * ({@link ManagedAttempts}): the wait's end then went on without it (a retry the rate limit
   * refused ended with its exception, not the response kept), and a call that ended during its wait
   * left it behind (a response kept unreleased: its connection never given back).
   */
  private volatile boolean anyGiveBack;

  /** As {@link #anyGiveBack}, for {@link #callTimeouts}. */
  private volatile boolean anyCallTimeout;

  /**
   * Enqueues each attempt with {@code enqueuer}.
   *
   * @throws NullPointerException when an argument is null
   */
  public AsyncRetrier(RetryEngine engine, Enqueuer enqueuer) {
    this(
        engine,
        enqueuer,
        new ManagedAttempts(),
        new ConcurrentHashMap<>(),
        new ConcurrentHashMap<>());
  }

  /** Test only: what is kept for calls, in these. */
  AsyncRetrier(
      RetryEngine engine,
      Enqueuer enqueuer,
      ManagedAttempts attempts,
      ConcurrentHashMap<EnqueuedCall, Object> giveBacks,
      ConcurrentHashMap<EnqueuedCall, EnqueuedCall.WaitTimeout> callTimeouts) {
    this.engine = Objects.requireNonNull(engine, "engine");
    this.enqueuer = Objects.requireNonNull(enqueuer, "enqueuer");
    this.attempts = attempts;
    this.giveBacks = giveBacks;
    this.callTimeouts = callTimeouts;
    this.interceptor = new RetryInterceptor(engine, attempts);
  }

  /** Enqueues with {@link Call#enqueue}. */
  public AsyncRetrier(RetryEngine engine) {
    this(engine, Call::enqueue);
  }

  /** The interceptor that must be on every client whose calls come here. */
  public RetryInterceptor interceptor() {
    return interceptor;
  }

  /** True for callbacks this class gave OkHttp (so they are not wrapped again). */
  public static boolean isAttemptCallback(Object callback) {
    return callback instanceof EnqueuedCall.AttemptCallback;
  }

  /** True when {@code call} is an attempt of a call that runs here. */
  public boolean manages(Call call) {
    return attempts.get(call) != null;
  }

  /** {@link #enqueue(Call, Callback, Dispatcher)} for a call whose dispatcher is not known. */
  public void enqueue(Call call, Callback callback) {
    enqueue(call, callback, null);
  }

  /**
   * Runs {@code call} asynchronously with retries; {@code callback} hears about the final outcome
   * once, on an OkHttp dispatcher thread, as OkHttp would tell it.
   *
   * @param dispatcher the call's client's dispatcher, for {@link #cancelAll}; null if unknown
   * @throws IllegalStateException when the call was already executed, as {@code Call.enqueue} does
   */
  public void enqueue(Call call, Callback callback, Dispatcher dispatcher) {
    Objects.requireNonNull(callback, "callback");
    // Executed already: OkHttp throws "Already Executed" to the caller, and the call that runs is
    // left alone. Cache-only: answered by OkHttp's cache alone, there is nothing to govern. A
    // WebSocket's handshake on OkHttp before 3.14: see CALLS_HOLD_THEIR_STREAMS.
    if (call.isExecuted()
        || RetryInterceptor.cacheOnly(call.request())
        || (CALLS_HOLD_THEIR_STREAMS && isWebSocketHandshake(call.request()))) {
      enqueuer.enqueue(call, callback);
      return;
    }
    OkRequest info = new OkRequest(call.request());
    RetryCall retryCall = engine.newCall(info);
    if (retryCall.passThrough()) {
      enqueuer.enqueue(call, callback);
      return;
    }
    info.prepare(retryCall);
    EnqueuedCall c = new EnqueuedCall(this, engine, call, callback, dispatcher, retryCall, info);
    running.put(call, c);
    c.start();
  }

  /**
   * OkHttp before 3.14 (3.12): a call holds a {@code StreamAllocation}, and a WebSocket's handshake
   * callback takes the connection to upgrade from the call it is handed ({@code
   * Internal.instance.streamAllocation(call).connection()}). Retried here, the handshake's 101
   * comes from a clone, while the callback is handed the call itself, whose streams are the first
   * attempt's, released when its response was closed: the socket read a null connection (a
   * NullPointerException on the dispatcher thread) and its listener never heard of it. So such a
   * handshake is left to OkHttp's own {@code enqueue}: the interceptor retries it inside the call,
   * whose streams are then the last attempt's, holding a dispatcher thread and the host's slot
   * while the retry waits, as it does for a client wired without this class. Read once per OkHttp
   * copy.
   */
  private static final boolean CALLS_HOLD_THEIR_STREAMS = callsHoldTheirStreams();

  private static boolean callsHoldTheirStreams() {
    try {
      Class.forName(
          "okhttp3.internal.connection.StreamAllocation", false, Call.class.getClassLoader());
      return true;
    } catch (ClassNotFoundException | LinkageError | SecurityException e) {
      return false;
    }
  }

  /** The handshake OkHttp's {@code RealWebSocket} enqueues: {@code Upgrade: websocket}. */
  static boolean isWebSocketHandshake(okhttp3.Request request) {
    return "websocket".equalsIgnoreCase(request.header("Upgrade"));
  }

  /**
   * What {@code call.cancel()} must also do when {@code call} runs here: cancels the attempt in
   * flight (its failure then reaches the callback from OkHttp) or ends the wait for a retry
   * ("Canceled" reaches the callback from a dispatcher thread). For an attempt OkHttp cancelled
   * itself (its call timeout), cancels the call it belongs to; for a call whose response came from
   * a clone, cancels that clone.
   *
   * @return true when the call, or the attempt, runs (or ran) here
   */
  public boolean cancel(Call call) {
    EnqueuedCall c = running.get(call);
    if (c != null) {
      c.cancel();
      return true;
    }
    ManagedAttempts.Attempt a = attempts.get(call);
    if (a != null) {
      a.owner.attemptCancelled(call);
      return true;
    }
    WeakReference<Call> clone = delivered.get(call);
    if (clone != null) {
      Call held = clone.get();
      if (held != null) {
        held.cancel();
      }
      return true;
    }
    return false;
  }

  /**
   * What {@code dispatcher.cancelAll()} must also do: cancels every call of that dispatcher that
   * runs here, the ones waiting for a retry (which the dispatcher does not hold) included.
   */
  public void cancelAll(Dispatcher dispatcher) {
    for (EnqueuedCall c : running.values()) {
      if (c.dispatcher == dispatcher) {
        c.original.cancel();
        // Without the agent's hook on cancel(), the line above does not reach it.
        c.cancel();
      }
    }
  }

  /** Calls whose retries run here right now. */
  public int running() {
    return running.size();
  }

  ManagedAttempts attempts() {
    return attempts;
  }

  Enqueuer enqueuer() {
    return enqueuer;
  }

  /** Returns what was kept for {@code c}'s wait, for the caller to release, or null. */
  Object finished(EnqueuedCall c) {
    running.remove(c.original, c);
    Object kept = null;
    if (anyGiveBack) {
      kept = giveBacks.remove(c); // a call that ended during its wait (a cancel)
    }
    if (anyCallTimeout) {
      EnqueuedCall.WaitTimeout t = callTimeouts.remove(c);
      if (t != null) {
        t.exit();
      }
    }
    return kept;
  }

  /**
   * For each call that waited for a retry and has a call timeout, until it ends: the watch that
   * ends it at that timeout should it still wait then ({@link EnqueuedCall.WaitTimeout}). Here, as
   * {@link #giveBacks}: only a retried call holds one.
   */
  private final ConcurrentHashMap<EnqueuedCall, EnqueuedCall.WaitTimeout> callTimeouts;

  /**
   * Watches {@code c}'s call timeout, ending at {@code deadlineNanoTime} ({@link System#nanoTime}),
   * unless it is watched already; under {@code c}'s lock, while it is not done, so that its end
   * ({@link #finished}) stops the watch.
   */
  void watchCallTimeout(EnqueuedCall c, long deadlineNanoTime) {
    if (callTimeouts.containsKey(c)) {
      return;
    }
    EnqueuedCall.WaitTimeout t = new EnqueuedCall.WaitTimeout(c);
    t.deadlineNanoTime(deadlineNanoTime);
    try {
      t.enter();
    } catch (RuntimeException | LinkageError e) {
      return; // an okio not known: the late wait's end looks at the timeout (pastCallTimeout)
    }
    if (!anyCallTimeout) {
      anyCallTimeout = true; // before the put, which the call's end sees after it
    }
    callTimeouts.put(c, t);
  }

  /**
   * Keeps {@code outcome} (a {@code Response} copy, the response itself kept unreleased, or an
   * {@code IOException}) for {@code c}'s wait; under {@code c}'s lock, while it is not done.
   */
  void keepGiveBack(EnqueuedCall c, Object outcome) {
    if (!anyGiveBack) {
      anyGiveBack = true; // before the put, which the wait's end and the call's end see after it
    }
    giveBacks.put(c, outcome);
  }

  /** The outcome kept for {@code c}'s wait, now over, or null. */
  Object takeGiveBack(EnqueuedCall c) {
    return anyGiveBack ? giveBacks.remove(c) : null;
  }

  void delivered(Call original, Call attempt) {
    if (attempt != original) {
      delivered.put(original, new WeakReference<>(attempt));
    }
  }
}
