package dev.retryagent.config;

import java.util.ArrayList;
import java.util.List;

/**
 * Reads the YAML that configuration files are written in without SnakeYAML's scanner, parser and
 * composer, which in {@code premain} load ~100 classes and run interpreted per character: the
 * largest part of what a configuration file costs at start-up (docs/BENCHMARKS.md, issue 13).
 *
 * <p>It returns exactly the tree {@link SnakeYamlReader} builds with SnakeYAML (structure, values,
 * tags, start positions: {@code YamlSubsetReaderTest} compares them on every YAML file of the
 * repository, on mutations of them and on chosen corners), or null, and SnakeYAML reads the text as
 * before: for anything outside the subset and anything wrong, so SnakeYAML finds and words every
 * problem. The subset: printable ASCII, space indentation, {@code #} comments; block mappings and
 * sequences (a sequence may sit at its key's indentation, an item may start a mapping); one-line
 * flow sequences and mappings, nested; one-line plain scalars, single-quoted ones, double-quoted
 * ones without escapes. Outside it: tabs, anchors, aliases, tags, block and multi-line scalars,
 * multi-line flows, directives, document markers, complex keys, an empty or scalar document.
 */
final class YamlSubsetReader {
  /** The contract's deepest key is 6 levels down; SnakeYAML reports anything past its own limit. */
  private static final int MAX_DEPTH = YamlComposer.MAX_NESTING - 1;

  private static final int MAX_KEY = 1024; // SnakeYAML's limit for an implicit key

  private final String text;

  /** Quotes {@link YamlComposer#quoteFlowReferences} inserted, for the file's columns; or null. */
  private final long[] inserted;

  private int pos;
  private int line;
  private int lineStart;

  private YamlSubsetReader(String text, long[] inserted) {
    this.text = text;
    this.inserted = inserted;
  }

  /** The document's root as SnakeYAML would compose it, or null to leave the text to SnakeYAML. */
  static YamlNode read(String text) {
    return read(text, null);
  }

  /**
   * As {@link #read(String)}, positions placed in the file before {@code inserted} quotes were
   * inserted ({@link YamlComposer#originalColumn}).
   */
  static YamlNode read(String text, long[] inserted) {
    for (int i = 0; i < text.length(); i++) {
      char c = text.charAt(i);
      if ((c < 0x20 && c != '\n') || c > 0x7e) {
        return null; // tabs, CR, control and non-ASCII characters: SnakeYAML's rules
      }
    }
    YamlSubsetReader reader = new YamlSubsetReader(text, inserted);
    try {
      reader.skipBlankLines();
      if (reader.atEnd() || reader.column() != 0 || reader.atDocumentSyntax()) {
        return null;
      }
      YamlNode root = reader.blockNode(0, 0);
      reader.skipBlankLines();
      return reader.atEnd() ? root : null;
    } catch (Outside e) {
      return null;
    }
  }

  /** Thrown wherever the text leaves the subset; caught once, in {@link #read}. No stack trace. */
  private static final class Outside extends RuntimeException {
    private static final long serialVersionUID = 1L;

    Outside() {
      super(null, null, false, false);
    }
  }

  private static final Outside OUTSIDE = new Outside();

  private boolean atEnd() {
    return pos >= text.length();
  }

  private char peek(int ahead) {
    int i = pos + ahead;
    return i < text.length() ? text.charAt(i) : '\n';
  }

  private int column() {
    return pos - lineStart;
  }

  /** Where a node starts: its line in the high half, its column in the low half. */
  private long mark() {
    return (long) line << 32 | YamlComposer.originalColumn(inserted, line, column());
  }

  private static int lineOf(long mark) {
    return (int) (mark >>> 32);
  }

  private static int columnOf(long mark) {
    return (int) mark;
  }

  private void skipSpaces() {
    while (peek(0) == ' ') {
      pos++;
    }
  }

  /** Past spaces and a comment to the end of this line; false if something else is there. */
  private boolean restOfLineIsEmpty() {
    skipSpaces();
    if (peek(0) == '#') {
      if (pos > lineStart && text.charAt(pos - 1) != ' ') {
        return false;
      }
      while (!atEnd() && text.charAt(pos) != '\n') {
        pos++;
      }
    }
    return atEnd() || text.charAt(pos) == '\n';
  }

  /** From the end of a line to the first character of the next line that holds something. */
  private void skipBlankLines() {
    while (!atEnd()) {
      if (text.charAt(pos) == '\n') {
        pos++;
        line++;
        lineStart = pos;
        continue;
      }
      int save = pos;
      if (!restOfLineIsEmpty()) {
        pos = save;
        skipSpaces();
        return;
      }
    }
  }

