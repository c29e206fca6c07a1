/**
 * The {@code HttpURLConnection} instrumentation: the hand-written class-file patch of the http and
 * https protocol handlers' {@code openConnection(URL, Proxy)} ({@code HandlerPatch}, no ASM: JCE
 * start-up loads those classes), the rewrite that counts the JDK's own resends, the entries its
 * hook numbers on {@code java.lang.RetryAgentBridge} reach, and the transport that opens each
 * attempt's fresh connection. Part of the agent, not a library: no compatibility promise.
 */
package dev.retryagent.agent.urlconnection;
