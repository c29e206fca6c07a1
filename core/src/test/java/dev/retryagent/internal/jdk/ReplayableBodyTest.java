package dev.retryagent.internal.jdk;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.net.http.HttpClient;
import java.net.http.HttpHeaders;
import java.net.http.HttpRequest.BodyPublisher;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Flow;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/**
 * The copy a streamed body keeps for retries ({@link ReplayableBody}), driven by hand: the test is
 * the source publisher, and says what each of its subscriptions sends and when.
 */
class ReplayableBodyTest {
  /** A source that keeps its subscribers, for the test to send to. */
  private static class Source implements BodyPublisher {
    final List<Flow.Subscriber<? super ByteBuffer>> subscribers = new ArrayList<>();
    long length = -1; // unknown

    @Override
    public long contentLength() {
      return length;
    }

    @Override
    public void subscribe(Flow.Subscriber<? super ByteBuffer> subscriber) {
      subscribers.add(subscriber);
      subscriber.onSubscribe(
          new Flow.Subscription() {
            @Override
            public void request(long n) {}

            @Override
            public void cancel() {}
          });
    }

    void send(int subscription, String s) {
      subscribers.get(subscription).onNext(ByteBuffer.wrap(s.getBytes(StandardCharsets.UTF_8)));
    }
  }

  /** What the client's subscriber got, or what a retry's copy sends. */
  private static final class Sink implements Flow.Subscriber<ByteBuffer> {
    final ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    boolean complete;

    @Override
    public void onSubscribe(Flow.Subscription subscription) {
      subscription.request(Long.MAX_VALUE);
    }

    @Override
    public void onNext(ByteBuffer item) {
      byte[] b = new byte[item.remaining()];
      item.get(b);
      bytes.writeBytes(b);
    }

    @Override
    public void onError(Throwable throwable) {}

    @Override
    public void onComplete() {
      complete = true;
    }

    String text() {
      return bytes.toString(StandardCharsets.UTF_8);
    }
  }

  /**
   * The client subscribed again within one attempt (a 307, or its own resend on a new connection)
   * and the first subscription, cancelled, still sent a buffer: it went into the copy of the
   * second, and a retry sent "hellolo" where the application's body was "hello".
   */
  @Test
  void aLateBufferOfAnEarlierSubscriptionIsNotInTheCopy() {
    Source source = new Source();
    ReplayableBody body = ReplayableBody.of(source, 1024);
    BodyPublisher first = body.next();
    first.subscribe(new Sink());
    source.send(0, "hel");
    first.subscribe(new Sink()); // the redirect's
    source.send(1, "hello");
    source.send(0, "lo"); // late, from the cancelled first subscription
    source.subscribers.get(1).onComplete();

    Sink retry = new Sink();
    body.next().subscribe(retry);

    assertThat(retry.complete).isTrue();
    assertThat(retry.text()).isEqualTo("hello");
  }

  /**
   * The call ended as its last attempt's body was still being sent (HTTP/2, {@code expectContinue}:
   * the response came first): the copy is dropped and the call let go, and the subscription goes on
   * from the source to the client whole, nothing kept of it; nothing is given out as a copy.
   * Before, the copy stayed, and kept growing, for as long as the response was kept.
   */
  @Test
  void theCallsEndDropsTheCopyButNotTheBodyStillBeingSent() throws Exception {
    Source source = new Source();
    dev.retryagent.engine.RetryCall call =
        dev.retryagent.engine.RetryEngine.builder()
            .build()
            .begin(
                new JdkRequest<>(
                    java.net.http.HttpRequest.newBuilder(java.net.URI.create("http://127.0.0.1:9/"))
                        .build()));
    ReplayableBody body = ReplayableBody.of(source, 1024, call);
    BodyPublisher first = body.next();
    Sink sink = new Sink();
    first.subscribe(sink);
    source.send(0, "hel");

    body.callEnded();
    source.send(0, "lo");
    source.subscribers.get(0).onComplete();

    assertThat(sink.complete).isTrue();
    assertThat(sink.text()).isEqualTo("hello");
    java.lang.reflect.Field chunks = ReplayableBody.Tee.class.getDeclaredField("chunks");
    chunks.setAccessible(true);
    java.lang.reflect.Field callField = ReplayableBody.Tee.class.getDeclaredField("call");
    callField.setAccessible(true);
    assertThat(chunks.get(first)).as("the copy").isNull();
    assertThat(callField.get(first)).as("the call").isNull();
    assertThat(body.fixForRetry()).as("no copy given out").isFalse();
  }

