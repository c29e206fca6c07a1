package dev.retryagent.internal.observe;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * A strict reader of one flat JSON object (strings, integers, booleans, null), enough to check that
 * dead letters are valid JSON without a JSON library. Throws on anything else.
 */
final class MiniJson {
  private final String s;
  private int i;

  private MiniJson(String s) {
    this.s = s;
  }

  static Map<String, Object> parseObject(String text) {
    MiniJson p = new MiniJson(text);
    Map<String, Object> out = p.object();
    if (p.i != text.length()) {
      throw new IllegalArgumentException("trailing text at " + p.i + ": " + text);
    }
    return out;
  }

  private Map<String, Object> object() {
    expect('{');
    Map<String, Object> out = new LinkedHashMap<>();
    if (peek() == '}') {
      i++;
      return out;
    }
    while (true) {
      String key = string();
      expect(':');
      if (out.put(key, value()) != null) {
        throw new IllegalArgumentException("duplicate key " + key);
      }
      char c = next();
      if (c == '}') {
        return out;
      }
      if (c != ',') {
        throw new IllegalArgumentException("expected , or } at " + (i - 1));
      }
    }
  }

  private Object value() {
    char c = peek();
    if (c == '"') {
      return string();
    }
    if (s.startsWith("null", i)) {
      i += 4;
      return null;
    }
    if (s.startsWith("true", i)) {
      i += 4;
      return true;
    }
    if (s.startsWith("false", i)) {
      i += 5;
      return false;
    }
    int start = i;
    if (c == '-') {
      i++;
    }
    while (i < s.length() && Character.isDigit(s.charAt(i))) {
      i++;
    }
    if (i == start) {
      throw new IllegalArgumentException("bad value at " + i);
    }
    return Long.parseLong(s.substring(start, i));
  }

  private String string() {
    expect('"');
    StringBuilder b = new StringBuilder();
    while (true) {
      char c = next();
      if (c == '"') {
        return b.toString();
      }
      if (c < 0x20) {
        throw new IllegalArgumentException("raw control character in string at " + (i - 1));
      }
      if (c != '\\') {
        b.append(c);
        continue;
      }
      char e = next();
      switch (e) {
        case '"':
        case '\\':
        case '/':
          b.append(e);
          break;
        case 'b':
          b.append('\b');
          break;
        case 'f':
          b.append('\f');
          break;
        case 'n':
          b.append('\n');
          break;
        case 'r':
          b.append('\r');
          break;
        case 't':
          b.append('\t');
          break;
        case 'u':
          b.append((char) Integer.parseInt(s.substring(i, i + 4), 16));
          i += 4;
          break;
        default:
          throw new IllegalArgumentException("bad escape \\" + e);
      }
    }
  }

  private char peek() {
    if (i >= s.length()) {
      throw new IllegalArgumentException("unexpected end");
    }
    return s.charAt(i);
  }

  private char next() {
    char c = peek();
    i++;
    return c;
  }

  private void expect(char c) {
    if (next() != c) {
      throw new IllegalArgumentException("expected " + c + " at " + (i - 1) + " in " + s);
    }
  }
}
