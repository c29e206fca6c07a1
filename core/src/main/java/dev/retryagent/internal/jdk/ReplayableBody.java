package dev.retryagent.internal.jdk;

import dev.retryagent.engine.RetryCall;
import java.net.http.HttpRequest;
import java.net.http.HttpRequest.BodyPublisher;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.Flow;

/**
 * The body of one call, across attempts. Bodies the JDK can produce again (bytes, strings, files,
 * no body) are simply reused. Any other publisher (an input stream, a user's {@code
 * Flow.Publisher}, an iterable that may be one-shot) is teed: while the first attempt sends it, up
 * to {@code limit} bytes are kept, and a later attempt sends that copy. A body larger than the
 * limit, or one that did not finish sending, cannot be sent again. A file the JDK reads again
 * itself is watched, not teed: its failure (deleted, unreadable) is the application's ({@link
 * Watched}).
 */
final class ReplayableBody {
  /**
   * The one of the JDK's replayable publishers that reads something that can fail on its own: a
   * file.
   */
  private static final String FILE = "jdk.internal.net.http.RequestPublishers$FilePublisher";

  /** JDK publishers that produce the same bytes on every subscription. */
  private static final Set<String> REPLAYABLE =
      Set.of(
          "jdk.internal.net.http.RequestPublishers$ByteArrayPublisher",
          "jdk.internal.net.http.RequestPublishers$StringPublisher",
          "jdk.internal.net.http.RequestPublishers$EmptyPublisher",
          FILE);

  private final BodyPublisher original; // when not teed: the application's, or our watch of it
  private final Tee tee;
  private final boolean ours; // original is ours (a watch): attempts carry it, not the request's
  private BodyPublisher replay;

  private ReplayableBody(BodyPublisher original, Tee tee, boolean ours) {
    this.original = original;
    this.tee = tee;
    this.ours = ours;
  }

  /** Null publisher = a request without body. */
  static ReplayableBody of(BodyPublisher publisher, long limit) {
    return of(publisher, limit, null);
  }

  /**
   * {@link #of(BodyPublisher, long)}, telling {@code call} (when not null) of a failure the
   * publisher signals itself ({@link RetryCall#applicationFailed}).
   */
  static ReplayableBody of(BodyPublisher publisher, long limit, RetryCall call) {
    if (publisher != null && call != null && FILE.equals(publisher.getClass().getName())) {
      return new ReplayableBody(new Watched(publisher, call), null, true);
    }
    if (publisher == null || isReplayable(publisher)) {
      return new ReplayableBody(publisher, null, false);
    }
    return new ReplayableBody(publisher, new Tee(publisher, limit, call), true);
  }

  static boolean isReplayable(BodyPublisher p) {
    return p instanceof BufferedPublisher || REPLAYABLE.contains(p.getClass().getName());
  }

  /**
   * True when the JDK produces {@code p} again from memory, and nothing in it can fail: the call
   * sends it as it is, with nothing of ours (no object per call). A file can fail ({@link
   * Watched}).
   */
  static boolean needsNothing(BodyPublisher p) {
    return isReplayable(p) && !FILE.equals(p.getClass().getName());
  }

  /**
   * True when the attempts send a publisher of ours (a tee, a watch), so requests must carry it,
   * not the original.
   */
  boolean isTeed() {
    return ours;
  }

  /** The publisher for the next attempt, or null for a request without body. */
  synchronized BodyPublisher next() {
    if (tee == null) {
      return original;
    }
    if (replay != null) {
      return replay;
    }
    BodyPublisher p = tee.forAttempt();
    if (p == null) {
      throw new IllegalStateException("body cannot be sent again");
    }
    if (p != tee) {
      replay = p;
    }
    return p;
  }

  /**
   * The call is over ({@code JdkRequest.loopEnded}): no attempt sends the copy again. The JDK's
   * response keeps the last attempt's request, and so its publisher (the tee, a watch), for as long
   * as the application keeps the response, and the caller's future keeps this body through the
   * call: the copy (up to {@code replayBodyLimit} bytes) and the call (its attempts' exceptions)
   * stayed reachable for that long, where without the agent the response keeps only the
   * application's publisher. The copy is dropped and the call let go; a subscription still
   * delivering (the last attempt's body still being sent as its response came: HTTP/2, {@code
   * expectContinue}) goes on from the source as before, nothing kept of it. A replay already made
   * is left: it is the body the last attempt sent, which its response holds anyway.
   */
  void callEnded() {
    Tee t = tee;
    if (t != null) {
      t.release();
    }
    if (original instanceof Watched) {
      ((Watched) original).call = null;
    }
  }

