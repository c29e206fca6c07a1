/**
 * Classes appended to the bootstrap class path: the only agent code that instrumented JDK classes
 * can see. Signatures use {@code java.base} types only, because boot-loaded classes cannot link to
 * {@code java.net.http}. Keep this package tiny: every class here is visible to every class loader.
 */
package dev.retryagent.bootstrap;
