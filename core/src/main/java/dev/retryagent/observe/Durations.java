package dev.retryagent.observe;

/** Durations for humans: {@code 117ms}, {@code 2.5s}, {@code 30s}, {@code 1m30s}, {@code 2h5m}. */
final class Durations {
  private Durations() {}

  static String human(long nanos) {
    long ms = Math.max(0, nanos) / 1_000_000;
    if (ms < 1000) {
      return ms + "ms";
    }
    if (ms < 60_000) {
      long tenths = ms / 100;
      return tenths % 10 == 0 ? tenths / 10 + "s" : tenths / 10 + "." + tenths % 10 + "s";
    }
    long s = ms / 1000;
    if (s < 3600) {
      return s / 60 + "m" + (s % 60 == 0 ? "" : s % 60 + "s");
    }
    long m = s / 60;
    return m / 60 + "h" + (m % 60 == 0 ? "" : m % 60 + "m");
  }

  static String humanMillis(long millis) {
    return human(millis * 1_000_000);
  }
}