  /**
   * Run, when set, as a retry's body is about to be fixed ({@link #fixForRetry}), before the tee is
   * asked: a failure of the source signalled here lands where it once landed between the tee's
   * state being read and its copy being taken. Tests only; null otherwise.
   */
  static volatile Runnable beforeFixForTests;

  /**
   * Asked once a retry's wait is over, before its attempt: true when the retry can send the body,
   * which is then fixed for it (a response that cannot be given back fixed it earlier: {@link
   * #fixEarly}). A copy whose completion is not settled yet (its source still inside the {@code
   * request} it completed in, after a whole attempt and its wait: stalled before a throw that may
   * follow) is not taken: false. A copy complete now is made the replay here, so that a failure the
   * source signals later on its old subscription (one that breaks Flow's rules by failing after it
   * completed, or the JDK's {@code PullPublisher} throwing just after its completion: {@link
   * Tee#failed}) changes neither the body the retry sends nor how its attempt is judged ({@link
   * Capture#sourceFailed}). False when the copy was found not whole after the retry was decided:
   * the retry is not made, and the call ends with the attempt before it (RetryCall's
   * bodyStillSendable); before, {@link #next()} threw an exception of ours at the caller. Never
   * throws. The copy is taken, and the tee retired, in one step under the tee's lock ({@link
   * Tee#forAttempt}): a failure comes wholly before it (false) or is ignored after it. Before, the
   * state was read, the lock let go, then read again and the copy taken: a failure between the
   * reads made next() throw out of here (the caller got our IllegalStateException, the call never
   * ended), and one between the read and the copy gave the retry the emptied copy, sent as a whole
   * 0-byte body.
   */
  synchronized boolean fixForRetry() {
    if (tee == null || replay != null) {
      return true;
    }
    Runnable hook = beforeFixForTests;
    if (hook != null) {
      hook.run();
    }
    BodyPublisher p = tee.forAttempt();
    if (p != null && p != tee) {
      replay = p;
    }
    return p != null;
  }

  /**
   * The retried response is about to be let go for good (it cannot be given back: JdkRequest's head
   * check, DiscardedBody): a copy whose completion is settled is fixed for the retry now, so that a
   * source failure during the wait (a source that fails after it completed, breaking Flow's rules)
   * no longer leaves the call nothing but the engine's IOException where without the agent it has
   * the response. A completion not yet settled (signalled inside a {@code request} of the source's
   * that has not returned: the JDK's {@code PullPublisher} completes and then throws from there,
   * its copy possibly cut, {@link Tee#failed}) is not taken. False when the copy is found not whole
   * now, and when its completion is not settled: the call can still end with the response
   * (JdkRequest's head check then asks the check after the wait at once, which refuses such a copy
   * too). Before, a completion not settled counted as fixable there: the retry went ahead, the
   * response was read away, and a throw of the source's that followed left the call nothing but the
   * engine's IOException where without the agent it has the response; at worst now a retry is not
   * made. Never throws.
   */
  synchronized boolean fixEarly() {
    if (tee == null || replay != null) {
      return true;
    }
    BodyPublisher p = tee.forAttemptIfSettled();
    if (p != null) {
      replay = p;
      return true;
    }
    return tee.state() == Tee.State.UNTOUCHED;
  }

  /**
   * Whether {@link #fixEarly} may still be false: a tee whose copy is not fixed yet. A file (read
   * again from disk) and a body of memory are always fixed.
   */
  synchronized boolean canFailToFix() {
    return tee != null && replay == null;
  }

  /** Whether {@link #next()} can produce the body again now. */
  synchronized boolean canSendAgain() {
    if (tee == null || replay != null) {
      return true;
    }
    Tee.State s = tee.state();
    return s == Tee.State.UNTOUCHED || s == Tee.State.COMPLETE;
  }

  /**
   * Sends a copy kept in memory; replayable. Its length is declared as the original's was: a body
   * the original sent without a known length (chunked on HTTP/1.1) is sent so again, not with the
   * {@code Content-Length} of the copy, a framing the application's request never had.
   */
  static final class BufferedPublisher implements BodyPublisher {
    private final List<byte[]> chunks;
    private final long length;
    private final BodyPublisher delegate;

