package dev.retryagent.config;

import java.util.ArrayList;
import java.util.List;
import org.yaml.snakeyaml.error.Mark;

/** Collects the problems of one file so that all of them are reported at once, in file order. */
final class FileProblems {
  private final String source;

  /** Sorted as they come, by line then column (those without a line last), ties in order. */
  private final List<ConfigProblem> list = new ArrayList<>();

  FileProblems(String source) {
    this.source = source;
  }

  String source() {
    return source;
  }

  void at(YamlNode node, String path, String message) {
    if (node == null) {
      at((Mark) null, path, message);
    } else {
      add(new ConfigProblem(source, node.line() + 1, node.column() + 1, path, message));
    }
  }

  void at(Mark mark, String path, String message) {
    if (mark == null) {
      add(new ConfigProblem(source, 0, 0, path, message));
    } else {
      add(new ConfigProblem(source, mark.getLine() + 1, mark.getColumn() + 1, path, message));
    }
  }

  void at(int line, int column, String path, String message) {
    add(new ConfigProblem(source, line, column, path, message));
  }

  /**
   * Inserts in place rather than sorting with a comparator at the end: a comparator is a lambda or
   * a class, and an invalid file is reported in {@code premain}.
   */
  private void add(ConfigProblem p) {
    int i = list.size();
    while (i > 0 && order(list.get(i - 1)) > order(p)) {
      i--;
    }
    list.add(i, p);
  }

  private static long order(ConfigProblem p) {
    long line = p.line() == 0 ? Integer.MAX_VALUE : p.line();
    return line << 32 | p.column();
  }

  boolean isEmpty() {
    return list.isEmpty();
  }

  int size() {
    return list.size();
  }

  /**
   * True when a problem was reported at {@code path} itself, or under it ({@code path.key}, {@code
   * path[0]}) when {@code under}.
   */
  boolean anyAt(String path, boolean under) {
    for (int i = 0; i < list.size(); i++) {
      String p = list.get(i).path();
      if (p.equals(path)
          || (under
              && p.length() > path.length()
              && p.startsWith(path)
              && (p.charAt(path.length()) == '.' || p.charAt(path.length()) == '['))) {
        return true;
      }
    }
    return false;
  }

  /** The problems in file order. */
  List<ConfigProblem> sorted() {
    return new ArrayList<>(list);
  }

  ConfigException toException(boolean strict) {
    return new ConfigException(sorted(), strict);
  }

  /**
   * @param fileStrict the file's own {@code agent.strict} as {@link StrictProbe#read} found it:
   *     null when it could not be read
   */
  ConfigException unparsed(Boolean fileStrict) {
    return new ConfigException(sorted(), Boolean.TRUE.equals(fileStrict), fileStrict == null, null);
  }
}
