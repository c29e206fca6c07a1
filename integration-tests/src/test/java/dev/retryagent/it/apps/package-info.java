/**
 * Small applications run in forked JVMs with the agent. They contain no retry code and reference
 * nothing of the agent or of the tests: what they print on stdout ({@code key=value} lines) is what
 * the tests check.
 */
package dev.retryagent.it.apps;
