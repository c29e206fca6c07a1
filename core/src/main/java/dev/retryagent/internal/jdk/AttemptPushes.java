package dev.retryagent.internal.jdk;

import java.io.IOException;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpResponse.BodyHandler;
import java.net.http.HttpResponse.BodySubscriber;
import java.net.http.HttpResponse.PushPromiseHandler;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Flow;
import java.util.function.Function;

/**
 * The HTTP/2 server pushes of one attempt of a {@code sendAsync} given a push-promise handler: the
 * application's handler gets the pushes of the response it receives, and only those.
 *
 * <p>Why: each attempt is a {@code sendAsync} of its own, and the JDK hands every push promise of
 * an exchange to the push-promise handler it was given, as the promise arrives, which is usually
 * before the response's status (a server pushes before it sends what refers to the pushed
 * resources). Given the application's handler, the pushes of a 503 the retry then replaced reached
 * the application, besides those of the response it received. So a promise that arrives before the
 * attempt's response is decided on is accepted here, its response held back unread (nothing is
 * requested of it: the server's flow control holds the rest), and handed to the application's
 * handler once the response is decided on and is the caller's ({@link #settle}); a promise of a
 * response that will be retried, or of an attempt that failed before its response, is refused and
 * its stream cancelled. A promise that arrives after the decision goes straight to the
 * application's handler, or is refused, as the JDK refuses one its handler does not accept.
 */
final class AttemptPushes<T> implements PushPromiseHandler<T> {
  private static final int UNDECIDED = 0;
  private static final int CALLERS = 1;
  private static final int REFUSED = 2;

  private final PushPromiseHandler<T> application;
  private final JdkRequest<?> call; // null when the attempt sent the application's own request
  private final String attemptHeader; // the policy's, or null
  private int state = UNDECIDED; // guarded by this
  private List<Held<T>> held = new ArrayList<>(); // guarded by this; null once settled

  /**
   * @param call the call, when the attempt sent the agent's copy of its request, else null: the
   *     requests the application's handler is shown, and those of the pushed responses, are then
   *     the JDK's as without the agent ({@link CallersResponse})
   */
  AttemptPushes(PushPromiseHandler<T> application, JdkRequest<?> call, String attemptHeader) {
    this.application = application;
    this.call = call;
    this.attemptHeader = attemptHeader;
  }

  @Override
  public void applyPushPromise(
      HttpRequest initiatingRequest,
      HttpRequest pushPromiseRequest,
      Function<BodyHandler<T>, CompletableFuture<HttpResponse<T>>> acceptor) {
    if (call != null) {
      // The JDK shows the request it sent, the agent's copy, as the initiating one, and makes the
      // promised one from it (its timeout and publisher; its headers are the promise's).
      JdkRequest<?> c = call;
      HttpRequest own = c.callers();
      initiatingRequest = new CallersResponse.CallersRequest(initiatingRequest, own, attemptHeader);
      pushPromiseRequest = new CallersResponse.CallersRequest(pushPromiseRequest, own, null);
      Function<BodyHandler<T>, CompletableFuture<HttpResponse<T>>> jdks = acceptor;
      acceptor = h -> CallersResponse.of(jdks.apply(h), c, null);
    }
    int s;
    synchronized (this) {
      s = state;
      if (s == UNDECIDED) {
        Held<T> h = new Held<>(initiatingRequest, pushPromiseRequest);
        h.response = acceptor.apply(h);
        held.add(h);
        return;
      }
    }
    if (s == CALLERS) {
      application.applyPushPromise(initiatingRequest, pushPromiseRequest, acceptor);
    }
    // REFUSED: not accepted, the JDK cancels the pushed stream.
  }

  /**
   * The attempt's response was decided on ({@code callers}: it is the caller's), or the attempt
   * failed before it (false): the pushes held so far go to the application's handler, or are
   * refused. Only the first call counts.
   */
  void settle(boolean callers) {
    List<Held<T>> pushes;
    synchronized (this) {
      if (state != UNDECIDED) {
        return;
      }
      state = callers ? CALLERS : REFUSED;
      pushes = held;
      held = null;
    }
    for (Held<T> h : pushes) {
      if (callers) {
        h.offer(application);
      } else {
        h.refuse();
      }
    }
  }

  /** A push promise accepted while the attempt's response was undecided: its body handler. */
  private static final class Held<T> implements BodyHandler<T> {
    private final HttpRequest initiating;
    private final HttpRequest promised;
    CompletableFuture<HttpResponse<T>> response; // the JDK's, for the push's response
    // Guarded by this:
    private BodyHandler<T> handler; // the application's, once it accepted the push
    private HttpResponse.ResponseInfo info; // the pushed response's, once it arrived
    private Late<T> late; // what the JDK was given for the body before the application's handler
    private boolean refused;

    Held(HttpRequest initiating, HttpRequest promised) {
      this.initiating = initiating;
      this.promised = promised;
    }

