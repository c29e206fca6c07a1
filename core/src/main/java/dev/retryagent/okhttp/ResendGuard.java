package dev.retryagent.okhttp;

import dev.retryagent.engine.Outcome;
import dev.retryagent.engine.RetryCall;
import dev.retryagent.policy.RetryPolicy;
import java.io.IOException;
import okhttp3.Call;
import okhttp3.MediaType;
import okhttp3.Request;
import okhttp3.RequestBody;
import okio.Buffer;
import okio.BufferedSink;
import okio.ForwardingSink;
import okio.Okio;
import okio.Sink;

/**
 * Keeps OkHttp from sending a request again by itself where the engine would not: its {@code
 * RetryAndFollowUpInterceptor} ({@code retryOnConnectionFailure}, on by default) resends a request
 * whose connection failed after it was written (a kept-alive connection the server had closed),
 * POST included, unless the request's body is one-shot. So the body of such an attempt is wrapped
 * ({@link Body}), and once a request of the attempt fails on its connection ({@link Resends}) it
 * says it is one-shot: OkHttp gives the failure back instead of resending, and the engine decides.
 * Before a failure it is an ordinary body, so redirects (307, 308) are followed as without the
 * agent.
 *
 * <p>The rule is the JDK's ({@code urlconnection.JdkResendRule}): never for a request the engine
 * would not repeat after a reset (a POST without key: OkHttp and the agent together never send it
 * twice); in observe mode, never guarded; otherwise only on the last attempt, so that {@code
 * maxAttempts} bounds what the server sees (earlier, OkHttp's resend counts as an attempt). A
 * request without a body (GET, HEAD, DELETE) cannot be guarded this way: OkHttp may resend one on
 * the last attempt, one request past {@code maxAttempts}. A stream the server refused unprocessed
 * (HTTP/2 {@code REFUSED_STREAM}) does not turn the body one-shot ({@link Resends#failed(Call,
 * IOException)}): OkHttp's resend of it repeats nothing the server acted on. Where nothing tells of
 * a failure (no network interceptor, no hook) the body learns of it from OkHttp's own question
 * ({@link Body#isOneShot}), which does not say which failure: a refused stream is then guarded too.
 *
 * <p>The same wrapper, unguarded, tells a failure of the application's body itself from the
 * connection's, and a body that wrote other than its length ({@link Body#writeTo}). The wrapper is
 * the application's to see below our interceptor: its network interceptors and {@code
 * EventListener} get it in place of its own body (a {@code FormBody} is then no longer one). So an
 * attempt's body is wrapped only where a decision needs it ({@link #guard}): guarded as above, or,
 * in enforce mode, a body that can fail by itself ({@link #watched}). A GET, any request in observe
 * mode, and a {@code FormBody} not guarded (a PUT, a keyed POST before the last attempt) go out as
 * the application gave them. A POST without key, and a body on the last attempt of a policy that
 * retries, stay wrapped: without the wrapper OkHttp would send them again by itself. The response's
 * {@code request()} is the application's either way ({@link RetryInterceptor#asCallers}); only its
 * {@code networkResponse().request()} keeps the wrapper, as it went on the wire.
 */
final class ResendGuard {
  private ResendGuard() {}