  private void endLine() {
    if (!restOfLineIsEmpty()) {
      throw OUTSIDE;
    }
    skipBlankLines();
    if (atDocumentSyntax()) {
      throw OUTSIDE;
    }
  }

  /** A document marker ({@code ---}, {@code ...}) or a directive may start here: not ours. */
  private boolean atDocumentSyntax() {
    char c = peek(0);
    return !atEnd()
        && column() == 0
        && (c == '-' && peek(1) == '-' && peek(2) == '-' || c == '.' || c == '%');
  }

  /** A mapping or a sequence starting here, at column {@code indent}. */
  private YamlNode blockNode(int indent, int depth) {
    if (depth > MAX_DEPTH) {
      throw OUTSIDE;
    }
    return isSequenceEntry() ? blockSequence(indent, depth) : blockMapping(indent, depth);
  }

  private boolean isSequenceEntry() {
    return peek(0) == '-' && (peek(1) == ' ' || peek(1) == '\n');
  }

  private YamlNode blockMapping(int indent, int depth) {
    long start = mark();
    List<YamlNode.Entry> entries = new ArrayList<>();
    while (true) {
      YamlNode key = key();
      YamlNode value = valueAfterKey(indent, depth);
      entries.add(new YamlNode.Entry(key, value));
      if (atEnd() || column() < indent) {
        break;
      }
      if (column() > indent || isSequenceEntry()) {
        throw OUTSIDE;
      }
    }
    return new YamlNode.Mapping(YamlNode.MAP, entries, lineOf(start), columnOf(start));
  }

  private YamlNode blockSequence(int indent, int depth) {
    long start = mark();
    List<YamlNode> items = new ArrayList<>();
    while (true) {
      pos++; // the '-'
      if (!restOfLineAfterDashHoldsSomething()) {
        throw OUTSIDE; // an item on the following lines, or an empty one
      }
      int itemColumn = column();
      if (isSequenceEntry()) {
        throw OUTSIDE; // "- - x"
      }
      if (startsKey()) {
        items.add(blockMapping(itemColumn, depth + 1));
      } else {
        items.add(inlineValue(depth + 1));
        endLine();
      }
      if (atEnd() || column() < indent) {
        break;
      }
      if (column() > indent) {
        throw OUTSIDE;
      }
      if (!isSequenceEntry()) {
        break; // "key:\n- a\nnext: 1": the mapping goes on (anywhere else, the caller refuses it)
      }
    }
    return new YamlNode.Sequence(YamlNode.SEQ, items, lineOf(start), columnOf(start));
  }

  private boolean restOfLineAfterDashHoldsSomething() {
    if (peek(0) != ' ') {
      return false;
    }
    skipSpaces();
    return peek(0) != '\n' && peek(0) != '#';
  }

  /** The value of the key just read: inline, a block below, or empty (null). */
  private YamlNode valueAfterKey(int indent, int depth) {
    long afterColon = mark(); // where SnakeYAML places an empty value
    skipSpaces();
    if (peek(0) != '\n' && peek(0) != '#') {
      if (isSequenceEntry() || peek(0) == '?') {
        throw OUTSIDE;
      }
      YamlNode value = inlineValue(depth + 1);
      endLine();
      if (!atEnd() && column() > indent) {
        throw OUTSIDE; // a multi-line scalar, or an error SnakeYAML words
      }
      return value;
    }
    endLine();
    if (!atEnd() && column() > indent) {
      return blockNode(column(), depth + 1);
    }
    if (!atEnd() && column() == indent && isSequenceEntry()) {
      return blockSequence(indent, depth + 1);
    }
    return scalar(YamlNode.NULL, "", afterColon);
  }

  private boolean startsKey() {
    int save = pos;
    try {
      key();
      return true;
    } catch (Outside e) {
      return false;
    } finally {
      pos = save;
    }
  }

  /** A key and its ':' (followed by a space or the end of the line), on this line. */
  private YamlNode key() {
    YamlNode key;
    char c = peek(0);
    if (c == '\'' || c == '"') {
      key = quoted();
    } else {
      long start = mark();
      int from = pos;
      while (true) {
        char d = peek(0);
        if (d == '\n' || d == ' ' && peek(1) == '#') {
          throw OUTSIDE;
        }
        if (d == ':' && (peek(1) == ' ' || peek(1) == '\n')) {
          break;
        }
        pos++;
      }
      String raw = text.substring(from, pos).trim();
      checkPlainStart(raw);
      key = plain(raw, start);
    }
    skipSpaces();
    if (peek(0) != ':' || (peek(1) != ' ' && peek(1) != '\n') || pos - lineStart > MAX_KEY) {
      throw OUTSIDE;
    }
    pos++;
    return key;
  }

