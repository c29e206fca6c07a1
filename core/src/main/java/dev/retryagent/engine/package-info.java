/**
 * The retry engine: its API for applications and its SPI for client adapters. Every public type
 * here is supported: it changes only in a release that says so (docs/library.md), and {@code
 * core/api/public-api.txt} pins it.
 *
 * <h2>API: using the engine</h2>
 *
 * <ul>
 *   <li>{@link dev.retryagent.engine.RetryEngine}, built by {@link
 *       dev.retryagent.engine.RetryEngine.Builder}: the policies of the moment and the state shared
 *       by calls (per-host breakers, budgets, rate limiters); one per application.
 *   <li>What it is given: {@link dev.retryagent.engine.PolicyResolver} (the policy of a request;
 *       {@code AgentConfig::resolve} is one), and the injection points {@link
 *       dev.retryagent.engine.Clock}, {@link dev.retryagent.engine.Sleeper}, {@link
 *       dev.retryagent.engine.RandomSource} and {@link dev.retryagent.engine.Scheduler}, each with
 *       a production default.
 *   <li>What it tells: {@link dev.retryagent.engine.RetryListener} receives {@link
 *       dev.retryagent.engine.RetryEvent}s and breaker transitions ({@link
 *       dev.retryagent.engine.CircuitBreaker}, {@link dev.retryagent.engine.CircuitState}, {@link
 *       dev.retryagent.engine.CircuitTransition}); {@link dev.retryagent.engine.Outcome} and {@link
 *       dev.retryagent.engine.GiveUpReason} name what happened.
 *   <li>What a caller may catch: {@link dev.retryagent.engine.CircuitBreakerOpenException} and
 *       {@link dev.retryagent.engine.RateLimitedException}, both {@link java.io.IOException}s, so
 *       the error handling a caller already has covers them.
 * </ul>
 *
 * <h2>SPI: writing a client adapter</h2>
 *
 * An adapter (the decorating {@code HttpClient}, the OkHttp interceptor, the agent's hooks) views
 * its request as a {@link dev.retryagent.engine.RequestInfo}, starts a {@link
 * dev.retryagent.engine.RetryCall} with {@link
 * dev.retryagent.engine.RetryEngine#newCall(dev.retryagent.engine.RequestInfo)} and drives it with
 * {@link dev.retryagent.engine.SyncRetryLoop} or {@link dev.retryagent.engine.AsyncRetryLoop},
 * which read the client's responses through {@link dev.retryagent.engine.ResponseAccess}; or it
 * drives the call step by step as {@link dev.retryagent.engine.RetryCall} documents. Each attempt
 * ends in a {@link dev.retryagent.engine.Decision}; {@link
 * dev.retryagent.engine.CallBounds#shorterTimeout} is how an attempt's bound meets each of the
 * client's own timeouts. {@link dev.retryagent.engine.RetryRules} is the decision ladder alone,
 * over an {@link dev.retryagent.engine.AttemptResult}: what a tool that explains a decision without
 * making a call uses ({@code explain}).
 *
 * <p>The SPI shares this package with the API, rather than having an {@code spi} package of its
 * own, because {@link dev.retryagent.engine.RetryCall} is the per-call half of the engine: it
 * reaches the per-host state and the listeners through package-private methods of {@link
 * dev.retryagent.engine.RetryEngine}, which a separate package would force into the public API.
 *
 * <h2>Inside, no promise</h2>
 *
 * Package-private: backoff and jitter as pure functions, {@code Retry-After} parsing, the
 * classification of statuses and exceptions, the idempotency gate, the retry budget, the breaker's
 * outcome window, the bounded per-host registry, the listener fan-out and the shared scheduler. The
 * per-host rate limiter is in {@code dev.retryagent.internal.engine}, because the fleet module
 * builds on it. Time, sleep, randomness and scheduling are always injected.
 */
package dev.retryagent.engine;
