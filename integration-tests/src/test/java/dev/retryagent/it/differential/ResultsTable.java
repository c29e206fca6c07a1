package dev.retryagent.it.differential;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Writes every verdict of a run as Markdown: one table per client, a row per case and API, a column
 * per variant and JDK, each cell "agrees" or "differs: what", with the reasons of the markers that
 * explain it. The suite writes it to {@code target/differential-results.md} on every run.
 */
final class ResultsTable {
  private ResultsTable() {}

  static void write(Path file, List<Verdict> verdicts, String header) {
    StringBuilder md = new StringBuilder(header).append('\n');
    Map<String, List<Verdict>> byClient = new LinkedHashMap<>();
    for (Verdict v : verdicts) {
      byClient.computeIfAbsent(client(v.variant()), k -> new ArrayList<>()).add(v);
    }
    byClient.forEach((client, vs) -> table(md, client, vs));
    try {
      Files.createDirectories(file.getParent());
      Files.writeString(file, md, StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private static String client(String variant) {
    return variant.replaceAll("-[0-9.]+$", "");
  }

  private static void table(StringBuilder md, String client, List<Verdict> vs) {
    Set<String> columns = new LinkedHashSet<>();
    Map<String, Map<String, Verdict>> rows = new LinkedHashMap<>();
    for (Verdict v : vs) {
      String column = v.variant() + ", JDK " + v.jdk();
      columns.add(column);
      rows.computeIfAbsent(v.check() + " | " + v.api(), k -> new LinkedHashMap<>()).put(column, v);
    }
    md.append("\n## ").append(client).append("\n\n| case | API |");
    columns.forEach(c -> md.append(' ').append(c).append(" |"));
    md.append("\n|---|---|");
    columns.forEach(c -> md.append("---|"));
    md.append('\n');
    rows.forEach(
        (row, cells) -> {
          md.append("| ").append(row).append(" |");
          for (String c : columns) {
            Verdict v = cells.get(c);
            md.append(' ').append(v == null ? "n/a" : escape(v)).append(" |");
          }
          md.append('\n');
        });
  }

  private static String escape(Verdict v) {
    return v.cell().replace("|", "\\|").replace("\n", " ");
  }
}
