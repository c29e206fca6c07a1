/**
 * Implementation, no compatibility promise (see {@code dev.retryagent.internal}): the engine's
 * parts that another module builds on. {@link dev.retryagent.internal.engine.RateLimiter}, the
 * per-host token bucket with 429 pauses, is also the fleet module's local fallback when Redis does
 * not answer. The rest of the engine's internals are package-private in {@code
 * dev.retryagent.engine}.
 */
package dev.retryagent.internal.engine;
