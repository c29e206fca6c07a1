package dev.retryagent.config;

import dev.retryagent.config.ConfigSchema.Leaf;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * One part of a file ({@code defaults}, one route, or the file level) and the keys written in it,
 * in file order. Only keys written in the file are here; merging parts key by key is what makes a
 * route override defaults deeply.
 */
final class FilePart {
  /** Marks a value that was written but invalid (already reported); it is never applied. */
  static final Object INVALID = new Object();

  /** One key as written: its value, where it is, and its full path for messages. */
  static final class Setting {
    final Leaf leaf;
    final Object value;
    final YamlNode node;
    final String path;
    final FilePart part;

    Setting(Leaf leaf, Object value, YamlNode node, String path, FilePart part) {
      this.leaf = leaf;
      this.value = value;
      this.node = node;
      this.path = path;
      this.part = part;
    }

    boolean valid() {
      return value != INVALID;
    }
  }

  /** {@code defaults}, {@code routes[2]} or empty for the file level. */
  final String name;

  /** The YAML node of this part, for problems about it as a whole. */
  final YamlNode node;

  /** By key; a key of the schema is one object wherever it appears. */
  final Map<Leaf, Setting> settings = new LinkedHashMap<>();

  FilePart(String name, YamlNode node) {
    this.name = name;
    this.node = node;
  }

  void put(Leaf leaf, Object value, YamlNode valueNode, String path) {
    settings.put(leaf, new Setting(leaf, value, valueNode, path, this));
  }

  Setting get(ConfigSchema.KeyRef key) {
    return settings.get(key.leaf());
  }

  boolean has(ConfigSchema.KeyRef key) {
    return settings.containsKey(key.leaf());
  }
}
