package dev.retryagent.internal.engine;

/**
 * The one spelling of an IPv6 literal, so that {@code [0:0:0:0:0:0:0:1]}, {@code [::0001]} and
 * {@code [::1]} are one host to the per-host state, the metrics and the routes: RFC 5952 section 4
 * (hexadecimal in lower case, no leading zeros, the longest run of two or more zero groups written
 * {@code ::}, the first of two as long), as OkHttp's {@code HttpUrl} writes it. An IPv4-mapped
 * address ({@code ::ffff:127.0.0.1}) is its IPv4 address, {@code 127.0.0.1}, as OkHttp and the
 * JDK's {@code InetAddress} take it, but with a zone ({@code ::ffff:a00:1%eth0}: an IPv4 address
 * has none). A zone ({@code %eth0}) is kept as written, its case too: it names an interface, and
 * {@code eth0} and {@code ETH0} may be two. Text only: no name is looked up. The text is given
 * without brackets, as {@code s[from, to)}.
 */
public final class Ipv6Text {
  private Ipv6Text() {}

  /**
   * The canonical text of the address in {@code s[from, to)}, or null when that is no IPv6 address.
   * Allocates; {@link #isCanonical} first where it matters.
   */
  public static String canonical(String s, int from, int to) {
    int zone = s.indexOf('%', from);
    int end = zone < 0 || zone >= to ? to : zone;
    int[] groups = new int[8];
    if (!parse(s, from, end, groups)) {
      return null;
    }
    StringBuilder b = new StringBuilder(to - from + 8);
    // With a zone, a mapped address stays IPv6: an IPv4 address has no zone, and a host written
    // 10.0.0.1%eth0 is neither an IPv4 nor, without brackets, an IPv6 literal.
    if (isIpv4Mapped(groups) && end == to) {
      b.append(groups[6] >>> 8).append('.').append(groups[6] & 0xff).append('.');
      b.append(groups[7] >>> 8).append('.').append(groups[7] & 0xff);
    } else {
      write(groups, b);
    }
    return end < to ? b.append(s, end, to).toString() : b.toString();
  }

  /**
   * True when {@code s[from, to)} is an IPv6 address written as {@link #canonical} writes it (a
   * zone after it as it may be): read as text, without allocating, for the per-call path of a
   * route's host match.
   */
  public static boolean isCanonical(String s, int from, int to) {
    int zone = s.indexOf('%', from);
    int end = zone < 0 || zone >= to ? to : zone;
    int i = from;
    int groups = 0;
    int compressedAt = -1;
    int run = 0; // explicit zero groups in a row
    int longestBefore = 0; // the longest such run before the '::'
    int longestAfter = 0;
    boolean lastWasZero = false;
    boolean firstAfterIsFfff = false;
    if (end - i >= 2 && s.charAt(i) == ':' && s.charAt(i + 1) == ':') {
      compressedAt = 0;
      i += 2;
    }
    while (i < end) {
      int start = i;
      while (i < end && i - start < 5 && isLowerHex(s.charAt(i))) {
        i++;
      }
      int len = i - start;
      if (len == 0 || len > 4 || (len > 1 && s.charAt(start) == '0')) {
        return false; // empty, too long, a leading zero, or a character no canonical text holds
      }
      boolean zero = len == 1 && s.charAt(start) == '0';
      if (zero && compressedAt >= 0 && groups == compressedAt) {
        return false; // a zero right after '::' belongs in it
      }
      if (compressedAt == 0 && groups == 0) {
        firstAfterIsFfff = len == 4 && s.regionMatches(start, "ffff", 0, 4);
      }
      groups++;
      run = zero ? run + 1 : 0;
      if (compressedAt < 0) {
        longestBefore = Math.max(longestBefore, run);
      } else {
        longestAfter = Math.max(longestAfter, run);
      }
      lastWasZero = zero;
      if (i == end) {
        break;
      }
      if (s.charAt(i) != ':' || groups == 8) {
        return false;
      }
      i++;
      if (i < end && s.charAt(i) == ':') {
        if (compressedAt >= 0 || lastWasZero) {
          return false; // a second '::', or a zero right before it that belongs in it
        }
        compressedAt = groups;
        run = 0;
        i++;
      } else if (i == end) {
        return false; // a single ':' at the end
      }
    }
    if (compressedAt < 0) {
      return groups == 8 && longestBefore < 2;
    }
    int compressed = 8 - groups;
    // The longest run is the one compressed, and the first of two as long; an IPv4-mapped address
    // is written as its IPv4 address, unless it has a zone.
    return compressed >= 2
        && longestBefore < compressed
        && longestAfter <= compressed
        && !(compressedAt == 0 && groups == 3 && firstAfterIsFfff && compressed == 5 && end == to);
  }

