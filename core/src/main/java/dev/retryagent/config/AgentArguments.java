package dev.retryagent.config;

import static dev.retryagent.config.ConfigSources.AGENT_ARGUMENT;
import static dev.retryagent.config.ConfigSources.ARG_CONFIG;
import static dev.retryagent.config.ConfigSources.ARG_MODE;
import static dev.retryagent.config.ConfigSources.ARG_STRICT;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * The {@code -javaagent:retry-agent.jar=ARGUMENT} string: a bare path, or {@code key=value} pairs
 * separated by commas ({@code config}, {@code mode}, {@code strict}), values optionally quoted with
 * {@code '} or {@code "} to hold a comma. A bare path is told apart by what comes before its first
 * {@code =}: a pair starts with a plain key, a path has a separator or a dot-free name.
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
   * added for unknown, repeated or empty keys.
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
    for (String pair : splitPairs(a, problems)) {
      if (pair.isBlank()) {
        continue;
      }
      int e = pair.indexOf('=');
      if (e < 0) {
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
    return out;
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
