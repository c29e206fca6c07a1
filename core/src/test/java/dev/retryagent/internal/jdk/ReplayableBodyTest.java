package dev.retryagent.internal.jdk;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.net.http.HttpRequest.BodyPublisher;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Flow;
import org.junit.jupiter.api.Test;

/**
 * The copy a streamed body keeps for retries ({@link ReplayableBody}), driven by hand: the test is
 * the source publisher, and says what each of its subscriptions sends and when.
 */
class ReplayableBodyTest {
  /** A source that keeps its subscribers, for the test to send to. */
  private static final class Source implements BodyPublisher {
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
}