  private static boolean isLowerHex(char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
  }

  private static int hex(char c) {
    if (c >= '0' && c <= '9') {
      return c - '0';
    }
    if (c >= 'a' && c <= 'f') {
      return c - 'a' + 10;
    }
    if (c >= 'A' && c <= 'F') {
      return c - 'A' + 10;
    }
    return -1;
  }

  /** Reads {@code s[from, end)} into 8 groups; false when it is no IPv6 address. */
  private static boolean parse(String s, int from, int end, int[] groups) {
    int n = 0;
    int compressedAt = -1;
    int i = from;
    if (end - i >= 2 && s.charAt(i) == ':' && s.charAt(i + 1) == ':') {
      compressedAt = 0;
      i += 2;
    } else if (i < end && s.charAt(i) == ':') {
      return false;
    }
    while (i < end) {
      if (n == 8) {
        return false;
      }
      int start = i;
      int value = 0;
      while (i < end && i - start < 5 && hex(s.charAt(i)) >= 0) {
        value = value * 16 + hex(s.charAt(i));
        i++;
      }
      if (i < end && s.charAt(i) == '.') {
        // An IPv4 address in the last two groups (RFC 4291 section 2.2).
        long v4 = ipv4(s, start, end);
        if (v4 < 0 || n > 6) {
          return false;
        }
        groups[n++] = (int) (v4 >>> 16);
        groups[n++] = (int) (v4 & 0xffff);
        break;
      }
      if (i - start == 0 || i - start > 4) {
        return false;
      }
      groups[n++] = value;
      if (i == end) {
        break;
      }
      if (s.charAt(i) != ':') {
        return false;
      }
      i++;
      if (i < end && s.charAt(i) == ':') {
        if (compressedAt >= 0) {
          return false;
        }
        compressedAt = n;
        i++;
      } else if (i == end) {
        return false;
      }
    }
    if (compressedAt < 0) {
      return n == 8;
    }
    if (n == 8) {
      return false; // '::' stands for one zero group at least
    }
    int moved = n - compressedAt;
    System.arraycopy(groups, compressedAt, groups, 8 - moved, moved);
    java.util.Arrays.fill(groups, compressedAt, 8 - moved, 0);
    return true;
  }

  /** The IPv4 address in {@code s[from, end)} as a number, or -1. */
  private static long ipv4(String s, int from, int end) {
    long v = 0;
    int parts = 0;
    int i = from;
    while (i < end) {
      int start = i;
      int part = 0;
      while (i < end && i - start < 4 && s.charAt(i) >= '0' && s.charAt(i) <= '9') {
        part = part * 10 + (s.charAt(i) - '0');
        i++;
      }
      // No leading zeros: 010 is octal to some readers and decimal to others.
      if (i == start || i - start > 3 || part > 255 || (i - start > 1 && s.charAt(start) == '0')) {
        return -1;
      }
      v = (v << 8) | part;
      parts++;
      if (i == end) {
        break;
      }
      if (s.charAt(i) != '.' || parts == 4) {
        return -1;
      }
      i++;
      if (i == end) {
        return -1;
      }
    }
    return parts == 4 ? v : -1;
  }

  private static boolean isIpv4Mapped(int[] g) {
    return g[0] == 0 && g[1] == 0 && g[2] == 0 && g[3] == 0 && g[4] == 0 && g[5] == 0xffff;
  }

  /**
   * RFC 5952 section 4.2: the longest run of two or more zero groups, the first of equals, as ::.
   */
  private static void write(int[] g, StringBuilder b) {
    int bestAt = -1;
    int bestLength = 1;
    for (int i = 0; i < 8; ) {
      int j = i;
      while (j < 8 && g[j] == 0) {
        j++;
      }
      if (j - i > bestLength) {
        bestAt = i;
        bestLength = j - i;
      }
      i = j == i ? i + 1 : j;
    }
    for (int i = 0; i < 8; i++) {
      if (i == bestAt) {
        b.append("::");
        i += bestLength - 1;
        continue;
      }
      if (i > 0 && i != bestAt + bestLength) {
        b.append(':');
      }
      b.append(Integer.toHexString(g[i]));
    }
  }
}
