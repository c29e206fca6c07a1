/**
 * Fleet mode: one rate limit and one 429 pause per route, shared through Redis by every JVM of a
 * service, so that a quota per account (an LLM provider's, a payment gateway's) holds however many
 * instances run. See fleet/README.md for the design, the Lua scripts and the guarantees.
 *
 * <p>{@link dev.retryagent.fleet.FleetConnection} is the JVM's membership (a background thread
 * keeps Redis connected); {@link dev.retryagent.fleet.FleetRateLimiter} is one route's limit, with
 * the contract of the engine's per-host {@link dev.retryagent.internal.engine.RateLimiter}; {@link
 * dev.retryagent.fleet.FleetSettings} maps the configuration's {@code fleet} section. Redis is a
 * dependency of the fleet, never of the host: without it each JVM limits itself to its share.
 */
package dev.retryagent.fleet;