  /**
   * The copy asked the source's {@code contentLength()} holding its own lock as the client
   * subscribed again: a publisher whose {@code contentLength()} waits for its own thread (a monitor
   * of its own, which that thread holds as it signals an earlier subscription late) never got it,
   * since the late buffer waits for the copy's lock: both hung (r17's review). Now the length is
   * asked before the lock.
   */
  @Test
  void theSourcesLengthIsAskedWithoutTheCopysLockHeld() throws Exception {
    java.util.concurrent.atomic.AtomicBoolean lateBufferDelivered =
        new java.util.concurrent.atomic.AtomicBoolean();
    Source source =
        new Source() {
          @Override
          public long contentLength() {
            if (subscribers.size() == 1) {
              // The second subscription: a late buffer of the first, sent from another thread, as
              // the publisher's own thread would while this call waits for it.
              Thread late = new Thread(() -> send(0, "lo"));
              late.start();
              try {
                late.join(2_000);
              } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
              }
              lateBufferDelivered.set(!late.isAlive());
            }
            return -1;
          }
        };
    ReplayableBody body = ReplayableBody.of(source, 1024);
    BodyPublisher first = body.next();
    first.subscribe(new Sink());
    source.send(0, "hel");
    first.subscribe(new Sink()); // the redirect's: asks the length again

