package dev.retryagent.it.differential;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.Map;
import java.util.Set;

/**
 * Writes the fault matrix of a run ({@link FaultCases}) as one Markdown table: a row per case, a
 * column per client variant, each cell the server's request counts {@code WITHOUT→WITH} (the
 * distinct ones over the variant's APIs and JDKs) and a mark when a check failed there. The suite
 * writes it to {@code target/fault-matrix.md}; docs/guarantees.md quotes it.
 */
final class FaultMatrixTable {
  private FaultMatrixTable() {}

  static void write(Path file, java.util.List<Verdict> verdicts) {
    Set<String> variants = new LinkedHashSet<>();
    Map<String, Map<String, Set<String>>> cells = new LinkedHashMap<>();
    Map<String, Map<String, Boolean>> agree = new LinkedHashMap<>();
    for (Verdict v : verdicts) {
      if (!v.check().startsWith("fault-")) {
        continue;
      }
      variants.add(v.variant());
      cells
          .computeIfAbsent(v.check(), k -> new LinkedHashMap<>())
          .computeIfAbsent(v.variant(), k -> new LinkedHashSet<>())
          .add(v.requests());
      agree
          .computeIfAbsent(v.check(), k -> new LinkedHashMap<>())
          .merge(v.variant(), v.agrees(), Boolean::logicalAnd);
    }
    if (cells.isEmpty()) {
      return;
    }
    StringBuilder md =
        new StringBuilder("# Fault matrix: requests on the server, without→with the agent\n\n");
    md.append("A cell lists the distinct counts over the variant's APIs and JDKs; ✗ marks a")
        .append(" difference or a failed check (see differential-results.md).\n\n| case |");
    variants.forEach(v -> md.append(' ').append(v).append(" |"));
    md.append("\n|---|");
    variants.forEach(v -> md.append("---|"));
    md.append('\n');
    cells.forEach(
        (id, row) -> {
          md.append("| ").append(id).append(" |");
          for (String v : variants) {
            Set<String> counts = row.get(v);
            md.append(' ')
                .append(counts == null ? "n/a" : String.join(", ", counts))
                .append(counts != null && !agree.get(id).get(v) ? " ✗" : "")
                .append(" |");
          }
          md.append('\n');
        });
    try {
      Files.createDirectories(file.toAbsolutePath().getParent());
      Files.writeString(file, md, StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
