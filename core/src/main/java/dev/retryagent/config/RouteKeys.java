package dev.retryagent.config;

import static dev.retryagent.config.ValueType.listOf;

import dev.retryagent.config.ConfigSchema.KeyRef;
import java.util.Locale;

/**
 * A route's own keys: its {@code name} and the {@code match} that says which requests it claims.
 * Its policy sections are {@code defaults}' ({@link ConfigSchema#POLICY}). Each key is written
 * once, with where its value goes ({@link KeyVisitor}); meanings are in docs/configuration.md.
 */
final class RouteKeys {
  private RouteKeys() {}

  /** Read by the assembler to place problems about the name (reserved, repeated). */
  static final KeyRef NAME = new KeyRef();

  /**
   * Control characters, in a character class: ISO controls, line and paragraph separators, and the
   * invisible formatting characters that make one name look like another or reorder the rest of a
   * log line in a terminal ({@link #isInvisible}).
   */
  private static final String CONTROL =
      "\\x00-\\x1f\\x7f-\\x9f\\xad\\u034f\\u0600-\\u0605\\u061c\\u06dd\\u070f\\u0890\\u0891"
          + "\\u08e2\\u115f\\u1160\\u17b4\\u17b5\\u180e\\u200b-\\u200f\\u2028-\\u202e"
          + "\\u2060-\\u206f\\u3164\\ufeff\\uffa0\\ufff0-\\ufffb";

  /** {@link #CONTROL} and the blanks ({@code \s} of ECMAScript but for the controls). */
  private static final String BLANK_OR_CONTROL =
      CONTROL + "\\x20\\xa0\\u1680\\u2000-\\u200a\\u202f\\u205f\\u3000\\ufeff";

  /** The most characters (code points) of a route name. */
  static final int MAX_NAME = 64;

  /**
   * A route name: any text of 1 to 64 characters without a control character (ISO control, line or
   * paragraph separator), not starting or ending with a blank (the ends of {@code \s} in
   * ECMAScript, which editors check the schema with). Version 1 of the contract sets no rule, so
   * {@code Payments API}, {@code openai:chat} and {@code payments/v2} load. The regular expression
   * is the schema's; the loader checks a name by {@link #nameProblem}, not by {@code
   * java.util.regex} (issue 13: its first use costs ~35 classes and a lambda in {@code premain}).
   * Where a name goes (Redis keys, logs, metrics, JMX) it is written so that any name is safe
   * there, a name of the earlier rule ({@code [A-Za-z0-9][A-Za-z0-9._-]{0,63}}) as before.
   */
  static final ValueType ROUTE_NAME =
      ValueType.routeName(
          "[^" + BLANK_OR_CONTROL + "](?:[^" + CONTROL + "]{0,62}[^" + BLANK_OR_CONTROL + "])?",
          "any text of 1 to 64 characters without control characters (nor invisible ones: bidi"
              + " controls, zero-width characters), not starting or ending with a blank, such as"
              + " payments or Payments API");

  /**
   * What keeps {@code name} (trimmed, as every string value is) from being a route name, as the end
   * of "found X; allowed ...; ...", or null when it is one. Checked character by character, as
   * {@link #ROUTE_NAME}'s regular expression says; a control character is named by its code, never
   * written as it is.
   */
  static String nameProblem(String name) {
    if (name.isEmpty()) {
      return "this one is empty";
    }
    int count = name.codePointCount(0, name.length());
    if (count > MAX_NAME) {
      return "this one has " + count + " characters";
    }
    int at = 1;
    for (int i = 0; i < name.length(); at++) {
      int c = name.codePointAt(i);
      if (Character.isISOControl(c) || c == 0x2028 || c == 0x2029) {
        return "this one has the control character " + code(c) + " at character " + at;
      }
      if (isInvisible(c)) {
        return "this one has the invisible character " + code(c) + " at character " + at;
      }
      if (c <= 0xffff && Character.isSurrogate((char) c)) { // a pair is a code point above it
        // Unpaired (a pair is one code point): written as '?' by every UTF-8 output, so two names
        // would read as one ("a\ud800" and "a?" the same series in one scrape). The schema's
        // expression says nothing of it: YAML holds one only as an escape.
        return "this one has the unpaired surrogate " + code(c) + " at character " + at;
      }
      i += Character.charCount(c);
    }
    int first = name.codePointAt(0);
    if (isBlank(first)) {
      return "this one starts with the blank " + code(first);
    }
    int last = name.codePointBefore(name.length());
    if (isBlank(last)) {
      return "this one ends with the blank " + code(last);
    }
    return null;
  }

