package dev.retryagent.engine;

/** {@link RetryScenarios} through {@link AsyncRetryLoop}. */
class AsyncRetryScenariosTest extends RetryScenarios {
  @Override
  Driver driver() {
    return Driver.ASYNC;
  }
}