  /**
   * {@code attempt}, with its body guarded where OkHttp must not resend it, and watched for a
   * failure of its own ({@link Body#writeTo}) for {@code call} where that counts ({@link
   * #watched}); {@code attempt} itself, or with the application's body unwrapped, where neither is
   * needed. {@code sendsTold}: a network interceptor or the agent's hook tells the attempt's
   * requests ({@link Resends#told}); else the body's write is the only sign that one reached a
   * server.
   */
  static Request guard(Request attempt, RetryCall call, boolean sendsTold) {
    RequestBody body = attempt.body();
    if (body == null) {
      return attempt;
    }
    RequestBody own = body;
    if (body instanceof Body) {
      Body ours = (Body) body;
      if (ours.call == call) {
        return attempt;
      }
      // A request taken back from an earlier call's response (its network response carries the
      // attempt's request) and sent in this call: the application's body, watched for this call,
      // not for one long over that would ignore its failure (taken for the host's then).
      own = ours.delegate;
    }
    boolean guarded = !mayResend(call);
    if (!guarded && !watched(own, call, sendsTold)) {
      // Nothing the wrapper tells would change a decision: the application's body goes out as it
      // gave it, and its network interceptors and EventListener see its own (a FormBody).
      return own == body ? attempt : attempt.newBuilder().method(attempt.method(), own).build();
    }
    return attempt.newBuilder().method(attempt.method(), new Body(own, call, guarded)).build();
  }

  /**
   * Whether an unguarded {@code body} must still be watched for a failure of its own and for its
   * length ({@link Body#writeTo}). Not in observe mode, where nothing the application sees is
   * decided by it, and the wrapper would be all the application's network interceptors and {@code
   * EventListener} saw of its body: a body's own failure is then counted as the host's in what
   * observe mode reports, and in its breaker, which is observe mode's own (kept by mode), never the
   * one an enforcing configuration uses after a reload. Nor OkHttp's {@code FormBody}, which writes
   * its fields from memory into OkHttp's sink, the length it declared, and can fail only as that
   * sink fails. A body of the application's own class (a file, a stream) can fail by itself, which
   * must not count as the host's failure (the breaker, a retry). The byte bodies of {@code
   * RequestBody.create} are anonymous classes whose names differ from one OkHttp version to the
   * next (5.x names a file-descriptor body as 4.x names a byte array one): watched as the
   * application's. On a client wired by hand without the network interceptor ({@code sendsTold}
   * false), a {@code FormBody} is watched too, whatever its method: its write tells the call that a
   * request reached a server ({@link Body#written}), which a stricter rule reloaded during the wait
   * judges by (a PUT a reload makes unsafe as well as a keyed POST).
   */
  static boolean watched(RequestBody body, RetryCall call, boolean sendsTold) {
    if (call.observeOnly()) {
      return false;
    }
    return !(body instanceof okhttp3.FormBody) || !sendsTold;
  }

  /**
   * Whether OkHttp may send the attempt's request again by itself after a failed connection. The
   * rule for requests not safe to repeat is the one each retry of the engine's is judged by: the
   * call's own, or the one now in force when a reload since the call began (during a retry's wait)
   * made it stricter ({@link RetryCall#refusesRepeat}); OkHttp's resend counts as a retry. Judged
   * by the call's own policy alone, a POST begun under {@code unsafeMethods: always} whose retry
   * went out after a reload to {@code never} was still resent by OkHttp. The other keys ({@code
   * maxAttempts}) stay the call's own, as for the engine's retries.
   */
  static boolean mayResend(RetryCall call) {
    if (call.observeOnly()) {
      return true;
    }
    if (call.refusesRepeat(Outcome.RESET)) {
      return false;
    }
    RetryPolicy retry = call.policy().retry();
    if (!retry.enabled() || retry.maxAttempts() <= 1) {
      return true;
    }
    return call.attempt() < retry.maxAttempts();
  }

  /**
   * A body that turns one-shot once its request failed (when guarded), and tells its call of a
   * failure of the application's body itself.
   */
  static final class Body extends RequestBody {
    private final RequestBody delegate;
    private final RetryCall call;
    private final boolean guarded;
    private volatile boolean failed;
    // A network interceptor or the agent's hook saw a request with this body go out ({@link
    // Resends#sending}): it tells {@link #failed}. Never set on a client wired by hand without the
    // library's network interceptor, where nothing tells: see {@link #isOneShot}. Written and read
    // on the thread that runs the attempt.
    private boolean watched;
    // What contentLength() said last: OkHttp asks it as it makes the sink for the body, just
    // before writeTo, and holds the body to it (-1: no length, not held). Plain fields: asked,
    // written and judged on the thread that runs the attempt.
    private long declared = -1;
    // The last writeTo wrote other than declared ({@link #wroteWrongLength}).
    private boolean wrongLength;
    // writeTo ran: a request with this body reached a connection ({@link #written}).
    private boolean written;

