/**
 * API: the policy model, immutable values built by validating builders. {@link
 * dev.retryagent.policy.Policy} groups a route's sections ({@link
 * dev.retryagent.policy.RetryPolicy} with its {@link dev.retryagent.policy.BackoffPolicy}, {@link
 * dev.retryagent.policy.BudgetPolicy}, {@link dev.retryagent.policy.CircuitBreakerPolicy}, {@link
 * dev.retryagent.policy.RateLimitPolicy}); the enums name the configuration's choices. Every type
 * is immutable and thread-safe; a builder is not thread-safe, and what it builds copies its
 * collections, so a built policy never changes. Supported: it changes only in a release that says
 * so (docs/library.md).
 *
 * <p>Every default is a named constant in the class that owns it and matches {@code
 * docs/configuration.md}, and so do the upper bounds, which the configuration's checks read from
 * the same constants. Builders reject values outside the documented range, and nulls, with an
 * {@link IllegalArgumentException} that names the field and the value. Policies implement {@code
 * equals} so that a configuration reload can keep the state (breakers, budgets) of unchanged
 * policies.
 */
package dev.retryagent.policy;
