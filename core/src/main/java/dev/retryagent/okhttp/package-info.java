/**
 * API: retries for OkHttp 3.x, 4.x and 5.x in code you can change. {@link
 * dev.retryagent.okhttp.RetryInterceptor} is an application interceptor that retries inside {@code
 * execute} (and inside {@code enqueue}, holding a dispatcher thread while it waits); {@link
 * dev.retryagent.okhttp.AsyncRetrier} re-enqueues an asynchronous call instead of waiting, and is
 * what the agent uses. Supported: it changes only in a release that says so (docs/library.md).
 *
 * <p>Everything else here is package-private. Only this package of core may reference {@code
 * okhttp3} types: the agent defines it again next to each OkHttp copy it finds (a Spring Boot fat
 * jar, a child-first loader), so it must link against nothing but OkHttp and the rest of core.
 */
package dev.retryagent.okhttp;