  /**
   * A character that prints as nothing: every format character (Unicode category Cf: the soft
   * hyphen, zero-width characters and marks, bidi embeddings, overrides and isolates, {@code
   * U+202E} writing the rest of a log line right to left, invisible operators, the byte order mark,
   * interlinear annotations, tags) and every other default-ignorable code point (the combining
   * grapheme joiner, Hangul fillers, Khmer inherent vowels, the Mongolian vowel separator, musical
   * symbol formatting, shorthand format controls, the unassigned ones Unicode keeps ignorable). A
   * zero-width joiner too: emoji sequences joined by it cannot be names. Two names that differ by
   * one of these look alike in every output.
   *
   * <p>Written out rather than asked of {@link Character#getType}: the JDK's Unicode version
   * differs (13 on JDK 17, 16 on JDK 25), and a name must load or be refused alike on both. The
   * list is Unicode 16's Cf and Default_Ignorable_Code_Point. Variation selectors ({@code
   * U+FE00-FE0F}, {@code U+E0100-E01EF}, the Mongolian free ones) stay allowed: emoji and CJK names
   * use them, and each follows a visible character it changes. Code points above {@code U+FFFF} are
   * the loader's alone: the schema's expression, which ECMAScript reads in UTF-16 units without the
   * u flag, cannot name them.
   */
  private static boolean isInvisible(int c) {
    if (c < 0xad) {
      return false; // the common case, ASCII and Latin-1 letters, in one comparison
    }
    if (c <= 0xffff) {
      return c == 0xad
          || c == 0x34f
          || c >= 0x600 && c <= 0x605
          || c == 0x61c
          || c == 0x6dd
          || c == 0x70f
          || c == 0x890
          || c == 0x891
          || c == 0x8e2
          || c == 0x115f
          || c == 0x1160
          || c == 0x17b4
          || c == 0x17b5
          || c == 0x180e
          || c >= 0x200b && c <= 0x200f
          || c >= 0x202a && c <= 0x202e
          || c >= 0x2060 && c <= 0x206f
          || c == 0x3164
          || c == 0xfeff
          || c == 0xffa0
          || c >= 0xfff0 && c <= 0xfffb;
    }
    return c == 0x110bd
        || c == 0x110cd
        || c >= 0x13430 && c <= 0x1343f
        || c >= 0x1bca0 && c <= 0x1bca3
        || c >= 0x1d173 && c <= 0x1d17a
        || c >= 0xe0000 && c <= 0xe0fff && !(c >= 0xe0100 && c <= 0xe01ef);
  }

  /** A blank of {@link #BLANK_OR_CONTROL}. */
  private static boolean isBlank(int c) {
    return c == ' '
        || c == 0xa0
        || c == 0x1680
        || c >= 0x2000 && c <= 0x200a
        || c == 0x202f
        || c == 0x205f
        || c == 0x3000
        || c == 0xfeff;
  }

  /** {@code U+0009}. */
  private static String code(int c) {
    String hex = Integer.toHexString(c).toUpperCase(Locale.ROOT);
    return "U+" + "0000".substring(Math.min(4, hex.length())) + hex;
  }

  static void visit(KeyVisitor k, ConfigDraft d) {
    if (k.key("name", ROUTE_NAME, NAME)) {
      d.routeName = k.text();
    }
    KeyVisitor match =
        k.section("match", "Which requests a route claims; every list given must match.");
    if (match.key("hosts", listOf(ValueType.HOST_GLOB).nonEmpty("host glob", "host"))) {
      d.hosts = match.list();
    }
    if (match.key("methods", listOf(ValueType.METHOD).nonEmpty("method", "method"))) {
      d.methods.clear();
      for (String m : match.<String>list()) {
        d.methods.add(m.toUpperCase(Locale.ROOT));
      }
    }
    if (match.key("paths", listOf(ValueType.PATH_GLOB).nonEmpty("path glob", "path"))) {
      d.paths = match.list();
    }
  }
}