    BufferedPublisher(List<byte[]> chunks, boolean unknownLength) {
      this.chunks = chunks;
      long n = 0;
      for (byte[] c : chunks) {
        n += c.length;
      }
      this.length = unknownLength ? -1 : n;
      this.delegate = HttpRequest.BodyPublishers.ofByteArrays(chunks);
    }

    @Override
    public long contentLength() {
      return length;
    }

    @Override
    public void subscribe(Flow.Subscriber<? super ByteBuffer> subscriber) {
      delegate.subscribe(subscriber);
    }
  }

  /**
   * The JDK's publisher of a file, passed through as it is (the JDK reads the file again for each
   * attempt, nothing is kept), but watched ({@link Capture}): the file deleted or unreadable since
   * the application made the publisher (between attempts too), or its read failing, is the
   * application's, as the failure of a streamed body is. Without it, the JDK's {@code
   * FileNotFoundException} counted as the host's failure.
   */
  static final class Watched implements BodyPublisher {
    private final BodyPublisher source;
    // Told of the source's failure; null once the call is over (ReplayableBody#callEnded).
    // Volatile: the call ends on another thread than the JDK's that subscribes.
    volatile RetryCall call;
    private final Length length = new Length();

    Watched(BodyPublisher source, RetryCall call) {
      this.source = source;
      this.call = call;
    }

    @Override
    public long contentLength() {
      return length.declared(source.contentLength());
    }

    @Override
    public void subscribe(Flow.Subscriber<? super ByteBuffer> subscriber) {
      subscribeWatched(source, new Capture(subscriber, null, 0, call, length));
    }
  }

  /**
   * Whether the body, as last sent, delivered other than the length the JDK was told: the JDK fails
   * the attempt for it then ({@link #wrongLength(Throwable)}).
   */
  boolean deliveredWrongLength() {
    Length length = length();
    return length != null && length.wrong;
  }

  /**
   * Whether the body, as last sent, delivered its whole declared length before the bytes past it
   * ({@link #deliveredWrongLength}): the JDK sent that whole request before it refused the rest.
   */
  boolean deliveredWholeThenMore() {
    Length length = length();
    return length != null && length.wrong && length.wholeFirst;
  }

  /**
   * Whether the body's source, as last subscribed, failed on its own ({@link Capture}): the JDK
   * then cancels the exchange, and whatever the attempt fails with is the application's failure's
   * consequence, even when it is not the source's exception (the JDK's "header parser received no
   * bytes", its "Too few bytes returned by the publisher" for a source that completed short and
   * then threw, as the JDK's own {@code ofInputStream} can: {@link Tee#failed}).
   */
  boolean sourceFailed() {
    Length length = length();
    return length != null && length.sourceFailed;
  }

  /**
   * Whether the source, as last subscribed, completed its body (with its declared length, if it
   * declared one) before it failed: the JDK may have sent that whole (cut) request, which the host
   * may act on.
   */
  boolean sourceCompletedBeforeItFailed() {
    Length length = length();
    return length != null && length.sourceFailed && length.completedFirst;
  }

  private synchronized Length length() {
    if (replay != null) {
      // The attempts send the copy from memory now, of its own length, which nothing can fail:
      // what the tee's source did on an attempt already judged is not this attempt's.
      return null;
    }
    BodyPublisher p = tee != null ? tee : original;
    return p instanceof Tee ? ((Tee) p).length : p instanceof Watched ? ((Watched) p).length : null;
  }

  /**
   * The JDK's refusal, in {@code failure} or its first causes, of a body that delivered other than
   * the length it declared ({@code contentLength()}): fewer bytes ("Too few bytes returned by the
   * publisher", when it completes), or more ("Too many bytes in request body", on the buffer that
   * takes it past), over HTTP/1.1 and HTTP/2 alike (read in JDK 25's source, tested on 17 and 25,
   * HTTP/1.1); a synchronous send wraps it in an IOException of the same message. The application's
   * mistake, as a publisher's own failure: the subscriber between them sees the count, never the
   * JDK's exception, which it makes itself. Known by the count ({@link Length}); the message tells
   * that failure from another of the attempt's (a reset before the JDK got so far). Null when none.
   */
  static Throwable wrongLength(Throwable failure) {
    // The failure itself, or one of its first causes (a CompletionException's, say).
    Throwable t = failure;
    for (int depth = 0; t != null && depth < 8; depth++, t = t.getCause()) {
      String m = t.getMessage();
      if (t instanceof java.io.IOException
          && m != null
          && (m.contains("Too few bytes returned by the publisher")
              || m.contains("Too many bytes in request body"))) {
        return t;
      }
    }
    return null;
  }

