package dev.retryagent.it.load;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.function.ToDoubleFunction;

/**
 * The soak app's {@code sample=MILLIS,THREADS,HEAP,CALLS_DONE,DEADLOCKED,AGENT_THREADS} lines, and
 * what the soak judges from them: after a warm-up (the first third), the last third is compared
 * with the middle third, by median, and a least-squares slope is fitted over both.
 */
final class Samples {
  /** One sample, taken after a full collection. */
  record Sample(
      long millis, int threads, long heapBytes, long callsDone, int deadlocked, int agentThreads) {}

  private final List<Sample> all;

  private Samples(List<Sample> all) {
    this.all = all;
  }

  static Samples parse(String stdout) {
    List<Sample> list = new ArrayList<>();
    for (String line : stdout.split("\\R")) {
      if (line.startsWith("sample=")) {
        String[] f = line.substring("sample=".length()).split(",");
        list.add(
            new Sample(
                Long.parseLong(f[0]),
                Integer.parseInt(f[1]),
                Long.parseLong(f[2]),
                Long.parseLong(f[3]),
                Integer.parseInt(f[4]),
                Integer.parseInt(f[5])));
      }
    }
    return new Samples(List.copyOf(list));
  }

  List<Sample> all() {
    return all;
  }

  List<Sample> middleThird() {
    return all.subList(all.size() / 3, 2 * all.size() / 3);
  }

  List<Sample> lastThird() {
    return all.subList(2 * all.size() / 3, all.size());
  }

  /** After the warm-up: the middle and last thirds. */
  List<Sample> afterWarmUp() {
    return all.subList(all.size() / 3, all.size());
  }

  static double median(List<Sample> samples, ToDoubleFunction<Sample> f) {
    double[] v = samples.stream().mapToDouble(f).sorted().toArray();
    int n = v.length;
    return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
  }

  static double max(List<Sample> samples, ToDoubleFunction<Sample> f) {
    return samples.stream().mapToDouble(f).max().orElse(Double.NaN);
  }

  static double min(List<Sample> samples, ToDoubleFunction<Sample> f) {
    return samples.stream().mapToDouble(f).min().orElse(Double.NaN);
  }

  /** Least-squares slope of {@code f} per minute over {@code samples}. */
  static double slopePerMinute(List<Sample> samples, ToDoubleFunction<Sample> f) {
    double[] x = samples.stream().mapToDouble(s -> s.millis() / 60_000.0).toArray();
    double[] y = samples.stream().mapToDouble(f).toArray();
    double mx = Arrays.stream(x).average().orElse(0);
    double my = Arrays.stream(y).average().orElse(0);
    double num = 0;
    double den = 0;
    for (int i = 0; i < x.length; i++) {
      num += (x[i] - mx) * (y[i] - my);
      den += (x[i] - mx) * (x[i] - mx);
    }
    return den == 0 ? 0 : num / den;
  }
}
