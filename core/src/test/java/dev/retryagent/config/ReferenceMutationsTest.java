package dev.retryagent.config;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.Test;

/**
 * Every single-line edit of {@code config/reference.yml}, not a sample (issue 14): each line
 * deleted, duplicated, moved, cut in half as a half-written file ends, indented wrongly, tabbed,
 * its key or value replaced by garbage, a NUL or an escape sequence inserted. Each edited file
 * either loads whole or fails with located problems, within a second; nothing else escapes. ({@code
 * ConfigLoaderProperties} adds random combinations of edits.)
 */
class ReferenceMutationsTest {
  private static final List<String> LINES =
      List.of(ConfigFiles.read(ConfigFiles.REFERENCE).split("\n", -1));

  /** A bound on one load after warm-up; typical loads take a few milliseconds. */
  private static final long MAX_NANOS = 1_000_000_000L;

  private static final Map<String, UnaryOperator<String>> LINE_EDITS = lineEdits();

  private static Map<String, UnaryOperator<String>> lineEdits() {
    Map<String, UnaryOperator<String>> m = new java.util.LinkedHashMap<>();
    m.put("indented by one", l -> " " + l);
    m.put("indented by two", l -> "  " + l);
    m.put("dedented", l -> l.startsWith("  ") ? l.substring(2) : l);
    m.put("tab first", l -> "\t" + l);
    m.put("key garbled", l -> l.replaceFirst("([A-Za-z-]+):", "$1x:"));
    m.put("value garbled", l -> l.replaceFirst(":\\s+[^#\\s][^#]*", ": !@#\\$%"));
    m.put("value an open list", l -> l.replaceFirst(":\\s+[^#\\s][^#]*", ": ["));
    m.put("value an alias", l -> l.replaceFirst(":\\s+[^#\\s][^#]*", ": *nowhere"));
    m.put("value a tag", l -> l.replaceFirst(":\\s+[^#\\s][^#]*", ": !!java.io.File /tmp"));
    m.put(
        "NUL inserted",
        l -> l.substring(0, l.length() / 2) + "\u0000" + l.substring(l.length() / 2));
    m.put(
        "escape inserted",
        l -> l.substring(0, l.length() / 2) + "\u001b[2J" + l.substring(l.length() / 2));
    m.put("colon removed", l -> l.replaceFirst(":", ""));
    return m;
  }

  @Test
  void everySingleLineEditLoadsOrFailsWithLocatedProblems() {
    ConfigLoaderOutcome.check(String.join("\n", LINES), "warm-up"); // class loading
    List<String> failures = new ArrayList<>();
    int edits = 0;
    for (int i = 0; i < LINES.size(); i++) {
      for (Map.Entry<String, UnaryOperator<String>> edit : LINE_EDITS.entrySet()) {
        List<String> lines = new ArrayList<>(LINES);
        lines.set(i, edit.getValue().apply(lines.get(i)));
        edits += check(lines, "line " + (i + 1) + " " + edit.getKey(), failures);
      }
      List<String> deleted = new ArrayList<>(LINES);
      deleted.remove(i);
      edits += check(deleted, "line " + (i + 1) + " deleted", failures);

      List<String> duplicated = new ArrayList<>(LINES);
      duplicated.add(i, LINES.get(i));
      edits += check(duplicated, "line " + (i + 1) + " duplicated", failures);

      if (i + 1 < LINES.size()) {
        List<String> swapped = new ArrayList<>(LINES);
        swapped.set(i, LINES.get(i + 1));
        swapped.set(i + 1, LINES.get(i));
        edits += check(swapped, "line " + (i + 1) + " swapped with the next", failures);
      }

      // A half-written file: everything before line i, and half of it.
      List<String> cut = new ArrayList<>(LINES.subList(0, i));
      cut.add(LINES.get(i).substring(0, LINES.get(i).length() / 2));
      edits += check(cut, "cut in line " + (i + 1), failures);
    }
    assertThat(edits).as("edits tried").isGreaterThan(LINES.size() * 15);
    assertThat(failures).as("edits that escaped the contract").isEmpty();
  }

  private static int check(List<String> lines, String what, List<String> failures) {
    String outcome = ConfigLoaderOutcome.check(String.join("\n", lines), what);
    if (outcome != null) {
      failures.add(outcome);
    }
    return 1;
  }

  /** The contract of one load, as a failure description or null. */
  static final class ConfigLoaderOutcome {
    private ConfigLoaderOutcome() {}

    static String check(String text, String what) {
      long start = System.nanoTime();
      String failure = null;
      try {
        AgentConfig config = ConfigLoader.parse(text, "mutant.yml", Map.of());
        if (config == null || config.defaultPolicy() == null) {
          failure = what + ": loaded, but incomplete";
        }
      } catch (ConfigException e) {
        int lines = text.split("\n", -1).length;
        if (e.problems().isEmpty()) {
          failure = what + ": no problem reported";
        }
        for (ConfigProblem p : e.problems()) {
          boolean located = (p.line() >= 1 && p.line() <= lines + 1) || !p.path().isEmpty();
          if (!located || p.message().isBlank() || !p.source().equals("mutant.yml")) {
            failure = what + ": not located: " + p;
          }
        }
      } catch (RuntimeException | StackOverflowError e) {
        failure = what + ": " + e + " " + Arrays.toString(e.getStackTrace()).substring(0, 200);
      }
      long took = System.nanoTime() - start;
      if (failure == null && took > MAX_NANOS) {
        failure = what + ": took " + took / 1_000_000 + " ms";
      }
      return failure;
    }
  }
}
