package dev.retryagent.cli;

import java.time.Duration;
import java.util.Collection;
import java.util.Locale;

/** Values written the way the configuration file writes them: {@code 250ms}, {@code 64KiB}, 50%. */
final class Units {
  private Units() {}

  /** {@code 250ms}, {@code 2s}, {@code 1m}, {@code 90s}, {@code 1h}; {@code none} for null. */
  static String duration(Duration d) {
    if (d == null) {
      return "none";
    }
    long nanos = d.toNanos();
    if (nanos % 1_000_000 != 0) {
      return nanos + "ns";
    }
    long ms = nanos / 1_000_000;
    if (ms == 0 || ms % 1000 != 0) {
      return ms + "ms";
    }
    long s = ms / 1000;
    if (s % 3600 == 0) {
      return s / 3600 + "h";
    }
    if (s % 60 == 0) {
      return s / 60 + "m";
    }
    return s + "s";
  }

  /** {@code 50%}, {@code 12.5%}. */
  static String percent(double ratio) {
    double p = ratio * 100;
    if (Math.abs(p - Math.rint(p)) < 1e-9) {
      return (long) Math.rint(p) + "%";
    }
    return String.format(Locale.ROOT, "%.2f", p).replaceAll("0+$", "") + "%";
  }

  /** {@code 64KiB}, {@code 1MiB}, {@code 512}. */
  static String size(long bytes) {
    if (bytes > 0 && bytes % (1024 * 1024) == 0) {
      return bytes / (1024 * 1024) + "MiB";
    }
    if (bytes > 0 && bytes % 1024 == 0) {
      return bytes / 1024 + "KiB";
    }
    return Long.toString(bytes);
  }

  /** {@code 2.0}, {@code 1.5}, {@code 50}. */
  static String number(double v) {
    if (Math.abs(v - Math.rint(v)) < 1e-9 && Math.abs(v) < 1e15) {
      return (long) Math.rint(v) + (v < 100 ? ".0" : "");
    }
    return Double.toString(v);
  }

  /** Items joined by {@code ", "}, or {@code none}. */
  static String list(Collection<?> items) {
    if (items.isEmpty()) {
      return "none";
    }
    StringBuilder b = new StringBuilder();
    for (Object o : items) {
      b.append(b.length() == 0 ? "" : ", ").append(o);
    }
    return b.toString();
  }
}