  /**
   * The length a publisher of ours told the JDK ({@code contentLength()}), which the JDK holds its
   * body to, and whether what the source delivered on the last subscription disagreed with it.
   */
  static final class Length {
    // Volatile: the JDK asks the length, and the source delivers, on threads of its own; the
    // call's failure is judged on another.
    volatile long declared = -1;
    private volatile int last; // the last subscription's number
    private volatile boolean wrong;
    // The last subscription delivered its whole declared length before the buffer past it, which
    // the JDK refuses after it sent the whole request.
    private volatile boolean wholeFirst;

    /** The JDK was told {@code length}. */
    long declared(long length) {
      declared = length;
      return length;
    }

    // The last subscription's source failed (onError, or a throw out of subscribe or request);
    // completedFirst: it had completed before, with its declared length if it declared one.
    private volatile boolean sourceFailed;
    private volatile boolean completedFirst;

    /** A subscription starts (held to {@link #declared}): its number. */
    synchronized int subscribed() {
      wrong = false;
      wholeFirst = false;
      sourceFailed = false;
      completedFirst = false;
      return ++last;
    }

    /** Subscription {@code n}'s source failed; {@code completedFirst}: after it completed whole. */
    synchronized void failedIn(int n, boolean completedFirst) {
      if (n == last && !sourceFailed) {
        sourceFailed = true;
        this.completedFirst = completedFirst;
      }
    }

    /**
     * Subscription {@code n} delivered other than declared: said of the body only if it is the
     * last's (an earlier one, cancelled, may still deliver late).
     */
    synchronized void wrongIn(int n) {
      wrongIn(n, false);
    }

    /** As {@link #wrongIn(int)}; {@code wholeFirst}: it had delivered the whole length first. */
    synchronized void wrongIn(int n, boolean wholeFirst) {
      if (n == last && !wrong) {
        wrong = true;
        this.wholeFirst = wholeFirst;
      }
    }
  }

  /**
   * Subscribes {@code capture} to {@code source}: what {@code subscribe} itself throws, unless the
   * JDK's subscriber threw it, is the source's own failure (the JDK's {@code ofInputStream} throws
   * its supplier's exception from there, {@code ofByteArrays} its iterable's {@code iterator()}'s,
   * a publisher of the application's whatever it throws), with which the JDK fails the attempt.
   */
  static void subscribeWatched(BodyPublisher source, Capture capture) {
    try {
      source.subscribe(capture);
    } catch (Throwable e) {
      // Any throwable (an Error, a checked exception thrown undeclared): the JDK catches them all,
      // and fails the attempt with it. Rethrown as it came (nothing checked is declared here).
      if (e != capture.downstreamThrew) {
        capture.sourceFailed(e);
      }
      throw e;
    }
  }

  /** Passes a publisher through while keeping a bounded copy of what it sent. */
  static final class Tee implements BodyPublisher {
    enum State {
      UNTOUCHED,
      SENDING,
      COMPLETE,
      TOO_LARGE,
      FAILED
    }

    private final BodyPublisher source;
    private final long limit;
    // Told of the source's own failure; null: none, or the call is over (release). Volatile: the
    // call ends on another thread than the JDK's that subscribes.
    private volatile RetryCall call;
    private State state = State.UNTOUCHED;
    private List<byte[]> chunks = new ArrayList<>();
    private long kept;
    private boolean unknownLength; // the length the source declared as it was last subscribed
    private int subscription; // how many times the source was subscribed: the copy is the last's
    // The copy completed inside a request() of the source's that has not returned yet (Capture):
    // the JDK's PullPublisher completes there and then throws, its copy possibly cut.
    private boolean provisional;
    final Length length = new Length();

    Tee(BodyPublisher source, long limit, RetryCall call) {
      this.source = source;
      this.limit = limit;
      this.call = call;
    }

