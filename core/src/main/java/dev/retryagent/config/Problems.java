package dev.retryagent.config;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import org.yaml.snakeyaml.error.Mark;
import org.yaml.snakeyaml.nodes.Node;

/** Collects the problems of one file so that all of them are reported at once. */
final class Problems {
  private final String source;
  private final List<ConfigProblem> list = new ArrayList<>();

  Problems(String source) {
    this.source = source;
  }

  String source() {
    return source;
  }

  void at(Node node, String path, String message) {
    at(node == null ? null : node.getStartMark(), path, message);
  }

  void at(Mark mark, String path, String message) {
    if (mark == null) {
      list.add(new ConfigProblem(source, 0, 0, path, message));
    } else {
      list.add(new ConfigProblem(source, mark.getLine() + 1, mark.getColumn() + 1, path, message));
    }
  }

  void at(int line, int column, String path, String message) {
    list.add(new ConfigProblem(source, line, column, path, message));
  }

  boolean isEmpty() {
    return list.isEmpty();
  }

  int size() {
    return list.size();
  }

  /** The problems in file order (by line, then column; those without a line last). */
  List<ConfigProblem> sorted() {
    List<ConfigProblem> out = new ArrayList<>(list);
    out.sort(
        Comparator.comparingInt((ConfigProblem p) -> p.line() == 0 ? Integer.MAX_VALUE : p.line())
            .thenComparingInt(ConfigProblem::column));
    return out;
  }

  ConfigException toException(boolean strict) {
    return new ConfigException(sorted(), strict);
  }
}
