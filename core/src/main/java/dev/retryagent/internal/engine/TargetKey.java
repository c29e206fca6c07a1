package dev.retryagent.internal.engine;

import dev.retryagent.internal.observe.Sanitizer;
import java.util.Locale;

/**
 * The key of a target host, {@code scheme://host:port}, as the per-host state (breaker, budget,
 * rate limit) and the metrics' host series write it, so that the two always agree: host names are
 * case-insensitive, and an IPv6 literal comes with its brackets from the JDK's {@code URI} and
 * without them from OkHttp's {@code HttpUrl}, so each spelling of one host makes the same key. The
 * literal is written as in a URL, {@code [::1]}, so that the key reads unambiguously with its port.
 */
public final class TargetKey {
  private TargetKey() {}

  /**
   * {@code scheme://host:port}, the host in lower case, an IPv6 literal in brackets, without what a
   * client left in it of a URL's user-info ({@link #bracketed}).
   */
  public static String of(String scheme, String host, int port) {
    // A null host is "null" there, as string concatenation writes it.
    String h = host == null ? "null" : host.toLowerCase(Locale.ROOT);
    return scheme + "://" + bracketed(h) + ":" + port;
  }

  /**
   * {@code host} as a URL writes it: an IPv6 literal in brackets ({@code ::1} is {@code [::1]}),
   * anything else as it is, but for what a client left in it of a URL's user-info ({@link
   * Sanitizer#host}). For every line that writes a host with a port after it, where {@code
   * ::1:8080} would not say which colon starts the port.
   */
  public static String bracketed(String host) {
    String h = Sanitizer.host(host);
    return h != null && h.indexOf(':') >= 0 && !h.startsWith("[") ? "[" + h + "]" : h;
  }
}
