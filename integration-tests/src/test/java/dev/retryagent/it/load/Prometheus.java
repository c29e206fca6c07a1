package dev.retryagent.it.load;

/** Reads the agent's Prometheus text (format 0.0.4). */
final class Prometheus {
  private Prometheus() {}

  /**
   * The sum of every sample of {@code family} labelled {@code route="ROUTE"} (over hosts, and
   * reasons where there are some); -1 when {@code text} is null (nothing was scraped).
   */
  static long sum(String text, String family, String route) {
    if (text == null) {
      return -1;
    }
    String prefix = family + "{route=\"" + route + "\"";
    long sum = 0;
    for (String line : text.split("\n")) {
      if (line.startsWith(prefix)) {
        sum += Long.parseLong(line.substring(line.lastIndexOf(' ') + 1));
      }
    }
    return sum;
  }
}
