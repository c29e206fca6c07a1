package dev.retryagent.internal;

import java.util.List;

/**
 * The values of a response header that came in several lines, as every adapter hands them to the
 * engine ({@code ResponseAccess#header}): each line's value (in the order the client lists them:
 * HttpURLConnection's map has them last first), joined by a line feed, which no field value holds
 * (RFC 9110 section 5.5). The clients disagree on which line one look-up answers with
 * (java.net.http and Apache HttpClient the first, OkHttp and HttpURLConnection the last), so an
 * adapter that took its client's answer gave one response two meanings; with every line the engine
 * applies one rule whatever the client ({@code RetryAfter}). A header sent once, the usual case, is
 * its value itself: nothing is allocated for it.
 */
public final class FieldLines {
  /** Between two lines' values. */
  public static final char SEPARATOR = '\n';

  private FieldLines() {}

  /** {@code soFar} (null: no line yet) with the value of one more line after it. */
  public static String add(String soFar, String value) {
    return soFar == null ? value : soFar + SEPARATOR + value;
  }

  /** Every value of {@code values}, one per line received; null when there is none. */
  public static String of(List<String> values) {
    if (values == null || values.isEmpty()) {
      return null;
    }
    if (values.size() == 1) {
      return values.get(0);
    }
    StringBuilder b = new StringBuilder(values.get(0));
    for (int i = 1; i < values.size(); i++) {
      b.append(SEPARATOR).append(values.get(i));
    }
    return b.toString();
  }
}
