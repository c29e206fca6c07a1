package dev.retryagent.internal.engine;

import dev.retryagent.internal.observe.Sanitizer;
import java.util.Locale;

/**
 * The key of a target host, {@code scheme://host:port}, as the per-host state (breaker, budget,
 * rate limit, a 429's pause) and the metrics' host series write it, so that the two always agree,
 * and so that each spelling of one host makes the same key ({@link #host}): host names are
 * case-insensitive, a trailing dot names the same host (a fully qualified name), an IPv6 literal
 * comes with its brackets from the JDK's {@code URI} and without them from OkHttp's {@code
 * HttpUrl}, and may be written in many ways ({@code [0:0:0:0:0:0:0:1]} is {@code [::1]}). The port
 * is the effective one already ({@code RequestInfo#port}: 80 or 443 when the URL has none). Made
 * when a call first meets a host, and for log lines, never on a call's path to a host seen before.
 */
public final class TargetKey {
  private TargetKey() {}

  /** {@code scheme://host:port}, the host as {@link #host} writes it. */
  public static String of(String scheme, String host, int port) {
    // A null host is "null" there, as string concatenation writes it.
    return scheme + "://" + (host == null ? "null" : host(host)) + ":" + port;
  }

  /**
   * The one spelling of {@code host} (null: null): in lower case, without a trailing dot, an IPv6
   * literal in brackets and as RFC 5952 writes it ({@link Ipv6Text}), without what a client left in
   * it of a URL's user-info ({@link Sanitizer#host}). For every line that names a host: the key,
   * the log lines' request, a dead letter.
   */
  public static String host(String host) {
    if (host == null) {
      return null;
    }
    String h = Sanitizer.host(host.toLowerCase(Locale.ROOT));
    int from = 0;
    int to = h.length();
    if (to >= 2 && h.charAt(0) == '[' && h.charAt(to - 1) == ']') {
      from = 1;
      to--;
    }
    if (h.indexOf(':', from) >= 0) {
      String address = Ipv6Text.canonical(h, from, to);
      if (address == null) {
        return bracketed(h); // not an address: as it came, so that it still reads as one host
      }
      return address.indexOf(':') >= 0 ? "[" + address + "]" : address;
    }
    if (to - from > 1 && h.charAt(to - 1) == '.') {
      to--; // "api.example.com." is "api.example.com" (RFC 1034 section 3.1)
    }
    return from == 0 && to == h.length() ? h : h.substring(from, to);
  }

  /**
   * {@code host} as a URL writes it: an IPv6 literal in brackets ({@code ::1} is {@code [::1]}),
   * anything else as it is, but for what a client left in it of a URL's user-info ({@link
   * Sanitizer#host}). For every line that writes a host with a port after it, where {@code
   * ::1:8080} would not say which colon starts the port; a request's host goes through {@link
   * #host}.
   */
  public static String bracketed(String host) {
    String h = Sanitizer.host(host);
    return h != null && h.indexOf(':') >= 0 && !h.startsWith("[") ? "[" + h + "]" : h;
  }
}
