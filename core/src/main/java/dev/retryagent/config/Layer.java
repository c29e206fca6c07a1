package dev.retryagent.config;

import java.util.LinkedHashMap;
import java.util.Map;
import org.yaml.snakeyaml.nodes.Node;

/**
 * The keys one part of a file set ({@code defaults}, one route, or the file level), by path
 * relative to that part ({@code retry.backoff.max}), in file order. Only keys written in the file
 * are here; merging layers key by key is what makes a route override defaults deeply.
 */
final class Layer {
  /** Marks a value that was written but invalid (already reported); it is never applied. */
  static final Object INVALID = new Object();

  /** One key as written: its value, where it is, and its full path for messages. */
  static final class Setting {
    final Schema.Leaf leaf;
    final Object value;
    final Node node;
    final String path;
    final Layer layer;

    Setting(Schema.Leaf leaf, Object value, Node node, String path, Layer layer) {
      this.leaf = leaf;
      this.value = value;
      this.node = node;
      this.path = path;
      this.layer = layer;
    }

    boolean valid() {
      return value != INVALID;
    }
  }

  /** {@code defaults}, {@code routes[2]} or empty for the file level. */
  final String name;

  /** The YAML node of this part, for problems about it as a whole. */
  final Node node;

  final Map<String, Setting> settings = new LinkedHashMap<>();

  Layer(String name, Node node) {
    this.name = name;
    this.node = node;
  }

  void put(String key, Schema.Leaf leaf, Object value, Node valueNode, String path) {
    settings.put(key, new Setting(leaf, value, valueNode, path, this));
  }

  Setting get(String key) {
    return settings.get(key);
  }

  boolean has(String key) {
    return settings.containsKey(key);
  }
}