    /** {@code guarded}: turns one-shot once its request failed. */
    Body(RequestBody delegate, RetryCall call, boolean guarded) {
      this.delegate = delegate;
      this.call = call;
      this.guarded = guarded;
    }

    /**
     * The attempt's request failed on its connection: from now on, this body is one-shot, if
     * guarded.
     */
    void failed() {
      failed = true;
    }

    /**
     * A request with this body is about to go out, and its failure will be told ({@link #failed}).
     */
    void watched() {
      watched = true;
    }

    @Override
    public MediaType contentType() {
      return delegate.contentType();
    }

    @Override
    public long contentLength() throws IOException {
      long length = delegate.contentLength();
      declared = length;
      return length;
    }

    /**
     * Whether OkHttp wrote this body to a connection during the attempt (a redirect that keeps the
     * method writes it again): the signal that a request reached a server where nothing else tells
     * ({@link Resends} not handed out). An application interceptor after ours that reads the body
     * itself (a logger) makes it say so too early: a failure to connect is then taken as one after
     * sending, and a request not safe to repeat is not retried (never one retry too many).
     */
    boolean written() {
      return written;
    }

    /**
     * Whether the body, written last, wrote more bytes than its {@code contentLength()} said, or
     * fewer by the end of its writeTo: OkHttp's own sink fails the request for it then (a {@code
     * ProtocolException}), the application's mistake ({@link RetryInterceptor#proceed}).
     */
    boolean wroteWrongLength() {
      return wrongLength;
    }

    /**
     * Writes the application's body through a sink that notes its own failures: an exception the
     * body throws while OkHttp's sink under it never failed is the body's own (the file or stream
     * it reads failed), the application's mistake and not the host's failure, and the call is told
     * so before OkHttp reports it ({@link RetryCall#applicationFailed}). A duplex body is written
     * so too: what its writeTo throws itself (opening its source) is the application's; what it
     * writes after writeTo returned, on a thread of its own, goes on through the same sink, which
     * it flushes and closes itself (nothing of it is emitted here), and a failure of its own there
     * never reaches OkHttp (the application may cancel the call: the caller's cancel).
     */
    @Override
    public void writeTo(BufferedSink sink) throws IOException {
      wrongLength = false;
      written = true;
      Boolean duplex = duplexOrBroken();
      if (duplex == null) {
        delegate.writeTo(sink);
        return;
      }
      // A duplex body writes on after writeTo returned, and ends when it closes the sink: not
      // counted.
      WatchedSink watched = new WatchedSink(sink, duplex ? -1 : declared);
      BufferedSink buffered = Okio.buffer(watched);
      try {
        delegate.writeTo(buffered);
      } catch (Exception e) {
        // Exception, not IOException: a Kotlin body may throw a checked one undeclared.
        wrongLength = watched.wrongSoFar();
        if (!watched.failed) {
          call.applicationFailed(e);
        }
        throw e;
      }
      if (duplex) {
        return;
      }
      try {
        if (!watched.closed) {
          buffered.emit(); // what the body left in our buffer goes on to OkHttp's, as it would have
        }
      } finally {
        // The body is over: all it wrote has passed the watched sink.
        wrongLength = watched.expected >= 0 && watched.received != watched.expected;
      }
    }

    /** Whether the body is duplex; null when asking it throws. */
    private Boolean duplexOrBroken() {
      try {
        return delegate.isDuplex();
      } catch (LinkageError olderOkHttp) {
        return Boolean.FALSE;
      } catch (Exception broken) {
        return null; // OkHttp asked it before writing: it fails there as without us
      }
    }

