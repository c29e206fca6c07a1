package dev.retryagent.config;

import java.util.List;

/**
 * A node of a configuration file's YAML, as the walker reads it: a scalar, a list or a map, where
 * it starts, and its tag. Ours rather than SnakeYAML's: {@link YamlSubsetReader} builds these
 * without loading SnakeYAML at all (its {@code Tag} alone costs ~15 ms of CPU at start-up: it
 * compiles a regular expression and loads {@code java.sql} classes), and {@link SnakeYamlReader}
 * converts SnakeYAML's tree for every other file. Immutable.
 */
abstract class YamlNode {
  /** YAML 1.1's standard tags, the only ones a configuration may carry (implicitly). */
  static final String STANDARD_TAG_PREFIX = "tag:yaml.org,2002:";

  static final String STR = STANDARD_TAG_PREFIX + "str";
  static final String NULL = STANDARD_TAG_PREFIX + "null";
  static final String MERGE = STANDARD_TAG_PREFIX + "merge";
  static final String SEQ = STANDARD_TAG_PREFIX + "seq";
  static final String MAP = STANDARD_TAG_PREFIX + "map";

  private final String tag;
  private final int line;
  private final int column;

  private YamlNode(String tag, int line, int column) {
    this.tag = tag;
    this.line = line;
    this.column = column;
  }

  /** The node's tag, resolved: {@link #STR}, {@link #NULL}, ... or one the file wrote. */
  final String tag() {
    return tag;
  }

  /** The line the node starts on, from 0. */
  final int line() {
    return line;
  }

  /** The column the node starts at, from 0. */
  final int column() {
    return column;
  }

  /** A scalar resolved to null: empty, {@code ~}, {@code null}, {@code Null}, {@code NULL}. */
  final boolean isNull() {
    return this instanceof Scalar && NULL.equals(tag);
  }

  /** A text value. */
  static final class Scalar extends YamlNode {
    private final String value;

    Scalar(String tag, String value, int line, int column) {
      super(tag, line, column);
      this.value = value;
    }

    String getValue() {
      return value;
    }
  }

  /** A list. */
  static final class Sequence extends YamlNode {
    private final List<YamlNode> items;

    Sequence(String tag, List<YamlNode> items, int line, int column) {
      super(tag, line, column);
      this.items = items;
    }

    List<YamlNode> getValue() {
      return items;
    }
  }

  /** A map, its entries in file order (duplicate keys kept: the walker reports them). */
  static final class Mapping extends YamlNode {
    private final List<Entry> entries;

    Mapping(String tag, List<Entry> entries, int line, int column) {
      super(tag, line, column);
      this.entries = entries;
    }

    List<Entry> getValue() {
      return entries;
    }
  }

  /** One key and its value. */
  static final class Entry {
    private final YamlNode key;
    private final YamlNode value;

    Entry(YamlNode key, YamlNode value) {
      this.key = key;
      this.value = value;
    }

    YamlNode getKeyNode() {
      return key;
    }

    YamlNode getValueNode() {
      return value;
    }
  }
}