    /** The JDK has the pushed response's status and headers. */
    @Override
    public BodySubscriber<T> apply(HttpResponse.ResponseInfo info) {
      BodyHandler<T> h;
      synchronized (this) {
        h = handler;
        if (h == null) {
          this.info = info;
          late = new Late<>(refused);
          return late;
        }
      }
      return h.apply(info);
    }

    /** Hands the promise to the application's handler, as the JDK would have. */
    void offer(PushPromiseHandler<T> application) {
      try {
        application.applyPushPromise(initiating, promised, this::accept);
      } catch (RuntimeException | Error e) {
        // As the JDK takes a handler's throw: the push is refused. The main response goes on.
        refuse();
        return;
      }
      synchronized (this) {
        if (handler != null) {
          return;
        }
      }
      refuse(); // the application did not accept it
    }

    private CompletableFuture<HttpResponse<T>> accept(BodyHandler<T> h) {
      Objects.requireNonNull(h);
      Late<T> body;
      HttpResponse.ResponseInfo i;
      synchronized (this) {
        if (handler != null || refused) {
          throw new IllegalStateException("non-null bodyHandler"); // the JDK's own acceptor's
        }
        handler = h;
        body = late;
        i = info;
      }
      if (body != null) {
        body.bind(h.apply(i));
      }
      return response;
    }

    void refuse() {
      Late<T> body;
      synchronized (this) {
        refused = true;
        body = late;
      }
      if (body != null) {
        body.cancel();
      }
    }
  }

  /**
   * The body of a pushed response that arrived before the application's handler had it: nothing is
   * requested until the application's subscriber is bound, which then gets the subscription, and
   * the end if it came meanwhile (an empty body ends without a request). The JDK's signals come one
   * at a time; an end is passed on only once the bound subscriber has had its subscription.
   */
  private static final class Late<T> implements BodySubscriber<T> {
    private final CompletableFuture<T> body = new CompletableFuture<>();
    // Guarded by this:
    private Flow.Subscription subscription;
    private BodySubscriber<T> bound; // the application's subscriber
    private boolean subscribed; // bound has had onSubscribe
    private boolean ended; // the end came before bound had its subscription
    private Throwable failure; // and it was this failure
    private boolean cancelled;

    Late(boolean cancelled) {
      if (cancelled) {
        cancel();
      }
    }

    @Override
    public CompletionStage<T> getBody() {
      return body;
    }

    @Override
    public void onSubscribe(Flow.Subscription s) {
      BodySubscriber<T> to;
      boolean cancel;
      synchronized (this) {
        subscription = s;
        to = bound;
        cancel = cancelled;
      }
      if (cancel) {
        s.cancel();
      } else if (to != null) {
        subscribe(to, s);
      }
    }

    @Override
    public void onNext(List<ByteBuffer> item) {
      BodySubscriber<T> to;
      synchronized (this) {
        to = bound; // only the bound subscriber requests
      }
      if (to != null) {
        to.onNext(item);
      }
    }

    @Override
    public void onError(Throwable t) {
      end(t);
    }

    @Override
    public void onComplete() {
      end(null);
    }

    private void end(Throwable t) {
      BodySubscriber<T> to;
      synchronized (this) {
        to = subscribed ? bound : null;
        if (to == null) {
          ended = true;
          failure = t;
        }
      }
      if (to != null) {
        passEnd(to, t);
      }
    }

    /** The application's subscriber takes the body over. */
    void bind(BodySubscriber<T> to) {
      Flow.Subscription s;
      synchronized (this) {
        if (cancelled) {
          return;
        }
        bound = to;
        s = subscription;
      }
      to.getBody()
          .whenComplete(
              (v, e) -> {
                if (e != null) {
                  body.completeExceptionally(e);
                } else {
                  body.complete(v);
                }
              });
      if (s != null) {
        subscribe(to, s);
      }
    }

    /** Gives {@code to} its subscription, then the end if it came meanwhile. */
    private void subscribe(BodySubscriber<T> to, Flow.Subscription s) {
      to.onSubscribe(s);
      boolean end;
      Throwable t;
      synchronized (this) {
        subscribed = true;
        end = ended;
        t = failure;
      }
      if (end) {
        passEnd(to, t);
      }
    }

    private static <T> void passEnd(BodySubscriber<T> to, Throwable t) {
      if (t != null) {
        to.onError(t);
      } else {
        to.onComplete();
      }
    }

    /** Refused before the application's subscriber was bound: the pushed stream is cancelled. */
    void cancel() {
      Flow.Subscription s;
      synchronized (this) {
        if (cancelled || bound != null) {
          return;
        }
        cancelled = true;
        s = subscription;
      }
      if (s != null) {
        s.cancel();
      }
      body.completeExceptionally(new IOException("push promise refused"));
    }
  }
}
