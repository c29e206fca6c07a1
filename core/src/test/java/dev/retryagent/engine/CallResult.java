package dev.retryagent.engine;

/** How a call ended for its caller: a response or an exception. */
final class CallResult {
  final FakeResponse response;
  final Throwable error;

  CallResult(FakeResponse response, Throwable error) {
    this.response = response;
    this.error = error;
  }

  int status() {
    if (response == null) {
      throw new AssertionError("the call failed with " + error, error);
    }
    return response.status;
  }

  @Override
  public String toString() {
    return response != null ? "response " + response : "error " + error;
  }
}