    synchronized State state() {
      return state;
    }

    // The copy was made the replay (forAttempt): no attempt sends the source again, and what its
    // subscriptions signal from then on is of attempts already judged. Guarded by this.
    private boolean retired;
    // The call is over (release): the copy is dropped, and nothing is kept again. Guarded by this.
    private boolean released;

    /**
     * The call is over ({@link ReplayableBody#callEnded}): the copy is dropped and the call let go,
     * and nothing is kept from here on (a late buffer of a subscription still delivering goes to
     * the JDK, not into a copy). Not retired: a subscription still delivering (the caller left as
     * the attempt went on) still tells its failure as before ({@link #failed}; its Capture keeps
     * the call for as long as the JDK keeps it). The state is kept, for what may still ask it; a
     * copy no longer kept is never given out ({@link #forAttempt}).
     */
    synchronized void release() {
      released = true;
      chunks = null;
      kept = 0;
      call = null;
    }

    /**
     * What the next attempt sends: this tee while the source was never subscribed; once the copy is
     * complete, a replay of it, the tee retired in the same step (a failure of the source is then
     * ignored: {@link #failed}); null when the copy is not whole (too large, failed, still
     * sending). One step under the lock: a failure of the source lands wholly before or after it.
     */
    synchronized BodyPublisher forAttempt() {
      switch (state) {
        case UNTOUCHED:
          return this;
        case COMPLETE:
          if (provisional || released) {
            // Still inside the request() it completed in, after a whole attempt and its wait: a
            // source stalled between its completion and a throw that may follow (PullPublisher).
            // The retry is not made (as without the agent), rather than send a copy maybe cut.
            // Released: the copy is dropped (the call is over), and a copy is never given out.
            return null;
          }
          retired = true;
          return new BufferedPublisher(new ArrayList<>(chunks), unknownLength);
        default:
          return null;
      }
    }

    /**
     * {@link #forAttempt}'s replay when the copy is complete and settled; null, nothing changed,
     * otherwise (the tee itself is never returned).
     */
    synchronized BodyPublisher forAttemptIfSettled() {
      return state == State.COMPLETE && !provisional ? forAttempt() : null;
    }

    /**
     * The request()s of subscription {@code from} have all returned normally: a completion that
     * came in one is settled. Called under the Capture's lock (the lock order is Capture, then Tee;
     * nothing of the Tee's calls into a Capture).
     */
    void settled(int from) {
      Runnable hook = beforeSettledForTests;
      if (hook != null) {
        hook.run();
      }
      synchronized (this) {
        if (from == subscription) {
          provisional = false;
        }
      }
    }

    /**
     * Run, when set, as a source's request()s have all returned, before the tee's lock is taken to
     * settle its copy ({@link #settled}); and as a completion is told, before the tee's lock is
     * taken to record it ({@link #finished}). Tests only (a thread held there); null otherwise.
     */
    static volatile Runnable beforeSettledForTests;

    static volatile Runnable beforeFinishedForTests;

    @Override
    public long contentLength() {
      return length.declared(source.contentLength());
    }

    @Override
    public void subscribe(Flow.Subscriber<? super ByteBuffer> subscriber) {
      int n;
      // The application's code, asked before the lock: a publisher whose contentLength() waits for
      // its own thread, which signals an earlier subscription late (keep, finished: this lock),
      // would otherwise hang with it.
      long declared = source.contentLength();
      synchronized (this) {
        if (!released) {
          // The client may subscribe again within one attempt (a 307 or 308, the JDK's own resend
          // on a new connection); each subscription starts a fresh copy.
          chunks = new ArrayList<>();
          kept = 0;
          unknownLength = declared < 0;
          state = declared > limit ? State.TOO_LARGE : State.SENDING;
          provisional = false;
        }
        n = ++subscription;
      }
      subscribeWatched(source, new Capture(subscriber, this, n, call, length));
    }

    /**
     * A buffer the source sent on subscription {@code from}. What an earlier subscription sends
     * late (a publisher may send after the client cancelled it, as it went on to the next) is not
     * the body the copy is of: it is the client's to ignore, and left out of the copy.
     */
    private synchronized void keep(int from, ByteBuffer buffer) {
      if (released || from != subscription || state != State.SENDING) {
        return;
      }
      int n = buffer.remaining();
      if (kept + n > limit) {
        state = State.TOO_LARGE;
        chunks = new ArrayList<>();
        return;
      }
      byte[] copy = new byte[n];
      buffer.duplicate().get(copy);
      chunks.add(copy);
      kept += n;
    }

