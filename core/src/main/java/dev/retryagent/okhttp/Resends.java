package dev.retryagent.okhttp;

import dev.retryagent.engine.RetryCall;
import java.io.IOException;
import okhttp3.Call;
import okhttp3.Interceptor;
import okhttp3.Request;
import okhttp3.RequestBody;
import okhttp3.Response;
import okhttp3.internal.http2.ErrorCode;
import okhttp3.internal.http2.StreamResetException;

/**
 * Counts the requests OkHttp sends again on its own inside one attempt after a failure, and turns
 * the attempt's guarded body one-shot once a request failed ({@link ResendGuard}). OkHttp's {@code
 * RetryAndFollowUpInterceptor} resends a request whose connection failed after it was written (a
 * pooled connection the server had closed, say) on a new connection, and reports nothing of it.
 * Every request that reaches a connection passes the network interceptors and then OkHttp's last
 * interceptor, {@code CallServerInterceptor}: one that follows a failed one within the same attempt
 * is such a resend. Connect failures are retried before either: those requests were never sent, and
 * are not counted.
 *
 * <p>Two ways to be told, which do the same: this class as a network interceptor (the library's
 * {@link RetryInterceptor#networkInterceptor()}), or an agent's hook at the start of {@code
 * CallServerInterceptor.intercept} calling {@link #sending} and, when it throws an {@code
 * IOException}, {@link #failed(Call, IOException)}. The hook costs no object per call; a network
 * interceptor costs OkHttp's own copy of the chain (56 B), whatever it does (issue 13).
 *
 * <p>Which attempt a request belongs to: OkHttp runs an attempt's whole chain on the thread that
 * called {@code proceed}, so the attempt that runs on the thread now ({@link #begin} to {@link
 * #end}) is the one, if the request is of the same OkHttp call. Another call made inside the
 * attempt on the same thread (an authenticator's, a network interceptor's) is told apart by its
 * call, and an attempt of it that this class counts nests: it saves the outer one and restores it.
 *
 * <p>The per-thread state holds only JDK types ({@code Object[]}): what it refers to while an
 * attempt runs is cleared when it ends, so a thread of a server's pool that made calls pins no
 * class loader of a web application that used the library and was undeployed. Thread-safe.
 */
public final class Resends implements Interceptor {
  // The slots of a thread's frame: the attempt running on it, else all null.
  private static final int OK_CALL = 0; // OkHttp's Call
  private static final int RETRY_CALL = 1; // the engine's call, told of each resend
  private static final int BODY = 2; // the attempt's guarded body, or null
  private static final int LAST_FAILED = 3; // non-null after a request of the attempt failed
  private static final int SENT = 4; // non-null once a request of the attempt reached a connection
  private static final int SLOTS = 5;

  private static final ThreadLocal<Object[]> FRAME = new ThreadLocal<>();

  /** What {@link #begin} returns while nothing counts: {@link #end} has nothing to undo. */
  private static final Object NOT_COUNTED = new Object();

  // Set once something can tell this instance of requests (handed out as a network interceptor, or
  // to a hook): until then an attempt has nothing to count, and costs no per-thread state.
  private volatile boolean handedOut;
  // Set once handed to a hook in OkHttp's own CallServerInterceptor, which tells of every call's
  // requests; a network interceptor tells only of the calls of the clients that hold it ({@link
  // #told}).
  private volatile boolean hooked;

  Resends() {}

  /** This instance will be told of the requests sent by the clients that hold it. */
  Resends handOut() {
    handedOut = true;
    return this;
  }

  /** This instance will be told of the requests of every call (a hook in OkHttp's own class). */
  Resends hook() {
    hooked = true;
    handedOut = true;
    return this;
  }

  /**
   * An attempt of {@code okCall} starts on this thread, sending {@code request}: count its resends
   * from now, telling {@code retryCall} of each (an attempt of its own, for {@code maxAttempts},
   * the budget and the breaker). Pass what it returns to {@link #end}.
   */
  Object begin(Call okCall, RetryCall retryCall, Request request) {
    if (!handedOut) {
      return NOT_COUNTED;
    }
    Object[] frame = FRAME.get();
    if (frame == null) {
      frame = new Object[SLOTS]; // once per thread
      FRAME.set(frame);
    }
    Object[] outer = frame[OK_CALL] == null ? null : frame.clone(); // nested: rare
    RequestBody body = request.body();
    frame[OK_CALL] = okCall;
    frame[RETRY_CALL] = retryCall;
    frame[BODY] = body instanceof ResendGuard.Body ? body : null;
    frame[LAST_FAILED] = null;
    frame[SENT] = null;
    return outer;
  }