  /** A value on this line: a flow collection or a scalar. */
  private YamlNode inlineValue(int depth) {
    return value(depth, false);
  }

  /** A flow collection or a scalar; a plain one ends at a flow indicator when {@code inFlow}. */
  private YamlNode value(int depth, boolean inFlow) {
    char c = peek(0);
    if (c == '[' || c == '{') {
      return flow(depth);
    }
    if (c == '\'' || c == '"') {
      return quoted();
    }
    long start = mark();
    int from = pos;
    while (true) {
      char d = peek(0);
      if (inFlow ? ",?[]{}:#\n".indexOf(d) >= 0 : d == '\n' || d == ' ' && peek(1) == '#') {
        break; // in a flow, SnakeYAML ends a plain scalar at any of these
      }
      if (!inFlow && d == ':' && (peek(1) == ' ' || peek(1) == '\n')) {
        throw OUTSIDE; // "a: b: c" and the like
      }
      pos++;
    }
    String raw = text.substring(from, pos).trim();
    checkPlainStart(raw);
    return plain(raw, start);
  }

  /** Plain scalars that start with an indicator are left to SnakeYAML. */
  private static void checkPlainStart(String raw) {
    if (raw.isEmpty()) {
      throw OUTSIDE;
    }
    char c = raw.charAt(0);
    if ("?:,[]{}#&*!|>'\"%@`".indexOf(c) >= 0
        || c == '-' && (raw.length() == 1 || raw.charAt(1) == ' ')) {
      throw OUTSIDE;
    }
  }

  private static YamlNode plain(String raw, long start) {
    String tag = YamlNode.STR;
    if (raw.equals("~") || raw.equals("null") || raw.equals("Null") || raw.equals("NULL")) {
      tag = YamlNode.NULL;
    } else if (raw.equals("<<")) {
      tag = YamlNode.MERGE;
    }
    return scalar(tag, raw, start);
  }

  /** A quoted scalar on this line: {@code ''} in single quotes; no escape in double quotes. */
  private YamlNode quoted() {
    char quote = peek(0);
    long start = mark();
    pos++;
    StringBuilder value = new StringBuilder();
    while (true) {
      char c = peek(0);
      if (c == '\n' || c == '\\' && quote == '"') {
        throw OUTSIDE;
      }
      pos++;
      if (c == quote) {
        if (quote == '\'' && peek(0) == '\'') {
          value.append('\'');
          pos++;
          continue;
        }
        break;
      }
      value.append(c);
    }
    return scalar(YamlNode.STR, value.toString(), start);
  }

  private static YamlNode scalar(String tag, String value, long start) {
    return new YamlNode.Scalar(tag, value, lineOf(start), columnOf(start));
  }

  /** {@code [a, b]} or {@code {k: v}}, on this line, nested ones included. */
  private YamlNode flow(int depth) {
    if (depth > MAX_DEPTH) {
      throw OUTSIDE;
    }
    boolean map = peek(0) == '{';
    char close = map ? '}' : ']';
    long start = mark();
    pos++;
    List<YamlNode> items = new ArrayList<>();
    List<YamlNode.Entry> entries = new ArrayList<>();
    skipFlowSpaces();
    if (peek(0) == close) {
      pos++;
    } else {
      while (true) {
        YamlNode item = flowItem(depth);
        skipFlowSpaces();
        if (map) {
          if (peek(0) != ':' || (peek(1) != ' ' && peek(1) != '\n')) {
            throw OUTSIDE; // "{ a }", "{a:b}": left to SnakeYAML
          }
          pos++;
          skipFlowSpaces();
          entries.add(new YamlNode.Entry(item, flowItem(depth)));
          skipFlowSpaces();
        }
        if (!map) {
          items.add(item);
        }
        char c = peek(0);
        pos++;
        if (c == close) {
          break;
        }
        if (c != ',') {
          throw OUTSIDE;
        }
        skipFlowSpaces();
        if (peek(0) == close || peek(0) == ',') {
          throw OUTSIDE; // a trailing or doubled comma
        }
      }
    }
    return map
        ? new YamlNode.Mapping(YamlNode.MAP, entries, lineOf(start), columnOf(start))
        : new YamlNode.Sequence(YamlNode.SEQ, items, lineOf(start), columnOf(start));
  }

  private void skipFlowSpaces() {
    skipSpaces();
    if (peek(0) == '\n' || peek(0) == '#') {
      throw OUTSIDE; // a flow collection over several lines, or a comment inside one
    }
  }

  private YamlNode flowItem(int depth) {
    return value(depth + 1, true);
  }
}
