package dev.retryagent.engine;

/** A {@link RandomSource} that returns the given values in turn, repeating the last one. */
final class ScriptedRandom implements RandomSource {
  private final double[] values;
  private int next;

  ScriptedRandom(double... values) {
    if (values.length == 0) {
      throw new IllegalArgumentException("at least one value");
    }
    for (double v : values) {
      if (!(v >= 0 && v < 1)) {
        throw new IllegalArgumentException("not in [0, 1): " + v);
      }
    }
    this.values = values.clone();
  }

  @Override
  public synchronized double nextDouble() {
    double v = values[Math.min(next, values.length - 1)];
    next++;
    return v;
  }

  synchronized int drawn() {
    return next;
  }
}
