package dev.retryagent.it.differential;

import java.util.ArrayList;
import java.util.List;

/**
 * The comparison of one case (or JVM-level check) on one combination {@code VARIANT/API@JDK}, with
 * the {@link Known markers} that cover it.
 *
 * @param check the case or check id
 * @param title what it is, in words
 * @param variant the driver variant ({@code java.net.http}, {@code okhttp-4.12.0})
 * @param api the API, or {@code jvm} for a JVM-level check
 * @param jdk the JDK's feature version
 * @param differences empty when the runs agree
 * @param markers the known differences that cover this combination
 * @param detail both observations, for the report
 * @param requests the server's request counts {@code WITHOUT→WITH}, empty for a JVM-level check
 */
record Verdict(
    String check,
    String title,
    String variant,
    String api,
    int jdk,
    List<String> differences,
    List<Known> markers,
    String detail,
    String requests) {

  String combination() {
    return combination(variant, api, jdk);
  }

  static String combination(String variant, String api, int jdk) {
    return variant + "/" + api + "@" + jdk;
  }

  boolean agrees() {
    return differences.isEmpty();
  }

  /** The differences no marker explains: each fails the test. */
  List<String> unexplained() {
    List<String> u = new ArrayList<>();
    for (String d : differences) {
      if (markers.stream().noneMatch(k -> k.explains(d))) {
        u.add(d);
      }
    }
    return u;
  }

  /** The markers that explain some difference. */
  List<Known> explaining() {
    List<Known> e = new ArrayList<>();
    for (Known k : markers) {
      if (differences.stream().anyMatch(k::explains)) {
        e.add(k);
      }
    }
    return e;
  }

  /** The markers that explain nothing here and are not intermittent: the bug is gone. */
  List<Known> stale() {
    List<Known> s = new ArrayList<>();
    for (Known k : markers) {
      if (!k.intermittent() && differences.stream().noneMatch(k::explains)) {
        s.add(k);
      }
    }
    return s;
  }

  /** "agrees" or "differs: ...", with the reasons of the markers, for the table. */
  String cell() {
    StringBuilder c = new StringBuilder(agrees() ? "agrees" : "differs: ");
    c.append(String.join("; ", differences));
    List<String> reasons = new ArrayList<>();
    explaining().forEach(k -> reasons.add(k.reason()));
    if (!reasons.isEmpty()) {
      c.append(" [known: ").append(String.join("; ", reasons)).append(']');
    }
    if (!agrees() && !unexplained().isEmpty()) {
      c.append(" [not explained by a marker]");
    }
    if (!stale().isEmpty()) {
      c.append(" [stale marker: ").append(stale().get(0).reason()).append(']');
    }
    return c.toString();
  }
}
