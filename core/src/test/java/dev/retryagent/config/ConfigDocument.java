package dev.retryagent.config;

import dev.retryagent.config.ConfigSchema.Leaf;
import dev.retryagent.config.ConfigSchema.Section;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * docs/configuration.md as the tests read it: the rows of its key tables. A key table has the
 * header {@link #HEADER}; its keys are relative to the first code span of the heading above it (a
 * heading without one is the top level). A policy key is documented once ({@code retry.deadline})
 * for {@code defaults} and every route; a route's own keys are under {@code routes[]}.
 */
final class ConfigDocument {
  static final Path FILE = Path.of("..", "docs", "configuration.md");
  static final String HEADER = "| key | default | accepts | meaning |";

  /** The default cell of a key that has none. */
  static final String NO_DEFAULT = "—";

  /** One row of a key table. */
  static final class Row {
    /**
     * {@code version}, {@code agent.mode}, {@code retry.backoff.initial}, {@code routes[].name}.
     */
    final String key;

    /** The default as YAML text, or null for a key without one. */
    final String defaultText;

    final String accepts;
    final String meaning;
    final int line;

    Row(String key, String defaultText, String accepts, String meaning, int line) {
      this.key = key;
      this.defaultText = defaultText;
      this.accepts = accepts;
      this.meaning = meaning;
      this.line = line;
    }

    /** The meaning as plain text, for the JSON schema's descriptions. */
    String plainMeaning() {
      return meaning.replace("`", "");
    }

    @Override
    public String toString() {
      return "docs/configuration.md:" + line + " " + key;
    }
  }

  private ConfigDocument() {}

  /** Every row of every key table, in document order. */
  static List<Row> rows() {
    List<String> lines =
        ConfigFiles.read(FILE).lines().collect(java.util.stream.Collectors.toList());
    List<Row> out = new ArrayList<>();
    String prefix = "";
    for (int i = 0; i < lines.size(); i++) {
      String line = lines.get(i);
      if (line.startsWith("#")) {
        String span = codeSpan(line);
        prefix = span == null ? "" : span;
      } else if (line.equals(HEADER)) {
        i += 2; // The header and its |---| line.
        for (; i < lines.size() && lines.get(i).startsWith("|"); i++) {
          out.add(row(prefix, lines.get(i), i + 1));
        }
      }
    }
    return out;
  }

  private static Map<String, Row> byKey;

  /** The rows by key; fails on a key documented twice. */
  static synchronized Map<String, Row> byKey() {
    if (byKey == null) {
      Map<String, Row> out = new LinkedHashMap<>();
      for (Row row : rows()) {
        if (out.put(row.key, row) != null) {
          throw new AssertionError(row + " is documented twice");
        }
      }
      byKey = Collections.unmodifiableMap(out);
    }
    return byKey;
  }

  /**
   * The document's key for a leaf path of the whole tree: {@code defaults.retry.deadline} and
   * {@code routes[].retry.deadline} are both {@code retry.deadline}.
   */
  static String keyOf(String treePath) {
    for (Section policy : ConfigSchema.POLICY_SECTIONS) {
      for (String owner : new String[] {"defaults.", "routes[]."}) {
        if (treePath.startsWith(owner + policy.name + ".")) {
          return treePath.substring(owner.length());
        }
      }
    }
    return treePath;
  }

  /** The row of a key of the schema. */
  static Row rowOf(Leaf leaf) {
    boolean routeOwn = ConfigSchema.ROUTE_OWN.leaves().contains(leaf);
    Row row = byKey().get(routeOwn ? "routes[]." + leaf.path : leaf.path);
    if (row == null) {
      throw new AssertionError(leaf.path + " is not in docs/configuration.md");
    }
    return row;
  }

  private static Row row(String prefix, String line, int number) {
    String[] cells = line.split("\\|", -1);
    if (cells.length != 6) {
      throw new AssertionError(
          "docs/configuration.md:" + number + ": a key row has 4 cells, found " + line);
    }
    String key = codeSpan(cells[1]);
    String defaultText = codeSpan(cells[2]);
    if (key == null || defaultText == null) {
      throw new AssertionError(
          "docs/configuration.md:" + number + ": key and default are `code`, found " + line);
    }
    return new Row(
        prefix.isEmpty() ? key : prefix + "." + key,
        defaultText.equals(NO_DEFAULT) ? null : defaultText,
        cells[3].trim(),
        cells[4].trim(),
        number);
  }

  /** The text of the first {@code `code`} span, or null. */
  private static String codeSpan(String text) {
    int open = text.indexOf('`');
    int close = open < 0 ? -1 : text.indexOf('`', open + 1);
    return close < 0 ? null : text.substring(open + 1, close);
  }
}