  /** The attempt {@link #begin} started is over on this thread. */
  void end(Object begun) {
    if (begun == NOT_COUNTED) {
      return;
    }
    Object[] frame = FRAME.get();
    if (begun == null) {
      // Set to null, not removed: the thread's next attempt finds its frame again.
      frame[OK_CALL] = null;
      frame[RETRY_CALL] = null;
      frame[BODY] = null;
      frame[LAST_FAILED] = null;
      frame[SENT] = null;
    } else {
      System.arraycopy((Object[]) begun, 0, frame, 0, SLOTS);
    }
  }

  /** A request of {@code okCall} is about to be written to a connection, on this thread. */
  public void sending(Call okCall) {
    Object[] frame = frameOf(okCall);
    if (frame != null) {
      frame[SENT] = Boolean.TRUE;
      if (frame[BODY] != null) {
        ((ResendGuard.Body) frame[BODY]).watched();
      }
    }
    if (frame != null && frame[LAST_FAILED] != null) {
      frame[LAST_FAILED] = null;
      // OkHttp decides its resends alone.
      ((RetryCall) frame[RETRY_CALL]).clientResentAfterFailure(false);
    }
  }

  /**
   * A request of {@code okCall} failed on its connection, on this thread: OkHttp asks the body next
   * whether it may send it again, and the guarded body says no from now on. Prefer {@link
   * #failed(Call, IOException)}, which knows a refused stream.
   */
  public void failed(Call okCall) {
    failed(okCall, null);
  }

  /**
   * {@link #failed(Call)}, knowing the failure: a stream the server refused unprocessed (HTTP/2
   * {@code REFUSED_STREAM}, which OkHttp also reports for a stream above a {@code GOAWAY}'s last
   * stream id) leaves the body as it was. The server did not act on it, so OkHttp's resend (3.x and
   * 4.x make one, POST included) sends nothing twice, and the application gets what it gets without
   * the agent; guarded, the call failed with the refusal where plain OkHttp got the answer. The
   * resend is still counted as an attempt.
   */
  public void failed(Call okCall, IOException failure) {
    Object[] frame = frameOf(okCall);
    if (frame != null) {
      frame[LAST_FAILED] = Boolean.TRUE;
      if (frame[BODY] != null && !refusedUnprocessed(failure)) {
        ((ResendGuard.Body) frame[BODY]).failed();
      }
    }
  }

  /**
   * Whether no request of the attempt of {@code okCall} running on this thread reached a connection
   * (OkHttp ended it while it found or connected one): known only when this instance is told of the
   * requests of {@code okCall} ({@link #told}; else false, as it cannot tell). Ask before {@link
   * #end}.
   */
  boolean nothingSent(Call okCall, boolean told) {
    Object[] frame = told ? frameOf(okCall) : null;
    return frame != null && frame[SENT] == null;
  }

  /**
   * Whether this instance is told of the requests of {@code okCall}: by a hook, of every call; as a
   * network interceptor, of the calls of a client that holds it ({@link CallClients}). Asked per
   * client, not per instance: one interceptor serves any number of clients, and a client without
   * the network interceptor, beside one with it, was taken for told: its attempts read as sending
   * nothing, so a POST that a redirect's hop then failed to connect for was taken as never sent and
   * retried (the server got it again), and every cancel as one before the request went out. Where
   * the client cannot be read (an OkHttp in a named module), told as before; the guarded body's
   * write still says a request went out ({@code RetryInterceptor.somethingSent}).
   */
  boolean told(Call okCall) {
    if (!handedOut) {
      return false;
    }
    if (hooked) {
      return true;
    }
    return CallClients.networkInterceptorOf(okCall, this) != CallClients.LACKS;
  }

  /**
   * Whether a request of the attempt of {@code okCall} running on this thread reached a connection
   * (a redirect's hop OkHttp followed, its own resend): known only when this instance is told of
   * the requests sent (else false). Ask before {@link #end}.
   */
  boolean somethingSent(Call okCall) {
    Object[] frame = handedOut ? frameOf(okCall) : null;
    return frame != null && frame[SENT] != null;
  }

  private static boolean refusedUnprocessed(IOException failure) {
    try {
      return failure instanceof StreamResetException
          && ((StreamResetException) failure).errorCode == ErrorCode.REFUSED_STREAM;
    } catch (LinkageError unlikeOkHttp) {
      return false; // an OkHttp without them (repackaged): guarded, as before
    }
  }

  /** This thread's frame if the attempt running on it is of {@code okCall}, else null. */
  private static Object[] frameOf(Call okCall) {
    Object[] frame = FRAME.get();
    return frame != null && frame[OK_CALL] == okCall && okCall != null ? frame : null;
  }

  @Override
  public Response intercept(Chain chain) throws IOException {
    Call okCall = chain.call();
    sending(okCall);
    try {
      return chain.proceed(chain.request());
    } catch (IOException e) {
      failed(okCall, e);
      throw e;
    }
  }

  @Override
  public String toString() {
    return "retry-agent (resends)";
  }
}
