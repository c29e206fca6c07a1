package dev.retryagent.engine;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * What each attempt of a call will come to, in order, and a record of the attempts made: the server
 * of a scenario test. An attempt past the end of the script fails the test.
 */
final class Script {
  /** One attempt's result, and how long (on the fake clock) the attempt takes. */
  static final class Step {
    final FakeResponse response;
    final Throwable error;
    long takesNanos;
    Runnable during;

    private Step(FakeResponse response, Throwable error) {
      this.response = response;
      this.error = error;
    }

    Step takes(long nanos) {
      this.takesNanos = nanos;
      return this;
    }

    /** Runs while the attempt is in flight (e.g. marks a one-shot body as written). */
    Step during(Runnable r) {
      this.during = r;
      return this;
    }
  }

  /** What was asked of one attempt. */
  static final class Attempt {
    final int number;
    final long timeoutNanos;
    final long startNanos;

    Attempt(int number, long timeoutNanos, long startNanos) {
      this.number = number;
      this.timeoutNanos = timeoutNanos;
      this.startNanos = startNanos;
    }
  }

  private final FakeClock clock;
  private final List<Step> steps;
  private final List<Attempt> attempts = new ArrayList<>();

  Script(FakeClock clock, Step... steps) {
    this.clock = clock;
    this.steps = new ArrayList<>(Arrays.asList(steps));
  }

  static Step respond(int status) {
    return new Step(FakeResponse.of(status), null);
  }

  static Step respond(int status, String retryAfter) {
    return new Step(FakeResponse.of(status).header("Retry-After", retryAfter), null);
  }

  static Step fail(Throwable error) {
    return new Step(null, error);
  }

  private synchronized Step next(int number, long timeoutNanos) {
    attempts.add(new Attempt(number, timeoutNanos, clock.nanoTime()));
    if (attempts.size() > steps.size()) {
      throw new AssertionError("unexpected attempt " + number + ": the script has " + steps.size());
    }
    if (number != attempts.size()) {
      throw new AssertionError("attempt numbered " + number + " is really " + attempts.size());
    }
    Step s = steps.get(number - 1);
    if (s.during != null) {
      s.during.run();
    }
    clock.advance(s.takesNanos);
    return s;
  }

  /** The attempt of {@link SyncRetryLoop}. */
  FakeResponse runSync(int number, long timeoutNanos) throws IOException, InterruptedException {
    Step s = next(number, timeoutNanos);
    if (s.error == null) {
      return s.response;
    }
    if (s.error instanceof IOException) {
      throw (IOException) s.error;
    }
    if (s.error instanceof InterruptedException) {
      throw (InterruptedException) s.error;
    }
    if (s.error instanceof RuntimeException) {
      throw (RuntimeException) s.error;
    }
    throw (Error) s.error;
  }

  /** The attempt of {@link AsyncRetryLoop}: an already completed future. */
  CompletableFuture<FakeResponse> runAsync(int number, long timeoutNanos) {
    Step s = next(number, timeoutNanos);
    return s.error == null
        ? CompletableFuture.completedFuture(s.response)
        : CompletableFuture.failedFuture(s.error);
  }

  synchronized List<Attempt> attempts() {
    return new ArrayList<>(attempts);
  }

  synchronized int attemptCount() {
    return attempts.size();
  }

  /** Every response of the script that an attempt returned. */
  synchronized List<FakeResponse> responsesServed() {
    List<FakeResponse> served = new ArrayList<>();
    for (int i = 0; i < attempts.size(); i++) {
      if (steps.get(i).response != null) {
        served.add(steps.get(i).response);
      }
    }
    return served;
  }
}
