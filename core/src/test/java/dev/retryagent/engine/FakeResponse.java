package dev.retryagent.engine;

import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicInteger;

/** A response that counts how often the engine discarded it. */
final class FakeResponse {
  final int status;
  private final Map<String, String> headers = new TreeMap<>(String.CASE_INSENSITIVE_ORDER);
  final AtomicInteger discards = new AtomicInteger();

  FakeResponse(int status) {
    this.status = status;
  }

  static FakeResponse of(int status) {
    return new FakeResponse(status);
  }

  FakeResponse header(String name, String value) {
    headers.put(name, value);
    return this;
  }

  String header(String name) {
    return headers.get(name);
  }

  @Override
  public String toString() {
    return "FakeResponse[" + status + ", discards=" + discards + "]";
  }

  /** The {@link ResponseAccess} of fake responses. */
  static final ResponseAccess<FakeResponse> ACCESS = discarding(null);

  /** {@link #ACCESS} that copies a response before its release, as the real adapters do. */
  static final ResponseAccess<FakeResponse> COPYING =
      new Delegating() {
        @Override
        public FakeResponse copyToGiveBack(FakeResponse response) {
          return of(response.status);
        }
      };

  /** {@link #ACCESS}, for a test to override what a copy does. */
  static class Delegating implements ResponseAccess<FakeResponse> {
    @Override
    public int status(FakeResponse response) {
      return ACCESS.status(response);
    }

    @Override
    public String header(FakeResponse response, String name) {
      return ACCESS.header(response, name);
    }

    @Override
    public void discard(FakeResponse response) {
      ACCESS.discard(response);
    }
  }

  /** {@link #ACCESS}, whose discard runs {@code alsoOnDiscard} (null: nothing) too. */
  static ResponseAccess<FakeResponse> discarding(Runnable alsoOnDiscard) {
    return new ResponseAccess<FakeResponse>() {
      @Override
      public int status(FakeResponse response) {
        return response.status;
      }

      @Override
      public String header(FakeResponse response, String name) {
        return response.header(name);
      }

      @Override
      public void discard(FakeResponse response) {
        response.discards.incrementAndGet();
        if (alsoOnDiscard != null) {
          alsoOnDiscard.run();
        }
      }
    };
  }
}
