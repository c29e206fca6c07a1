/**
 * The policy model: immutable values built by validating builders.
 *
 * <p>Every default is a named constant in the class that owns it and matches {@code
 * docs/configuration.md}, and so do the upper bounds, which the configuration's checks read from
 * the same constants. Builders reject values outside the documented range with an {@link
 * IllegalArgumentException} that names the field and the value. Policies implement {@code equals}
 * so that a configuration reload can keep the state (breakers, budgets) of unchanged policies.
 */
package dev.retryagent.policy;
