package dev.retryagent.internal.jdk;

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
 * limit, or one that did not finish sending, cannot be sent again.
 */
final class ReplayableBody {
  /** JDK publishers that produce the same bytes on every subscription. */
  private static final Set<String> REPLAYABLE =
      Set.of(
          "jdk.internal.net.http.RequestPublishers$ByteArrayPublisher",
          "jdk.internal.net.http.RequestPublishers$StringPublisher",
          "jdk.internal.net.http.RequestPublishers$EmptyPublisher",
          "jdk.internal.net.http.RequestPublishers$FilePublisher");

  private final BodyPublisher original;
  private final Tee tee;
  private BodyPublisher replay;

  private ReplayableBody(BodyPublisher original, Tee tee) {
    this.original = original;
    this.tee = tee;
  }

  /** Null publisher = a request without body. */
  static ReplayableBody of(BodyPublisher publisher, long limit) {
    if (publisher == null || isReplayable(publisher)) {
      return new ReplayableBody(publisher, null);
    }
    return new ReplayableBody(publisher, new Tee(publisher, limit));
  }

  static boolean isReplayable(BodyPublisher p) {
    return p instanceof BufferedPublisher || REPLAYABLE.contains(p.getClass().getName());
  }

  /** True when this body was teed (so requests must carry the tee, not the original). */
  boolean isTeed() {
    return tee != null;
  }

  /** The publisher for the next attempt, or null for a request without body. */
  synchronized BodyPublisher next() {
    if (tee == null) {
      return original;
    }
    if (replay != null) {
      return replay;
    }
    switch (tee.state()) {
      case UNTOUCHED:
        return tee;
      case COMPLETE:
        replay = new BufferedPublisher(tee.copy(), tee.declaredUnknownLength());
        return replay;
      default:
        throw new IllegalStateException("body cannot be sent again");
    }
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
    private State state = State.UNTOUCHED;
    private List<byte[]> chunks = new ArrayList<>();
    private long kept;
    private boolean unknownLength; // the length the source declared as it was last subscribed
    private int subscription; // how many times the source was subscribed: the copy is the last's

    Tee(BodyPublisher source, long limit) {
      this.source = source;
      this.limit = limit;
    }

    synchronized State state() {
      return state;
    }

    synchronized List<byte[]> copy() {
      return new ArrayList<>(chunks);
    }

    /** The source declared no length ({@code contentLength() < 0}) for the copy kept. */
    synchronized boolean declaredUnknownLength() {
      return unknownLength;
    }

    @Override
    public long contentLength() {
      return source.contentLength();
    }

    @Override
    public void subscribe(Flow.Subscriber<? super ByteBuffer> subscriber) {
      int n;
      synchronized (this) {
        // The client may subscribe again within one attempt (a 307 or 308, the JDK's own resend
        // on a new connection); each subscription starts a fresh copy.
        chunks = new ArrayList<>();
        kept = 0;
        long declared = source.contentLength();
        unknownLength = declared < 0;
        state = declared > limit ? State.TOO_LARGE : State.SENDING;
        n = ++subscription;
      }
      source.subscribe(new Capture(subscriber, n));
    }

    /**
     * A buffer the source sent on subscription {@code from}. What an earlier subscription sends
     * late (a publisher may send after the client cancelled it, as it went on to the next) is not
     * the body the copy is of: it is the client's to ignore, and left out of the copy.
     */
    private synchronized void keep(int from, ByteBuffer buffer) {
      if (from != subscription || state != State.SENDING) {
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
    private synchronized void finished(int from, boolean ok) {
      if (from == subscription && state == State.SENDING) {
        state = ok ? State.COMPLETE : State.FAILED;
      }
    }

    private final class Capture implements Flow.Subscriber<ByteBuffer> {
      private final Flow.Subscriber<? super ByteBuffer> downstream;
      private final int subscription;

      Capture(Flow.Subscriber<? super ByteBuffer> downstream, int subscription) {
        this.downstream = downstream;
        this.subscription = subscription;
      }

      @Override
      public void onSubscribe(Flow.Subscription subscription) {
        downstream.onSubscribe(subscription);
      }

      @Override
      public void onNext(ByteBuffer item) {
        keep(subscription, item);
        downstream.onNext(item);
      }

      @Override
      public void onError(Throwable throwable) {
        finished(subscription, false);
        downstream.onError(throwable);
      }

      @Override
      public void onComplete() {
        finished(subscription, true);
        downstream.onComplete();
      }
    }
  }
}