    /**
     * One-shot when guarded and its request failed. Where nothing tells of the failure (a client
     * wired by hand with the application interceptor alone), OkHttp's question itself tells: it
     * asks from {@code RetryAndFollowUpInterceptor.requestIsOneShot} only after a request whose
     * sending had started failed, deciding whether to send it again ({@code
     * retryOnConnectionFailure}); it asks from elsewhere in that class before a follow-up (a 307, a
     * 408), which a guarded body allows as before. Without it, OkHttp resent a POST without key
     * after its connection failed, the server getting it twice. Only that question of OkHttp's
     * looks at the stack: the network interceptor's and the agent's watched bodies never do.
     */
    @Override
    public boolean isOneShot() {
      // The application's body is asked first, failed or not, as OkHttp asks it without us: one
      // whose isOneShot() throws fails the call there with its own exception, not the failure.
      boolean own = delegate.isOneShot();
      return (guarded && (failed || (!watched && OkHttpAsks.toResendAfterFailure()))) || own;
    }

    @Override
    public boolean isDuplex() {
      return delegate.isDuplex();
    }
  }

  /**
   * Whether the thread asks a body {@code isOneShot()} from OkHttp's {@code
   * RetryAndFollowUpInterceptor.requestIsOneShot} (3.14, 4.x and 5.x alike), through bodies that
   * delegate (a gzip or multipart body of OkHttp's, the application's own): the first frame of that
   * class decides. A class, not a lambda: no bootstrap to link.
   */
  static final class OkHttpAsks
      implements java.util.function.Function<
          java.util.stream.Stream<StackWalker.StackFrame>, Boolean> {
    private static final StackWalker WALKER = StackWalker.getInstance();
    private static final OkHttpAsks ASKS = new OkHttpAsks();
    // Bodies that delegate between OkHttp's question and ours: a few at most.
    private static final int DEPTH = 12;

    static boolean toResendAfterFailure() {
      return WALKER.walk(ASKS);
    }

    @Override
    public Boolean apply(java.util.stream.Stream<StackWalker.StackFrame> frames) {
      java.util.Iterator<StackWalker.StackFrame> it = frames.limit(DEPTH).iterator();
      while (it.hasNext()) {
        StackWalker.StackFrame f = it.next();
        if (f.getClassName().endsWith(".RetryAndFollowUpInterceptor")) {
          return "requestIsOneShot".equals(f.getMethodName());
        }
      }
      return false;
    }
  }

  /**
   * OkHttp's sink for a body, noting whether it failed or was closed, and counting what the body
   * wrote against the length it declared, as OkHttp's sink under it does.
   */
  private static final class WatchedSink extends ForwardingSink {
    // Volatile: a duplex body writes from a thread of its own, as its writeTo may still run.
    volatile boolean failed;
    volatile boolean closed;
    // The length OkHttp holds the body to, -1 for none (or a duplex body): then nothing counted.
    final long expected;
    // The bytes offered to OkHttp's sink, each counted before it is handed on: OkHttp refuses
    // the write that takes the body past its length.
    long received;

    WatchedSink(Sink delegate, long expected) {
      super(delegate);
      this.expected = expected;
    }

    /**
     * Whether the body went wrong already while it wrote: more bytes than declared, or closed the
     * sink short of them.
     */
    boolean wrongSoFar() {
      return expected >= 0 && (received > expected || (closed && received != expected));
    }

    @Override
    public void write(Buffer source, long byteCount) throws IOException {
      if (expected >= 0) {
        received += byteCount;
      }
      try {
        super.write(source, byteCount);
      } catch (Exception e) {
        failed = true;
        throw e;
      }
    }

    @Override
    public void flush() throws IOException {
      try {
        super.flush();
      } catch (Exception e) {
        failed = true;
        throw e;
      }
    }

    @Override
    public void close() throws IOException {
      closed = true;
      try {
        super.close();
      } catch (Exception e) {
        failed = true;
        throw e;
      }
    }
  }
}
