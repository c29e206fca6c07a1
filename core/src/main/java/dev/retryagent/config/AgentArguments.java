package dev.retryagent.config;

import static dev.retryagent.config.ConfigSources.AGENT_ARGUMENT;
import static dev.retryagent.config.ConfigSources.ARG_CONFIG;
import static dev.retryagent.config.ConfigSources.ARG_MODE;
import static dev.retryagent.config.ConfigSources.ARG_STRICT;

import java.io.File;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * The {@code -javaagent:retry-agent.jar=ARGUMENT} string: a bare path, or {@code key=value} pairs
 * separated by commas ({@code config}, {@code mode}, {@code strict}), values optionally quoted with
 * {@code '} or {@code "} to hold a comma. A bare path is told apart by what comes before its first
 * {@code =}: a pair starts with a plain key ({@code [A-Za-z][A-Za-z0-9._-]*}), so a path without
 * {@code =} or with a separator before it ({@code /etc/a=b.yml}) is one. An argument that starts as
 * pairs but is not made of known keys ({@code prod=eu.yml}) is the path when it names an existing
 * file; else its problems say how it was read.
 */
final class AgentArguments {
  private static final List<String> KEYS = List.of(ARG_CONFIG, ARG_MODE, ARG_STRICT);

  private AgentArguments() {}

  /**
   * {@code [A-Za-z][A-Za-z0-9._-]*}, checked by hand: this runs in {@code premain}, where compiling
   * a regular expression costs start-up time.
   */
  static boolean isKeyLike(String s) {
    if (s.isEmpty() || !isLetter(s.charAt(0))) {
      return false;
    }
    for (int i = 1; i < s.length(); i++) {
      char c = s.charAt(i);
      if (!isLetter(c) && !(c >= '0' && c <= '9') && c != '.' && c != '_' && c != '-') {
        return false;
      }
    }
    return true;
  }

  private static boolean isLetter(char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z');
  }

  /**
   * The argument as {@code key -> value}: a bare path becomes {@code config -> path}. Problems are
   * added for unknown, repeated or empty keys, led by one that says the argument was read as pairs
   * when it is not made of known keys.
   */
  static Map<String, String> parse(String agentArgs, List<ConfigProblem> problems) {
    Map<String, String> out = new LinkedHashMap<>();
    if (agentArgs == null || agentArgs.isBlank()) {
      return out;
    }
    String a = agentArgs.trim();
    int eq = a.indexOf('=');
    if (eq < 0 || !isKeyLike(a.substring(0, eq).trim())) {
      out.put(ARG_CONFIG, a); // A bare path, which may hold commas.
      return out;
    }
    List<ConfigProblem> read = new ArrayList<>();
    if (!readPairs(a, out, read)) {
      if (namesAFile(a)) {
        // A file's name that holds `=` after a key-like word (prod=eu.yml) is that file: no
        // pairs of known keys could mean it, so no valid argument changes its meaning.
        out.clear();
        out.put(ARG_CONFIG, a);
        return out;
      }
      problems.add(
          argProblem(
              "",
              // Not the argument itself: a pair of an unknown key may hold a secret
              // (password=...); the pairs' own problems name the keys.
              "read as key=value pairs (config, mode, strict) since no file named as the whole"
                  + " argument exists; a path that holds `=` is written config=PATH or ./PATH"));
    }
    problems.addAll(read);
    return out;
  }

  /**
   * Reads {@code a} as pairs into {@code out}, with their problems; false when it is not made of
   * known keys (an unknown key, a pair without {@code =}, an unclosed quote).
   */
  private static boolean readPairs(
      String a, Map<String, String> out, List<ConfigProblem> problems) {
    int before = problems.size();
    List<String> pairs = splitPairs(a, problems);
    boolean known = problems.size() == before;
    for (String pair : pairs) {
      if (pair.isBlank()) {
        continue;
      }
      int e = pair.indexOf('=');
      if (e < 0) {
        known = false;
        problems.add(
            argProblem(
                "",
                "found "
                    + ConfigProblem.shown(pair.trim())
                    + "; allowed key=value pairs separated by commas (config, mode, strict)"));
        continue;
      }
      String key = pair.substring(0, e).trim().toLowerCase(Locale.ROOT);
      String value = unquote(pair.substring(e + 1).trim());
      if (!KEYS.contains(key)) {
        known = false;
        String near = Suggestions.nearest(key, KEYS);
        problems.add(
            argProblem(
                key,
                "unknown key "
                    + ConfigProblem.shown(key)
                    + (near == null ? "" : "; did you mean `" + near + "`?")
                    + " (allowed: config, mode, strict)"));
      } else if (value.isEmpty()) {
        problems.add(argProblem(key, "found an empty value; allowed " + allowedFor(key)));
      } else if (out.putIfAbsent(key, value) != null) {
        problems.add(argProblem(key, "found " + key + " a second time; give each key once"));
      }
    }
    return known;
  }

  /**
   * Whether the whole argument names an existing file (or directory, which the loader then
   * reports). {@link File} rather than {@code Files}: its classes are loaded before any agent runs.
   */
  private static boolean namesAFile(String a) {
    try {
      return new File(a).exists();
    } catch (SecurityException e) {
      return false;
    }
  }

  /**
   * When {@code agentArgs}, read as pairs of known keys, was found invalid but also names an
   * existing file ({@code mode=eu.yml}): the problem that says how it was read and how to name the
   * file; else null. Called only for an invalid configuration.
   */
  static ConfigProblem alsoAFile(String agentArgs) {
    if (agentArgs == null) {
      return null;
    }
    String a = agentArgs.trim();
    int eq = a.indexOf('=');
    if (eq < 0
        || !isKeyLike(a.substring(0, eq).trim())
        || !readPairs(a, new LinkedHashMap<>(), new ArrayList<>())
        || !namesAFile(a)) {
      return null; // a bare path, or the path itself (parse), or no file
    }
    return argProblem(
        "",
        "read as key=value pairs (config, mode, strict); a file named as the whole argument"
            + " exists too: to name it, write config=PATH or ./PATH");
  }

  private static String allowedFor(String key) {
    switch (key) {
      case ARG_MODE:
        return "one of enforce, observe, off";
      case ARG_STRICT:
        return "true or false";
      default:
        return "a file path";
    }
  }

  private static ConfigProblem argProblem(String key, String message) {
    return new ConfigProblem(AGENT_ARGUMENT, 0, 0, key.isEmpty() ? "(argument)" : key, message);
  }

  /** Splits at commas outside quotes. */
  private static List<String> splitPairs(String a, List<ConfigProblem> problems) {
    List<String> out = new ArrayList<>();
    StringBuilder current = new StringBuilder();
    char quote = 0;
    for (int i = 0; i < a.length(); i++) {
      char c = a.charAt(i);
      if (quote != 0) {
        if (c == quote) {
          quote = 0;
        }
        current.append(c);
      } else if (c == '\'' || c == '"') {
        quote = c;
        current.append(c);
      } else if (c == ',') {
        out.add(current.toString());
        current.setLength(0);
      } else {
        current.append(c);
      }
    }
    if (quote != 0) {
      problems.add(argProblem("", "found an unclosed " + quote + " quote"));
    }
    out.add(current.toString());
    return out;
  }

  private static String unquote(String v) {
    if (v.length() >= 2
        && (v.charAt(0) == '\'' || v.charAt(0) == '"')
        && v.charAt(v.length() - 1) == v.charAt(0)) {
      return v.substring(1, v.length() - 1);
    }
    return v;
  }
}
