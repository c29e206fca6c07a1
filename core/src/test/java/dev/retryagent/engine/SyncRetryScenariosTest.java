package dev.retryagent.engine;

/** {@link RetryScenarios} through {@link SyncRetryLoop}. */
class SyncRetryScenariosTest extends RetryScenarios {
  @Override
  Driver driver() {
    return Driver.SYNC;
  }
}
