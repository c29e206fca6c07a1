package dev.retryagent.demo.json;

/**
 * The little JSON the demo needs: quoting strings, and reading one top-level field of a flat
 * object. Not a general parser; it keeps the demo free of dependencies other than OkHttp.
 */
public final class Json {
  private Json() {}

  /** {@code s} as a JSON string literal, quotes included. */
  public static String quote(String s) {
    StringBuilder b = new StringBuilder(s.length() + 2).append('"');
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      switch (c) {
        case '"':
          b.append("\\\"");
          break;
        case '\\':
          b.append("\\\\");
          break;
        case '\n':
          b.append("\\n");
          break;
        case '\r':
          b.append("\\r");
          break;
        case '\t':
          b.append("\\t");
          break;
        default:
          if (c < 0x20) {
            b.append(String.format("\\u%04x", (int) c));
          } else {
            b.append(c);
          }
      }
    }
    return b.append('"').toString();
  }

  /**
   * The value of field {@code name} in a flat JSON object: a string is returned unquoted and
   * unescaped, a number or literal as written. Null when the field is absent or the text is not
   * such an object.
   */
  public static String field(String json, String name) {
    String needle = quote(name);
    int at = 0;
    while (true) {
      int i = json.indexOf(needle, at);
      if (i < 0) {
        return null;
      }
      int j = skipSpace(json, i + needle.length());
      if (j < json.length() && json.charAt(j) == ':') {
        return value(json, skipSpace(json, j + 1));
      }
      at = i + needle.length();
    }
  }

  private static int skipSpace(String s, int i) {
    while (i < s.length() && Character.isWhitespace(s.charAt(i))) {
      i++;
    }
    return i;
  }

  private static String value(String s, int i) {
    if (i >= s.length()) {
      return null;
    }
    if (s.charAt(i) != '"') {
      int end = i;
      while (end < s.length() && ",}] \n\r\t".indexOf(s.charAt(end)) < 0) {
        end++;
      }
      return end > i ? s.substring(i, end) : null;
    }
    StringBuilder b = new StringBuilder();
    for (int k = i + 1; k < s.length(); k++) {
      char c = s.charAt(k);
      if (c == '"') {
        return b.toString();
      }
      if (c != '\\') {
        b.append(c);
        continue;
      }
      if (++k >= s.length()) {
        return null;
      }
      char e = s.charAt(k);
      switch (e) {
        case 'n':
          b.append('\n');
          break;
        case 'r':
          b.append('\r');
          break;
        case 't':
          b.append('\t');
          break;
        case 'b':
          b.append('\b');
          break;
        case 'f':
          b.append('\f');
          break;
        case 'u':
          if (k + 4 >= s.length() || s.charAt(k + 1) == '-' || s.charAt(k + 1) == '+') {
            return null;
          }
          try {
            b.append((char) Integer.parseInt(s.substring(k + 1, k + 5), 16));
          } catch (NumberFormatException notHex) {
            return null;
          }
          k += 4;
          break;
        default:
          b.append(e);
      }
    }
    return null;
  }
}
