/**
 * The retry engine: one call runs through rate limit, circuit breaker, attempt, classification,
 * decision and wait, once per attempt; see {@link dev.retryagent.engine.RetryEngine} for the
 * nesting, {@link dev.retryagent.engine.RetryCall} for the steps and {@link
 * dev.retryagent.engine.RetryRules} for the decision ladder.
 *
 * <p>Pure functions ({@link dev.retryagent.engine.Backoff}, {@link
 * dev.retryagent.engine.RetryAfter}, {@link dev.retryagent.engine.Classifier}, {@link
 * dev.retryagent.engine.TransportClassifier}, {@link dev.retryagent.engine.IdempotencyGate}, {@link
 * dev.retryagent.engine.RetryRules}) hold the rules; per-host state ({@link
 * dev.retryagent.engine.CircuitBreaker}, {@link dev.retryagent.engine.RetryBudget}, {@link
 * dev.retryagent.internal.engine.RateLimiter}) is bounded and shared; per-call state lives in
 * {@link dev.retryagent.engine.RetryCall}. Time, sleep, randomness and scheduling are injected.
 */
package dev.retryagent.engine;
