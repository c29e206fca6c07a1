package dev.retryagent.it.harness;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A strict JSON parser (RFC 8259) for reading what the agent writes, dead letters above all: no
 * JSON library is on the tests' class path, and a lenient one would hide a broken line. Objects
 * become {@link LinkedHashMap}s, arrays {@link List}s, numbers {@link Long} (integers) or {@link
 * Double}, and {@code null} null. Anything else, trailing text included, throws {@link
 * IllegalArgumentException} naming the offset.
 */
public final class Json {
  private final String text;
  private int at;

  private Json(String text) {
    this.text = text;
  }

  /** Parses one JSON value that makes up the whole of {@code text} (whitespace around allowed). */
  public static Object parse(String text) {
    Json p = new Json(text);
    p.space();
    Object v = p.value();
    p.space();
    if (p.at != text.length()) {
      throw p.error("text after the value");
    }
    return v;
  }

  /** Parses {@code text} as one JSON object. */
  @SuppressWarnings("unchecked")
  public static Map<String, Object> object(String text) {
    Object v = parse(text);
    if (!(v instanceof Map)) {
      throw new IllegalArgumentException("not a JSON object: " + text);
    }
    return (Map<String, Object>) v;
  }

  private Object value() {
    if (at >= text.length()) {
      throw error("end of text where a value was expected");
    }
    char c = text.charAt(at);
    switch (c) {
      case '{':
        return object();
      case '[':
        return array();
      case '"':
        return string();
      case 't':
        return literal("true", Boolean.TRUE);
      case 'f':
        return literal("false", Boolean.FALSE);
      case 'n':
        return literal("null", null);
      default:
        if (c == '-' || (c >= '0' && c <= '9')) {
          return number();
        }
        throw error("unexpected '" + c + "'");
    }
  }

  private Map<String, Object> object() {
    Map<String, Object> m = new LinkedHashMap<>();
    at++;
    space();
    if (peek() == '}') {
      at++;
      return m;
    }
    while (true) {
      space();
      if (peek() != '"') {
        throw error("a member name was expected");
      }
      String key = string();
      space();
      expect(':');
      space();
      if (m.containsKey(key)) {
        throw error("duplicate member " + key);
      }
      m.put(key, value());
      space();
      if (peek() == ',') {
        at++;
      } else {
        expect('}');
        return m;
      }
    }
  }

  private List<Object> array() {
    List<Object> list = new ArrayList<>();
    at++;
    space();
    if (peek() == ']') {
      at++;
      return list;
    }
    while (true) {
      space();
      list.add(value());
      space();
      if (peek() == ',') {
        at++;
      } else {
        expect(']');
        return list;
      }
    }
  }

  private String string() {
    expect('"');
    StringBuilder b = new StringBuilder();
    while (true) {
      if (at >= text.length()) {
        throw error("unterminated string");
      }
      char c = text.charAt(at++);
      if (c == '"') {
        return b.toString();
      }
      if (c < 0x20) {
        throw error("raw control character in a string");
      }
      if (c != '\\') {
        b.append(c);
        continue;
      }
      char e = at < text.length() ? text.charAt(at++) : 0;
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
          if (at + 4 > text.length()) {
            throw error("short \\u escape");
          }
          try {
            b.append((char) Integer.parseInt(text.substring(at, at + 4), 16));
          } catch (NumberFormatException ex) {
            throw error("bad \\u escape");
          }
          at += 4;
          break;
        default:
          throw error("bad escape");
      }
    }
  }

  private Object number() {
    int start = at;
    if (peek() == '-') {
      at++;
    }
    if (peek() == '0') {
      at++;
    } else if (isDigit(peek())) {
      digits();
    } else {
      throw error("a digit was expected");
    }
    boolean integer = true;
    if (peek() == '.') {
      integer = false;
      at++;
      digits();
    }
    if (peek() == 'e' || peek() == 'E') {
      integer = false;
      at++;
      if (peek() == '+' || peek() == '-') {
        at++;
      }
      digits();
    }
    String n = text.substring(start, at);
    return integer ? (Object) Long.parseLong(n) : (Object) Double.parseDouble(n);
  }

  private void digits() {
    if (!isDigit(peek())) {
      throw error("a digit was expected");
    }
    while (isDigit(peek())) {
      at++;
    }
  }

  private static boolean isDigit(char c) {
    return c >= '0' && c <= '9';
  }

  private Object literal(String word, Object v) {
    if (!text.startsWith(word, at)) {
      throw error("unexpected text");
    }
    at += word.length();
    return v;
  }

  private char peek() {
    return at < text.length() ? text.charAt(at) : 0;
  }

  private void expect(char c) {
    if (peek() != c) {
      throw error("'" + c + "' was expected");
    }
    at++;
  }

  private void space() {
    while (at < text.length() && " \t\r\n".indexOf(text.charAt(at)) >= 0) {
      at++;
    }
  }

  private IllegalArgumentException error(String what) {
    return new IllegalArgumentException("invalid JSON at offset " + at + ": " + what);
  }
}
