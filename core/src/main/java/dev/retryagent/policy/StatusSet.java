package dev.retryagent.policy;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Locale;

/**
 * An immutable set of HTTP status codes, written as codes ({@code 503}), classes ({@code 5xx}) or
 * inclusive ranges ({@code 500-599}). Membership is a bit test: cheap on every response.
 * Thread-safe.
 */
public final class StatusSet {
  /** Lowest and highest status code a set may name. */
  public static final int MIN_STATUS = 100;

  public static final int MAX_STATUS = 999;

  private static final StatusSet EMPTY = new StatusSet(new long[16], Collections.emptyList());

  private final long[] bits;
  private final List<String> spec;

  private StatusSet(long[] bits, List<String> spec) {
    this.bits = bits;
    this.spec = spec;
  }

  /** The empty set. */
  public static StatusSet none() {
    return EMPTY;
  }

  /**
   * Parses each token as a code, a class or a range.
   *
   * @throws IllegalArgumentException naming the first token that is none of those
   */
  public static StatusSet of(List<String> tokens) {
    long[] bits = new long[16];
    List<String> spec = new ArrayList<>(tokens.size());
    for (String raw : tokens) {
      String token = raw.trim().toLowerCase(Locale.ROOT);
      int[] range = parseToken(token);
      if (range == null) {
        throw new IllegalArgumentException(
            "'"
                + raw
                + "' is not a status code, class or range (expected e.g. 503, 5xx or 500-599,"
                + " within "
                + MIN_STATUS
                + ".."
                + MAX_STATUS
                + ")");
      }
      for (int s = range[0]; s <= range[1]; s++) {
        bits[s >>> 6] |= 1L << (s & 63);
      }
      spec.add(token);
    }
    return new StatusSet(bits, Collections.unmodifiableList(spec));
  }

  /** Convenience for {@link #of(List)}. */
  public static StatusSet of(String... tokens) {
    return of(Arrays.asList(tokens));
  }

  /** True when {@code token} would be accepted by {@link #of(List)}. */
  public static boolean isValidToken(String token) {
    return parseToken(token.trim().toLowerCase(Locale.ROOT)) != null;
  }

  /** Returns {from, to} or null when the token is malformed or out of range. */
  private static int[] parseToken(String token) {
    if (token.length() == 3 && token.endsWith("xx")) {
      char c = token.charAt(0);
      if (c < '1' || c > '9') {
        return null;
      }
      int from = (c - '0') * 100;
      return new int[] {from, from + 99};
    }
    int dash = token.indexOf('-');
    int from;
    int to;
    if (dash > 0) {
      from = parseCode(token.substring(0, dash).trim());
      to = parseCode(token.substring(dash + 1).trim());
    } else {
      from = parseCode(token);
      to = from;
    }
    if (from < 0 || to < 0 || from > to) {
      return null;
    }
    return new int[] {from, to};
  }

  private static int parseCode(String s) {
    if (s.length() != 3) {
      return -1;
    }
    int v = 0;
    for (int i = 0; i < 3; i++) {
      char c = s.charAt(i);
      if (c < '0' || c > '9') {
        return -1;
      }
      v = v * 10 + (c - '0');
    }
    return v >= MIN_STATUS && v <= MAX_STATUS ? v : -1;
  }

  /** True when {@code status} is in the set. */
  public boolean contains(int status) {
    return status >= 0 && status <= MAX_STATUS && (bits[status >>> 6] & (1L << (status & 63))) != 0;
  }

  /** The tokens this set was written with, normalised to lower case. */
  public List<String> spec() {
    return spec;
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof StatusSet && Arrays.equals(bits, ((StatusSet) o).bits);
  }

  @Override
  public int hashCode() {
    return Arrays.hashCode(bits);
  }

  @Override
  public String toString() {
    return spec.toString();
  }
}
