package dev.retryagent.internal.engine;

import dev.retryagent.internal.observe.Sanitizer;
import java.net.IDN;
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
   * The one spelling of {@code host} (null: null): in lower case, without a trailing dot, a name
   * with a label in Unicode in its ASCII form ({@link #ascii}), an IPv6 literal in brackets and as
   * RFC 5952 writes it ({@link Ipv6Text}), its zone as written, without what a client left in it of
   * a URL's user-info ({@link Sanitizer#host}). For every line that names a host: the key, the log
   * lines' request, a dead letter.
   */
  public static String host(String host) {
    if (host == null) {
      return null;
    }
    String h = Sanitizer.host(host);
    int zone = h.indexOf('%');
    // An IPv6 zone (fe80::1%eth0) names an interface, which some systems tell apart by case.
    h =
        zone > 0 && h.lastIndexOf(':', zone) >= 0
            ? h.substring(0, zone).toLowerCase(Locale.ROOT) + h.substring(zone)
            : h.toLowerCase(Locale.ROOT);
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
    if (from == 0 && !isAscii(h)) {
      h = ascii(h);
      to = h.length();
    }
    if (to - from > 1 && h.charAt(to - 1) == '.') {
      to--; // "api.example.com." is "api.example.com" (RFC 1034 section 3.1)
    }
    return from == 0 && to == h.length() ? h : h.substring(from, to);
  }

  /** True when {@code text} is all ASCII: a host name, a pattern, no Unicode label in it. */
  public static boolean isAscii(String text) {
    for (int i = 0; i < text.length(); i++) {
      if (text.charAt(i) > 0x7f) {
        return false;
      }
    }
    return true;
  }

  /**
   * {@code name} with each label that holds a character past ASCII in its ASCII form ({@code
   * bücher.example} is {@code xn--bcher-kva.example}), as OkHttp sends it and as the JDK's {@link
   * IDN#toASCII} writes it, in lower case; the other labels, a glob's {@code *} among them, as they
   * are. The dots of other scripts ({@code 。}) separate labels, as IDNA says. Lenient: a label IDNA
   * refuses (too long, say) stays as written, and so does a Unicode label with a glob's {@code *}.
   * Text only: no name is looked up.
   */
  public static String ascii(String name) {
    String s = name.replace('\u3002', '.').replace('\uff0e', '.').replace('\uff61', '.');
    StringBuilder b = new StringBuilder(s.length() + 16);
    int start = 0;
    while (start <= s.length()) {
      int dot = s.indexOf('.', start);
      int end = dot < 0 ? s.length() : dot;
      String label = s.substring(start, end);
      // A glob's '*' in a Unicode label: its ASCII form would be no glob of the names it means.
      if (!isAscii(label) && label.indexOf('*') < 0) {
        try {
          label = IDN.toASCII(label, IDN.ALLOW_UNASSIGNED).toLowerCase(Locale.ROOT);
        } catch (IllegalArgumentException refused) {
          // kept as written: still one host, and the same one wherever it is written
        }
      }
      b.append(label);
      if (dot < 0) {
        break;
      }
      b.append('.');
      start = dot + 1;
    }
    return b.toString();
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
