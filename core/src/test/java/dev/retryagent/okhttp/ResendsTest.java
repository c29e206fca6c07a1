package dev.retryagent.okhttp;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retryagent.engine.RetryCall;
import dev.retryagent.engine.RetryEngine;
import dev.retryagent.policy.CircuitBreakerPolicy;
import dev.retryagent.policy.Mode;
import dev.retryagent.testing.FakeRequest;
import dev.retryagent.testing.FakeTime;
import dev.retryagent.testing.TestEngines;
import java.util.ArrayList;
import java.util.concurrent.atomic.AtomicReference;
import okhttp3.Call;
import okhttp3.MediaType;
import okhttp3.OkHttpClient;
import okhttp3.Request;
import okhttp3.RequestBody;
import org.junit.jupiter.api.Test;

/**
 * Which attempt a request OkHttp sends belongs to ({@link Resends}): the one running on the thread,
 * if the request is of its call; nested attempts of other calls; what is left when an attempt ends.
 * The calls here are never executed: the hook's and the network interceptor's calls are made by
 * hand, as OkHttp would make them.
 */
class ResendsTest {
  private final RetryEngine engine =
      TestEngines.engine(
          new FakeTime(), Mode.ENFORCE, r -> r, CircuitBreakerPolicy.defaults(), new ArrayList<>());
  private final OkHttpClient client = new OkHttpClient();
  private final Resends resends = new Resends().handOut();

  private Call okCall(String path) {
    return client.newCall(new Request.Builder().url("http://127.0.0.1:9" + path).build());
  }

  private RetryCall begunCall() throws Exception {
    RetryCall call = engine.newCall(FakeRequest.get());
    call.beginAttempt();
    return call;
  }

  private static Request guardedPost() {
    RequestBody body = RequestBody.create(MediaType.get("text/plain"), "{}");
    return new Request.Builder()
        .url("http://127.0.0.1:9/pay")
        .post(new ResendGuard.Body(body, null, true))
        .build();
  }

  @Test
  void aRequestAfterAFailedOneInTheSameAttemptIsOneResendAndTheBodyTurnsOneShot() throws Exception {
    Call ok = okCall("/a");
    RetryCall call = begunCall();
    Request post = guardedPost();
    Object begun = resends.begin(ok, call, post);

    resends.sending(ok);
    assertThat(post.body().isOneShot()).isFalse(); // a redirect may still send it again
    resends.failed(ok);
    assertThat(post.body().isOneShot()).isTrue(); // OkHttp asks this next
    resends.sending(ok); // OkHttp resent it anyway (a GET would be: no body to guard)
    resends.sending(ok); // a redirect after the resend: not a resend
    resends.end(begun);

    assertThat(call.attempt()).isEqualTo(2);
  }

  @Test
  void requestsOfAnotherCallOnTheSameThreadCountForNothing() throws Exception {
    Call ok = okCall("/a");
    Call other = okCall("/b"); // an authenticator's or an interceptor's own call, not counted
    RetryCall call = begunCall();
    Request post = guardedPost();
    Object begun = resends.begin(ok, call, post);

    resends.failed(other);
    resends.sending(other);
    resends.sending(ok);
    resends.end(begun);

    assertThat(call.attempt()).isEqualTo(1);
    assertThat(post.body().isOneShot()).isFalse();
  }

  @Test
  void anAttemptOfAnotherCallInsideAnAttemptNestsAndTheOuterOneGoesOnAfterIt() throws Exception {
    Call outer = okCall("/outer");
    Call inner = okCall("/inner");
    RetryCall outerCall = begunCall();
    RetryCall innerCall = begunCall();
    Object outerBegun = resends.begin(outer, outerCall, guardedPost());
    resends.sending(outer);
    resends.failed(outer);

    Object innerBegun = resends.begin(inner, innerCall, guardedPost());
    resends.sending(inner);
    resends.sending(outer); // not the attempt that runs now
    resends.failed(inner);
    resends.sending(inner);
    resends.end(innerBegun);

    resends.sending(outer); // OkHttp's resend of the outer request
    resends.end(outerBegun);

    assertThat(innerCall.attempt()).isEqualTo(2);
    assertThat(outerCall.attempt()).isEqualTo(2);
  }

  @Test
  void afterTheAttemptNothingIsCountedAndTheThreadHoldsNothingOfIt() throws Exception {
    Call ok = okCall("/a");
    RetryCall call = begunCall();
    Request post = guardedPost();
    resends.end(resends.begin(ok, call, post));

    resends.failed(ok); // the application's own request on the same call object, after the attempt
    resends.sending(ok);

    assertThat(call.attempt()).isEqualTo(1);
    assertThat(post.body().isOneShot()).isFalse();
  }

  @Test
  void neverHandedOutItCountsNothing() throws Exception {
    Resends unused = new Resends();
    Call ok = okCall("/a");
    RetryCall call = begunCall();
    Request post = guardedPost();
    Object begun = unused.begin(ok, call, post);

    unused.failed(ok);
    unused.sending(ok);
    unused.end(begun);

    assertThat(call.attempt()).isEqualTo(1);
    assertThat(post.body().isOneShot()).isFalse();
  }

  @Test
  void asANetworkInterceptorItIsToldOnlyOfTheCallsOfAClientThatHoldsIt() {
    // One interceptor serves many clients; the network interceptor may be on some of them only.
    Resends shared = new Resends().handOut();
    OkHttpClient with = new OkHttpClient.Builder().addNetworkInterceptor(shared).build();
    Request get = new Request.Builder().url("http://127.0.0.1:9/a").build();

    assertThat(shared.told(with.newCall(get))).isTrue();
    assertThat(shared.told(client.newCall(get))).isFalse(); // before: true, as for the other
    assertThat(new Resends().hook().told(client.newCall(get))).isTrue(); // a hook hears every call
    assertThat(new Resends().told(with.newCall(get))).isFalse(); // never handed out
  }

  @Test
  void eachThreadCountsItsOwnAttempt() throws Exception {
    Call ok = okCall("/a");
    RetryCall call = begunCall();
    Object begun = resends.begin(ok, call, guardedPost());
    resends.failed(ok);
    AtomicReference<Throwable> failure = new AtomicReference<>();

    // Another thread sending the same call's request belongs to no attempt of this one.
    Thread other = new Thread(() -> resends.sending(ok), "test-other");
    other.setUncaughtExceptionHandler((t, e) -> failure.set(e));
    other.start();
    other.join(10_000);
    resends.end(begun);

    assertThat(failure.get()).isNull();
    assertThat(call.attempt()).isEqualTo(1);
  }
}
