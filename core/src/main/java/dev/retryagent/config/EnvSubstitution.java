package dev.retryagent.config;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * {@code ${NAME}} and {@code ${NAME:-fallback}} in scalar values, replaced from an injected
 * environment. It works on the text of one scalar after YAML parsing, so a value can never inject
 * YAML structure. {@code :-} takes the fallback when the variable is unset or empty, as in a
 * shell; {@code $${} writes a literal {@code ${}.
 */
final class EnvSubstitution {
  private final Map<String, String> env;

  EnvSubstitution(Map<String, String> env) {
    this.env = Objects.requireNonNull(env, "env");
  }

  /**
   * The text with every reference replaced.
   *
   * @throws IllegalArgumentException naming every unset variable without a fallback, or the
   *     malformed reference
   */
  String apply(String text) {
    return apply(text, false);
  }

  /**
   * As {@link #apply(String)}; with {@code secret} (a value that may hold a password, such as
   * {@code fleet.redis.url}) a malformed reference is named without its text after the name.
   */
  String apply(String text, boolean secret) {
    if (text.indexOf('$') < 0) {
      return text;
    }
    StringBuilder out = new StringBuilder(text.length());
    List<String> unset = new ArrayList<>();
    int i = 0;
    int n = text.length();
    while (i < n) {
      char c = text.charAt(i);
      if (c == '$' && text.startsWith("$${", i)) {
        out.append("${");
        i += 3;
        continue;
      }
      if (c != '$' || !text.startsWith("${", i)) {
        out.append(c);
        i++;
        continue;
      }
      int close = text.indexOf('}', i + 2);
      if (close < 0) {
        throw new IllegalArgumentException(
            "unterminated ${ in the value; write ${NAME} or ${NAME:-fallback}, or $${ for a"
                + " literal ${");
      }
      String body = text.substring(i + 2, close);
      int dash = body.indexOf(":-");
      String name = dash < 0 ? body : body.substring(0, dash);
      String fallback = dash < 0 ? null : body.substring(dash + 2);
      if (!isName(name)) {
        int colon = separator(name);
        String hint =
            colon > 0 && name.startsWith(":?", colon)
                // The shell's "error if unset": a reference without a fallback already is one.
                ? "; :? is not supported; ${"
                    + name.substring(0, colon)
                    + "} with no fallback already fails when the variable is unset"
                : colon > 0
                    ? "; for a fallback write " + corrected(body, secret)
                    : "; a name is letters, digits and _, not starting with a digit";
        throw new IllegalArgumentException(
            "invalid environment variable reference ${" + shown(body, secret) + "}" + hint);
      }
      if (fallback != null && fallback.contains("${")) {
        throw new IllegalArgumentException(
            "nested ${...} in the fallback of ${" + name + "} is not supported");
      }
      String value = env.get(name);
      if (value == null || (fallback != null && value.isEmpty())) {
        if (fallback == null) {
          unset.add(name);
        } else {
          out.append(fallback);
        }
      } else {
        out.append(value);
      }
      i = close + 1;
    }
    if (!unset.isEmpty()) {
      String first = unset.get(0);
      throw new IllegalArgumentException(
          (unset.size() == 1
                  ? "environment variable " + first + " is not set"
                  : "environment variables " + String.join(", ", unset) + " are not set")
              + " and there is no fallback; set it or write ${"
              + first
              + ":-value}");
    }
    return out.toString();
  }

  /**
   * Where the fallback of {@code ${name}} starts, for a {@code name} that is not a name (the text
   * before any {@code :-}): the {@code -} of the shell's {@code ${NAME-x}}, the {@code :} of
   * Spring's {@code ${NAME:x}} and of the shell's {@code ${NAME:=x}} and {@code ${NAME:?x}}; or -1
   * when no name can be read before it.
   */
  private static int separator(String name) {
    int colon = name.indexOf(':');
    // ${NAME-fallback} is the shell's fallback without the colon (taken only when unset): no name
    // holds a `-`, so the text after the first one is the fallback.
    int hyphen = name.indexOf('-');
    if (hyphen > 0 && (colon < 0 || hyphen < colon) && isName(name.substring(0, hyphen))) {
      colon = hyphen;
    }
    // ${https://user:password@host} is a URL written where its variable's name belongs.
    return colon > 0 && isName(name.substring(0, colon)) && !name.startsWith("://", colon)
        ? colon
        : -1;
  }

  /**
   * The reference {@code ${body}} as a problem shows it: its name and separator as written, and its
   * fallback (or all of it, when no name can be read) without what any key type hides ({@link
   * ConfigProblem#withoutSecrets}: user-info with or without a scheme, a port that is not one, a
   * query), since {@code ${HOST:user:password@host}} in {@code match.hosts} is not known to be a
   * secret here; with {@code secret} (a value that may hold a password) its name alone, and {@code
   * ...} for the rest.
   */
  static String shown(String body, boolean secret) {
    int dash = body.indexOf(":-");
    String name = dash < 0 ? body : body.substring(0, dash);
    if (!secret) {
      int from;
      if (isName(name)) {
        from = dash < 0 ? body.length() : dash + 2;
      } else {
        int colon = separator(name);
        // The shell's :? and := are shown whole: the fallback (or message) starts after them.
        from =
            colon < 0
                ? 0
                : colon + (name.startsWith(":?", colon) || name.startsWith(":=", colon) ? 2 : 1);
      }
      return body.substring(0, from) + ConfigProblem.withoutSecrets(body.substring(from), true);
    }
    if (isName(name)) {
      return dash < 0 ? name : name + ":-...";
    }
    int colon = separator(name);
    // ${NAME:default} written the Spring way: in a secret value, its default is a password.
    return colon > 0 ? name.substring(0, colon + 1) + "..." : "...";
  }

  /**
   * The reference {@code ${body}} written as this class reads it, as a problem may suggest it: the
   * shell's {@code ${NAME-x}} and {@code ${NAME:=x}} and Spring's {@code ${NAME:x}} as {@code
   * ${NAME:-x}}, the shell's {@code ${NAME:?msg}} as {@code ${NAME}}, a right one as it is; null
   * when no name can be read from it. Its fallback is shown as in {@link #shown}.
   */
  static String corrected(String body, boolean secret) {
    int dash = body.indexOf(":-");
    String name = dash < 0 ? body : body.substring(0, dash);
    String fallback;
    if (isName(name)) {
      fallback = dash < 0 ? null : body.substring(dash + 2);
    } else {
      int colon = separator(name);
      if (colon < 0) {
        return null;
      }
      // ${NAME:=fallback} is the shell's assigning fallback: its fallback is after the `=`.
      fallback =
          name.startsWith(":?", colon)
              ? null
              : name.substring(colon + (name.startsWith(":=", colon) ? 2 : 1));
      name = name.substring(0, colon);
    }
    return "${"
        + name
        + (fallback == null
            ? ""
            : ":-" + (secret ? "..." : ConfigProblem.withoutSecrets(fallback, true)))
        + "}";
  }

  private static boolean isName(String s) {
    if (s.isEmpty() || s.length() > 256) {
      return false;
    }
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      boolean ok =
          c == '_'
              || (c >= 'A' && c <= 'Z')
              || (c >= 'a' && c <= 'z')
              || (c >= '0' && c <= '9' && i > 0);
      if (!ok) {
        return false;
      }
    }
    return true;
  }
}