    /**
     * Subscription {@code from} ended: the copy is complete only if it is the last's ({@link
     * #keep}).
     */
    private void finished(int from, boolean ok, boolean inRequest) {
      Runnable hook = beforeFinishedForTests;
      if (hook != null) {
        hook.run();
      }
      synchronized (this) {
        if (from == subscription && state == State.SENDING) {
          state = ok ? State.COMPLETE : State.FAILED;
          provisional = ok && inRequest;
        }
      }
    }

    /**
     * The source of subscription {@code from} failed: its copy is not the application's body, even
     * if the source had completed it first. The JDK's own {@code ofInputStream} does that: when its
     * stream fails as another request comes in, {@code PullPublisher} re-runs, finds the failed
     * stream "ended", completes, and then throws the failure out of {@code request} (read in JDK
     * 25's source). The JDK then sends the cut body as a whole request and fails the attempt, often
     * with a failure of its own ("header parser received no bytes"); a copy kept as complete was
     * sent again by a retry. Told before the JDK hears of the failure, so before the attempt ends
     * and before any retry takes the copy ({@link ReplayableBody#next}). False, and nothing done,
     * once the tee is retired ({@link #forAttempt}): the failure is not the call's. Read under the
     * same lock as the retirement, so a retry fixing the body as the source fails sees one order.
     */
    synchronized boolean failed(int from) {
      if (retired) {
        return false;
      }
      if (from == subscription && (state == State.SENDING || state == State.COMPLETE)) {
        state = State.FAILED;
        if (!released) {
          chunks = new ArrayList<>();
        }
      }
      return true;
    }
  }

  /**
   * Between the source and the JDK's subscriber, both ways: it keeps the copy (for a tee), and
   * tells the call of the source's own failure, which the source signals ({@code onError}) or
   * throws from its subscription's {@code request} (the JDK's {@code ofInputStream} does when the
   * stream fails as it looks for more after a buffer: an {@code UncheckedIOException}, with which
   * the JDK fails the attempt) or from {@code subscribe} ({@link #subscribeWatched}). Either is the
   * application's mistake, not the host's failure, and the call hears of it before the JDK does
   * ({@link RetryCall#applicationFailed}).
   */
  static final class Capture implements Flow.Subscriber<ByteBuffer>, Flow.Subscription {
    private final Flow.Subscriber<? super ByteBuffer> downstream;
    private final Tee tee; // null: a watch, nothing kept
    private final int subscription;
    private final RetryCall call; // told of the source's own failure; null: none
    private final Length length; // of the publisher of ours this subscription is of
    // The length the JDK holds this subscription to (-1: none), and the bytes delivered so far:
    // signals come one at a time (Flow's rule), so a plain field.
    private final long declared;
    private final int counted; // this subscription's number for length
    private long delivered;
    // The source completed, with its declared length if any, before it failed (Tee#failed): the
    // JDK may have sent that whole (cut) request. Volatile: a source's throw out of request may
    // follow its completion on another thread.
    private volatile boolean completedWhole;
    private volatile Flow.Subscription upstream;
    // What the JDK's subscriber threw from a signal passed to it: its own, not the source's.
    private volatile Throwable downstreamThrew;
    // How many request() calls to the source are in progress (nested, or on other threads): a
    // completion signalled inside one is settled only once they all returned normally. Counted
    // only for a tee (a watch keeps no copy to settle). Guarded by lock, as are the settling of the
    // copy and the recording of a completion with what it read here: each is one step with the
    // count, so no completion is settled by a request() that returned before it came in, nor
    // recorded provisional after the last request() has returned and settled.
    private int requesting;
    // A lock of our own, not this: this is the Subscriber handed to the application's publisher,
    // which may lock it (to make its signals serial, say) as it signals from its own thread; the
    // JDK's request() then waited for the application's monitor, and hung for good if the
    // publisher held it until that request reached it.
    private final Object lock = new Object();

    Capture(
        Flow.Subscriber<? super ByteBuffer> downstream,
        Tee tee,
        int subscription,
        RetryCall call,
        Length length) {
      this.downstream = downstream;
      this.tee = tee;
      this.subscription = subscription;
      this.call = call;
      this.length = length;
      this.declared = length.declared;
      this.counted = length.subscribed();
    }