    assertThat(lateBufferDelivered.get())
        .as("the late buffer went through while the length was being asked")
        .isTrue();
    source.send(1, "hello");
    source.subscribers.get(1).onComplete();
    Sink retry = new Sink();
    body.next().subscribe(retry);
    assertThat(retry.text()).isEqualTo("hello");
  }

  /**
   * The earlier subscription's late end made the copy complete while the last subscription was
   * still sending: when that one then failed, a retry would have sent the part it had sent.
   */
  @Test
  void aLateEndOfAnEarlierSubscriptionDoesNotCompleteTheCopy() {
    Source source = new Source();
    ReplayableBody body = ReplayableBody.of(source, 1024);
    BodyPublisher first = body.next();
    first.subscribe(new Sink());
    source.send(0, "hello");
    first.subscribe(new Sink());
    source.send(1, "hel");
    source.subscribers.get(0).onComplete(); // late
    source.subscribers.get(1).onError(new IOException("the source failed"));

    assertThat(body.canSendAgain()).isFalse();
  }

  /**
   * A source that ended short of the length it declared (or past it): the JDK refuses the attempt
   * (the application's mistake), and a failure of the host's that came first (a reset) must not be
   * retried with the copy, which a retry sent with the copy's own length, a request the application
   * never made, where the JDK alone failed. The copy of a body of the right length is sent again as
   * before.
   */
  @Test
  void aCopyOfOtherThanTheDeclaredLengthIsNotSentAgain() {
    for (String sent : new String[] {"hel", "hello!", "hello"}) {
      Source source = new Source();
      source.length = 5;
      ReplayableBody body = ReplayableBody.of(source, 1024);
      BodyPublisher first = body.next();
      assertThat(first.contentLength()).isEqualTo(5); // asked by the JDK, before it subscribes
      first.subscribe(new Sink());
      source.send(0, sent);
      source.subscribers.get(0).onComplete();

      assertThat(body.canSendAgain()).as(sent).isEqualTo(sent.equals("hello"));
      assertThat(body.deliveredWrongLength()).as(sent).isEqualTo(!sent.equals("hello"));
    }
  }

  /**
   * A source that completed and then threw out of {@code request}, as the JDK's own {@code
   * ofInputStream} does when its stream fails as another request comes in ({@code PullPublisher}
   * re-runs, takes the failed stream for ended, completes, then throws the failure): the copy, cut
   * where the stream failed, was kept as complete, and a retry sent it as the whole body. It is not
   * sent again, and the attempt's failure, whatever it is, is known for the source's.
   */
  @Test
  void aCopyItsSourceCompletedBeforeItFailedIsNotSentAgain() {
    BodyPublisher source =
        new BodyPublisher() {
          @Override
          public long contentLength() {
            return -1;
          }

          @Override
          public void subscribe(Flow.Subscriber<? super ByteBuffer> s) {
            s.onSubscribe(
                new Flow.Subscription() {
                  @Override
                  public void request(long n) {
                    s.onNext(ByteBuffer.wrap("hel".getBytes(StandardCharsets.UTF_8)));
                    s.onComplete();
                    throw new java.io.UncheckedIOException(new IOException("disk"));
                  }

                  @Override
                  public void cancel() {}
                });
          }
        };
    ReplayableBody body = ReplayableBody.of(source, 1024);
    List<Flow.Subscription> subscription = new ArrayList<>();
    Sink sink = new Sink();
    body.next()
        .subscribe(
            new Flow.Subscriber<ByteBuffer>() {
              @Override
              public void onSubscribe(Flow.Subscription s) {
                subscription.add(s);
              }

              @Override
              public void onNext(ByteBuffer item) {
                sink.onNext(item);
              }

              @Override
              public void onError(Throwable throwable) {}

              @Override
              public void onComplete() {
                sink.onComplete();
              }
            });
    assertThat(body.sourceFailed()).isFalse();
    org.assertj.core.api.Assertions.assertThatThrownBy(() -> subscription.get(0).request(1))
        .isInstanceOf(java.io.UncheckedIOException.class);

    assertThat(sink.complete).isTrue(); // what the JDK got: a whole body, cut
    assertThat(sink.text()).isEqualTo("hel");
    assertThat(body.canSendAgain()).isFalse();
    assertThat(body.sourceFailed()).isTrue();
    assertThat(body.sourceCompletedBeforeItFailed()).isTrue();
  }

  /**
   * A source that completed and fails later, breaking Flow's rules: before the retry's body is
   * fixed, the failure makes it unsendable (fixForRetry false: the retry is not made); once fixed,
   * the failure changes neither the replay nor how the retry's attempt is judged (sourceFailed
   * stays false). Before, the late failure turned a fixed replay's state into the source's failure.
   */
  @Test
  void aFailureOfTheOldSubscriptionAfterTheRetryWasFixedChangesNothing() {
    for (boolean fixedFirst : new boolean[] {false, true}) {
      Source source = new Source();
      ReplayableBody body = ReplayableBody.of(source, 1024);
      body.next().subscribe(new Sink());
      source.send(0, "hello");
      source.subscribers.get(0).onComplete();
      if (fixedFirst) {
        assertThat(body.fixForRetry()).isTrue();
      }
      source.subscribers.get(0).onError(new IOException("late"));

      if (!fixedFirst) {
        assertThat(body.fixForRetry()).isFalse();
        continue;
      }
      assertThat(body.fixForRetry()).isTrue();
      assertThat(body.sourceFailed()).isFalse();
      assertThat(body.deliveredWrongLength()).isFalse();
      Sink retry = new Sink();
      body.next().subscribe(retry);
      assertThat(retry.complete).isTrue();
      assertThat(retry.text()).isEqualTo("hello");
    }
  }

  /**
   * The source fails (its completed copy turned FAILED) just as the retry's body is fixed, after
   * the retry was decided: the retry is not made (fixForRetry false), and nothing throws. Before,
   * fixForRetry read the tee's state (COMPLETE), let the tee's lock go, and next() read it again
   * and took the copy, each under the lock anew: a failure between the reads made next() throw
   * "body cannot be sent again" out of fixForRetry (out of the call's retry check, to the caller);
   * one between next()'s read and its copy built the replay from the emptied copy, and the retry
   * sent a 0-byte body as the whole request. The failure lands where those windows were ({@link
   * ReplayableBody#beforeFixForTests}).
   */
  @Test
  void aFailureJustAsTheRetrysBodyIsFixedEndsTheRetryNeitherThrowsNorSendsACutCopy() {
    Source source = new Source();
    ReplayableBody body = ReplayableBody.of(source, 1024);
    body.next().subscribe(new Sink());
    source.send(0, "hello");
    source.subscribers.get(0).onComplete();
    ReplayableBody.beforeFixForTests =
        () -> source.subscribers.get(0).onError(new IOException("late"));
    boolean fixed;
    try {
      fixed = body.fixForRetry();
    } finally {
      ReplayableBody.beforeFixForTests = null;
    }

    if (fixed) {
      Sink retry = new Sink(); // what the retry would send
      body.next().subscribe(retry);
      assertThat(retry.text()).as("the retry's body").isEqualTo("hello");
    }
    assertThat(fixed).isFalse();
    assertThat(body.canSendAgain()).isFalse();
  }

  /**
   * The tee's copy and its retirement are one step, and so is a failure's marking: a failure before
   * the retry takes the copy makes it unsendable (the copy not taken), one after is refused (the
   * copy taken stays whole, the failure is not the call's: {@link ReplayableBody.Capture}).
   */
  @Test
  void theCopyIsTakenAndTheTeeRetiredInOneStepThatAFailureComesWhollyBeforeOrAfter() {
    for (boolean takenFirst : new boolean[] {false, true}) {
      Source source = new Source();
      ReplayableBody.Tee tee = new ReplayableBody.Tee(source, 1024, null);
      assertThat(tee.forAttempt()).isSameAs(tee); // never subscribed: the source itself
      tee.subscribe(new Sink());
      assertThat(tee.forAttempt()).isNull(); // still sending
      source.send(0, "hello");
      source.subscribers.get(0).onComplete();
      if (!takenFirst) {
        assertThat(tee.failed(1)).isTrue();
        assertThat(tee.forAttempt()).isNull();
        assertThat(tee.state()).isEqualTo(ReplayableBody.Tee.State.FAILED);
        continue;
      }
      BodyPublisher replay = tee.forAttempt();
      assertThat(replay).isInstanceOf(ReplayableBody.BufferedPublisher.class);
      assertThat(tee.failed(1)).isFalse();
      assertThat(tee.state()).isEqualTo(ReplayableBody.Tee.State.COMPLETE);
      Sink retry = new Sink();
      replay.subscribe(retry);
      assertThat(retry.complete).isTrue();
      assertThat(retry.text()).isEqualTo("hello");
    }
  }

  /**
   * A source that completes inside its subscription's {@code request} and throws from there after
   * (the JDK's {@code PullPublisher}, its copy cut), with the code that runs as the retried
   * response is let go ({@code fixEarly}: a page over 8 KiB, JdkRequest and DiscardedBody) or as
   * the retry's wait ends ({@code fixForRetry}) coming in between: the thread stalled between its
   * completion and its throw. Neither takes the copy while that request has not returned: the throw
   * then makes the copy unsendable (the retry is not made) and the attempt's failure the
   * application's. Were the copy taken there, the tee retired would ignore the throw, and the retry
   * would send the cut "hel" as the whole body.
   */
  @Test
  void aCopyCompletedInsideARequestThatHasNotReturnedIsNotTaken() {
    for (boolean early : new boolean[] {true, false}) {
      ReplayableBody[] holder = new ReplayableBody[1];
      boolean[] fixed = new boolean[1];
      BodyPublisher source =
          new BodyPublisher() {
            @Override
            public long contentLength() {
              return -1;
            }

            @Override
            public void subscribe(Flow.Subscriber<? super ByteBuffer> s) {
              s.onSubscribe(
                  new Flow.Subscription() {
                    @Override
                    public void request(long n) {
                      s.onNext(ByteBuffer.wrap("hel".getBytes(StandardCharsets.UTF_8)));
                      s.onComplete();
                      // the response is let go, or the retry's wait ends, before the throw
                      fixed[0] = early ? holder[0].fixEarly() : holder[0].fixForRetry();
                      throw new java.io.UncheckedIOException(new IOException("disk"));
                    }

                    @Override
                    public void cancel() {}
                  });
            }
          };
      ReplayableBody body = ReplayableBody.of(source, 1024);
      holder[0] = body;
      List<Flow.Subscription> subscription = new ArrayList<>();
      body.next()
          .subscribe(
              new Flow.Subscriber<ByteBuffer>() {
                @Override
                public void onSubscribe(Flow.Subscription s) {
                  subscription.add(s);
                }

                @Override
                public void onNext(ByteBuffer item) {}

                @Override
                public void onError(Throwable throwable) {}

                @Override
                public void onComplete() {}
              });
      org.assertj.core.api.Assertions.assertThatThrownBy(() -> subscription.get(0).request(1))
          .isInstanceOf(java.io.UncheckedIOException.class);

      // Neither takes a completion not settled. fixEarly says so (false): at the head of a page
      // over 8 KiB the call then ends with that response, not with the engine's IOException once
      // the source throws after the page was read away; fixForRetry, after the wait, refuses it.
      assertThat(fixed[0]).as("early: " + early).isFalse();
      assertThat(body.sourceFailed()).as("early: " + early).isTrue();
      assertThat(body.canSendAgain()).isFalse();
      assertThat(body.fixForRetry()).isFalse();
    }
  }

  /**
   * A source that completes inside its {@code request}, which returns normally: the copy is
   * settled, taken when the response is let go ({@code fixEarly}), and a failure the source signals
   * after that (breaking Flow's rules) changes nothing: the retry sends the whole copy.
   */
  @Test
  void aCopyCompletedInsideARequestThatReturnedIsTakenEarly() {
    Flow.Subscriber<?>[] first = new Flow.Subscriber<?>[1];
    BodyPublisher source =
        new BodyPublisher() {
          @Override
          public long contentLength() {
            return 5;
          }

          @Override
          public void subscribe(Flow.Subscriber<? super ByteBuffer> s) {
            first[0] = s;
            s.onSubscribe(
                new Flow.Subscription() {
                  @Override
                  public void request(long n) {
                    s.onNext(ByteBuffer.wrap("hello".getBytes(StandardCharsets.UTF_8)));
                    s.onComplete();
                  }

                  @Override
                  public void cancel() {}
                });
          }
        };
    ReplayableBody body = ReplayableBody.of(source, 1024);
    Sink sink = new Sink();
    body.next().subscribe(sink);
    assertThat(sink.text()).isEqualTo("hello");

    assertThat(body.fixEarly()).isTrue();
    first[0].onError(new IOException("late"));

    assertThat(body.fixForRetry()).isTrue();
    assertThat(body.sourceFailed()).isFalse();
    Sink retry = new Sink();
    body.next().subscribe(retry);
    assertThat(retry.complete).isTrue();
    assertThat(retry.text()).isEqualTo("hello");
  }

  /**
   * The application's publisher locks the subscriber it was handed (to keep its signals serial, as
   * publishers do) on its own thread, and waits there for the JDK's request to reach it before it
   * sends. The copy's subscriber used itself as its lock for the count of requests in progress: the
   * JDK's request waited for the application's monitor, the publisher waited for the request, and
   * both hung (here: the publisher's 10 s wait ran out, the request never reached it). Now the copy
   * locks an object of its own: the request reaches the source, which sends, and the copy is whole.
   */
  @Test
  void aPublisherHoldingTheSubscribersMonitorDoesNotHoldUpTheRequest() {
    CountDownLatch holding = new CountDownLatch(1);
    CountDownLatch requested = new CountDownLatch(1);
    AtomicReference<Boolean> reachedInTime = new AtomicReference<>();
    Flow.Subscriber<?>[] subscriber = new Flow.Subscriber<?>[1];
    BodyPublisher source =
        new BodyPublisher() {
          @Override
          public long contentLength() {
            return 5;
          }

          @Override
          public void subscribe(Flow.Subscriber<? super ByteBuffer> s) {
            subscriber[0] = s;
            s.onSubscribe(
                new Flow.Subscription() {
                  @Override
                  public void request(long n) {
                    requested.countDown();
                  }

                  @Override
                  public void cancel() {}
                });
          }
        };
    ReplayableBody body = ReplayableBody.of(source, 1024);
    Held held = new Held();
    body.next().subscribe(held);
    @SuppressWarnings("unchecked")
    Flow.Subscriber<ByteBuffer> s = (Flow.Subscriber<ByteBuffer>) subscriber[0];
    Thread publisher =
        started(
            () -> {
              synchronized (s) {
                holding.countDown();
                boolean reached;
                try {
                  reached = requested.await(10, TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                  reached = false;
                }
                reachedInTime.set(reached);
                s.onNext(ByteBuffer.wrap("hello".getBytes(StandardCharsets.UTF_8)));
                s.onComplete();
              }
            });
    awaitQuietly(holding);
    Thread jdk = started(() -> held.subscription.request(1));
    join(publisher);
    join(jdk);

    assertThat(reachedInTime.get()).isTrue();
    assertThat(body.fixForRetry()).isTrue();
    Sink retry = new Sink();
    body.next().subscribe(retry);
    assertThat(retry.text()).isEqualTo("hello");
  }

  /** A subscriber of the JDK's side that keeps its subscription, for the test to request on. */
  private static final class Held implements Flow.Subscriber<ByteBuffer> {
    volatile Flow.Subscription subscription;

    @Override
    public void onSubscribe(Flow.Subscription s) {
      subscription = s;
    }

    @Override
    public void onNext(ByteBuffer item) {}

    @Override
    public void onError(Throwable throwable) {}

    @Override
    public void onComplete() {}
  }

  /** Runs {@code r} on a new thread, started. */
  private static Thread started(Runnable r) {
    Thread t = new Thread(r, "replayable-body-test");
    t.setDaemon(true);
    t.start();
    return t;
  }

  private static void join(Thread t) {
    await().atMost(Duration.ofSeconds(30)).until(() -> !t.isAlive());
  }

  /**
   * Two of the JDK's threads request at once (its PullPublisher, {@code ofInputStream}): A's
   * request returns and is held just as it settles the copy (before the tee's lock); B's request
   * then sends "hel", completes inside itself (provisional) and stalls before its throw. Before,
   * A's request had let go of the count's lock before settling: its late settling made B's
   * completion settled, the copy was taken as the response was let go (fixEarly), B's throw was
   * then ignored, and the retry would send the cut "hel" as the whole body. Now the settling is one
   * step with the count: B's request waits for it, its completion stays provisional, and the throw
   * makes the copy unsendable, the failure the application's.
   */
  @Test
  void aRequestThatReturnedDoesNotSettleACompletionInsideAnotherThreadsRequest() {
    AtomicInteger requests = new AtomicInteger();
    CountDownLatch bStalled = new CountDownLatch(1);
    CountDownLatch bMayThrow = new CountDownLatch(1);
    BodyPublisher source =
        new BodyPublisher() {
          @Override
          public long contentLength() {
            return -1;
          }

          @Override
          public void subscribe(Flow.Subscriber<? super ByteBuffer> s) {
            s.onSubscribe(
                new Flow.Subscription() {
                  @Override
                  public void request(long n) {
                    if (requests.incrementAndGet() == 1) {
                      return; // A's: nothing to send yet
                    }
                    s.onNext(ByteBuffer.wrap("hel".getBytes(StandardCharsets.UTF_8)));
                    s.onComplete();
                    bStalled.countDown();
                    awaitQuietly(bMayThrow);
                    throw new java.io.UncheckedIOException(new IOException("disk"));
                  }

                  @Override
                  public void cancel() {}
                });
          }
        };
    ReplayableBody body = ReplayableBody.of(source, 1024);
    Held held = new Held();
    body.next().subscribe(held);
    AtomicReference<Throwable> bThrew = new AtomicReference<>();
    Runnable bRequests =
        () -> {
          try {
            held.subscription.request(1);
          } catch (RuntimeException e) {
            bThrew.set(e);
          }
        };
    Thread[] threads = new Thread[2];
    boolean taken;
    ReplayableBody.Tee.beforeSettledForTests =
        () -> {
          if (Thread.currentThread() != threads[0] || threads[1] != null) {
            return;
          }
          // A holds here: B requests, and either completes and stalls (nothing holds it) or waits
          // for A's count to be settled.
          Thread b = started(bRequests);
          threads[1] = b;
          await()
              .atMost(Duration.ofSeconds(30))
              .until(() -> bStalled.getCount() == 0 || b.getState() == Thread.State.BLOCKED);
        };
    try {
      threads[0] = new Thread(() -> held.subscription.request(1), "replayable-body-test-a");
      threads[0].start();
      join(threads[0]);
      await().atMost(Duration.ofSeconds(30)).until(() -> bStalled.getCount() == 0);

      // The retried response is let go while B stalls: the copy is not taken.
      taken = body.fixEarly();
      bMayThrow.countDown();
      join(threads[1]);
    } finally {
      ReplayableBody.Tee.beforeSettledForTests = null;
      bMayThrow.countDown();
    }
    assertThat(bThrew.get()).isInstanceOf(java.io.UncheckedIOException.class);
    assertThat(body.sourceFailed()).as("the throw is the application's failure").isTrue();
    assertThat(taken).as("the copy not settled is not fixed early").isFalse();
    assertThat(body.canSendAgain()).isFalse();
    assertThat(body.fixForRetry()).as("the cut copy is not the retry's body").isFalse();
  }

  /**
   * An asynchronous source (a {@code SubmissionPublisher}) completes on its own thread B while the
   * JDK's request runs on A. B is held as it records its completion (before the tee's lock), while
   * A's request returns. Before, B had read "inside a request" and let go of the count's lock: A
   * returned and settled a copy still being sent, then B recorded its completion provisional, and
   * nothing settled it again (the JDK requests no more): the retry was decided and waited, then not
   * made. Now B's read and record are one step with the count: A's return waits for it, and settles
   * the completion; the retry sends the whole copy.
   */
  @Test
  void aCompletionOnTheSourcesThreadDuringARequestIsSettledWhenTheRequestReturns() {
    CountDownLatch aInside = new CountDownLatch(1);
    CountDownLatch aMayReturn = new CountDownLatch(1);
    Flow.Subscriber<?>[] subscriber = new Flow.Subscriber<?>[1];
    BodyPublisher source =
        new BodyPublisher() {
          @Override
          public long contentLength() {
            return 5;
          }

          @Override
          public void subscribe(Flow.Subscriber<? super ByteBuffer> s) {
            subscriber[0] = s;
            s.onSubscribe(
                new Flow.Subscription() {
                  @Override
                  public void request(long n) {
                    aInside.countDown();
                    awaitQuietly(aMayReturn);
                  }

                  @Override
                  public void cancel() {}
                });
          }
        };
    ReplayableBody body = ReplayableBody.of(source, 1024);
    Held held = new Held();
    body.next().subscribe(held);
    Thread a = new Thread(() -> held.subscription.request(1), "replayable-body-test-a");
    Thread[] b = new Thread[1];
    ReplayableBody.Tee.beforeFinishedForTests =
        () -> {
          if (Thread.currentThread() != b[0]) {
            return;
          }
          // B holds here: A's request returns, and either settles (nothing holds it) or waits for
          // B's completion to be recorded.
          aMayReturn.countDown();
          await()
              .atMost(Duration.ofSeconds(30))
              .until(() -> !a.isAlive() || a.getState() == Thread.State.BLOCKED);
        };
    try {
      @SuppressWarnings("unchecked")
      Flow.Subscriber<ByteBuffer> capture = (Flow.Subscriber<ByteBuffer>) subscriber[0];
      b[0] =
          new Thread(
              () -> {
                awaitQuietly(aInside);
                capture.onNext(ByteBuffer.wrap("hello".getBytes(StandardCharsets.UTF_8)));
                capture.onComplete();
              },
              "replayable-body-test-b");
      b[0].start();
      a.start();
      join(b[0]);
      join(a);
    } finally {
      ReplayableBody.Tee.beforeFinishedForTests = null;
      aMayReturn.countDown();
    }
    assertThat(body.fixForRetry()).as("the whole copy, settled, is the retry's body").isTrue();
    Sink retry = new Sink();
    body.next().subscribe(retry);
    assertThat(retry.complete).isTrue();
    assertThat(retry.text()).isEqualTo("hello");
  }

  private static void awaitQuietly(CountDownLatch latch) {
    try {
      if (!latch.await(30, TimeUnit.SECONDS)) {
        throw new AssertionError("latch not counted down");
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new AssertionError(e);
    }
  }

  private static HttpResponse.ResponseInfo info503() {
    return new HttpResponse.ResponseInfo() {
      @Override
      public int statusCode() {
        return 503;
      }

      @Override
      public HttpHeaders headers() {
        return HttpHeaders.of(Map.of(), (a, b) -> true);
      }

      @Override
      public HttpClient.Version version() {
        return HttpClient.Version.HTTP_1_1;
      }
    };
  }

  private static final Flow.Subscription NOTHING =
      new Flow.Subscription() {
        @Override
        public void request(long n) {}

        @Override
        public void cancel() {}
      };

  /**
   * A retried response whose body fails ({@link DiscardedBody#onError}) can no longer be given
   * back: the request body's copy, whole, is fixed for the retry there, as when the body runs past
   * the give-back limit. Before, it was left to the check after the wait, and a failure the source
   * signalled during the wait (breaking Flow's rules) left the call nothing to end with.
   */
  @Test
  void aRetriedResponseWhoseBodyFailsFixesTheCopy() {
    Source source = new Source();
    ReplayableBody body = ReplayableBody.of(source, 1024);
    body.next().subscribe(new Sink());
    source.send(0, "hello");
    source.subscribers.get(0).onComplete();

    DiscardedBody<Object> discarded =
        new DiscardedBody<>(info503(), null, null, Long.MAX_VALUE, body);
    discarded.onSubscribe(NOTHING);
    discarded.onError(new IOException("reset"));
    source.subscribers.get(0).onError(new IOException("late")); // during the wait

    assertThat(body.sourceFailed()).isFalse();
    assertThat(body.fixForRetry()).isTrue();
    Sink retry = new Sink();
    body.next().subscribe(retry);
    assertThat(retry.text()).isEqualTo("hello");
  }

  /**
   * A retried response kept whole (within 8 KiB: one that can be given back, which the application
   * may keep for as long as it likes) holds no more of the request body's copy, nor through it the
   * call.
   */
  @Test
  void aResponseThatCanBeGivenBackDoesNotHoldTheRequestBody() throws Exception {
    Source source = new Source();
    ReplayableBody body = ReplayableBody.of(source, 1024);
    body.next().subscribe(new Sink());
    source.send(0, "hello");
    source.subscribers.get(0).onComplete();

    DiscardedBody<Object> discarded =
        new DiscardedBody<>(info503(), null, null, Long.MAX_VALUE, body);
    discarded.onSubscribe(NOTHING);
    discarded.onNext(List.of(ByteBuffer.wrap("busy".getBytes(StandardCharsets.UTF_8))));
    discarded.onComplete();

    assertThat(discarded.getBody().toCompletableFuture().join()).isSameAs(discarded);
    java.lang.reflect.Field f = DiscardedBody.class.getDeclaredField("requestBody");
    f.setAccessible(true);
    assertThat(f.get(discarded)).isNull();
  }
}