    @Override
    public void onSubscribe(Flow.Subscription subscription) {
      upstream = subscription;
      try {
        downstream.onSubscribe(this);
      } catch (RuntimeException | Error e) {
        downstreamThrew = e; // thrown on out of the source's subscribe: the JDK's own
        throw e;
      }
    }

    @Override
    public void request(long n) {
      if (tee == null) {
        // A watch (a file): nothing kept, nothing to settle; no lock per buffer for a count.
        requestUpstream(n);
        return;
      }
      synchronized (lock) {
        requesting++;
      }
      try {
        requestUpstream(n);
      } finally {
        // The count and the settling in one step (a failure thrown above marked the copy failed
        // first). Before, the lock was let go between them: a request() on another thread could
        // begin, complete the copy inside it (provisional) and stall before its throw, and this
        // one's late settling made that completion settled: the copy was taken as the response
        // was let go, the throw ignored, and the retry sent the cut body as a whole one.
        synchronized (lock) {
          if (--requesting == 0) {
            tee.settled(subscription);
          }
        }
      }
    }

    /**
     * The source's {@code request(n)}; what it throws is the source's failure (any throwable, as
     * from subscribe in subscribeWatched: an Error, an undeclared IOException was the host's
     * failure, and told the breaker so), unless it is the client's own, thrown on through it.
     */
    private void requestUpstream(long n) {
      try {
        upstream.request(n);
      } catch (Throwable e) {
        if (e != downstreamThrew) {
          sourceFailed(e);
        }
        throw e;
      }
    }

    @Override
    public void cancel() {
      upstream.cancel();
    }

    @Override
    public void onNext(ByteBuffer item) {
      if (tee != null) {
        tee.keep(subscription, item);
      }
      if (declared >= 0) {
        long before = delivered;
        delivered += item.remaining();
        if (delivered > declared) {
          // The JDK refuses the buffer that takes the body past its length, after it sent what came
          // before: a whole request when that was the whole length.
          length.wrongIn(counted, before == declared);
        }
      }
      try {
        downstream.onNext(item);
      } catch (RuntimeException | Error e) {
        downstreamThrew = e;
        throw e;
      }
    }

    @Override
    public void onError(Throwable throwable) {
      sourceFailed(throwable);
      try {
        downstream.onError(throwable);
      } catch (RuntimeException | Error e) {
        downstreamThrew = e;
        throw e;
      }
    }

    @Override
    public void onComplete() {
      boolean whole = declared < 0 || delivered == declared;
      completedWhole = whole;
      if (!whole) {
        length.wrongIn(counted); // the JDK refuses a body that ends short of its length (or past)
      }
      if (tee != null) {
        // A copy of other than the declared length is not the application's body: a retry of a
        // failure that came before the JDK's refusal (a reset) must not send it, with its own
        // length, as if it were.
        // Read and recorded in one step with the count: before, a request() on another thread
        // could return and settle between the read and the record (an asynchronous source
        // completing on its own thread), and the completion stayed provisional for good: the
        // retry was decided and waited, then not made.
        synchronized (lock) {
          tee.finished(subscription, whole, requesting > 0);
        }
      }
      try {
        downstream.onComplete();
      } catch (RuntimeException | Error e) {
        downstreamThrew = e;
        throw e;
      }
    }

    void sourceFailed(Throwable failure) {
      if (tee != null && !tee.failed(subscription)) {
        // A failure signalled after the copy was made the replay, by a subscription whose attempt
        // was judged already (a source that fails long after it completed, breaking Flow's rules):
        // it reaches the JDK's subscriber as it came, but is not the attempt now sent's failure,
        // nor the call's, and the replay stays as it was made. Decided with the tee's marking in
        // one step (Tee#failed): before, an unlocked read of the retirement could let a failure
        // through just as the retry fixed its body.
        return;
      }
      // Whatever this attempt then fails with is the consequence (ReplayableBody#sourceFailed).
      length.failedIn(counted, completedWhole);
      if (call != null) {
        try {
          call.applicationFailed(failure);
        } catch (RuntimeException bug) {
          // the failure still reaches the JDK, and the engine judges it as before
        }
      }
    }
  }
}
