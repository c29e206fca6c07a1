package dev.retryagent.config;

import dev.retryagent.config.Schema.Leaf;
import dev.retryagent.config.Schema.Section;
import dev.retryagent.config.Schema.SectionList;
import dev.retryagent.config.ValueType.ListType;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.yaml.snakeyaml.nodes.MappingNode;
import org.yaml.snakeyaml.nodes.Node;
import org.yaml.snakeyaml.nodes.NodeTuple;
import org.yaml.snakeyaml.nodes.ScalarNode;
import org.yaml.snakeyaml.nodes.SequenceNode;
import org.yaml.snakeyaml.nodes.Tag;

/**
 * Walks a YAML node tree along {@link ConfigSchema}, checking every key and value and collecting
 * what the file sets into {@link Layer}s. It never stops at the first problem, and it never goes
 * deeper than the schema, so recursive aliases cannot make it loop.
 */
final class ConfigWalker {
  /** What one file sets, before merging and building. */
  static final class ParsedFile {
    /** {@code version} and {@code agent.*}. */
    final Layer file;

    Layer defaults = new Layer("defaults", null);
    final List<Layer> routes = new ArrayList<>();

    ParsedFile(Node root) {
      this.file = new Layer("", root);
    }
  }

  private final Problems problems;
  private final EnvSubstitution env;

  ConfigWalker(Problems problems, EnvSubstitution env) {
    this.problems = problems;
    this.env = env;
  }

  ParsedFile walk(Node root) {
    ParsedFile file = new ParsedFile(root);
    if (root != null) {
      walkSection(root, ConfigSchema.ROOT, "", "", file.file, file);
    }
    return file;
  }

  private void walkSection(
      Node node, Section section, String path, String keyPrefix, Layer layer, ParsedFile file) {
    if (Texts.isNull(node) || !tagAllowed(node, path)) {
      return; // An empty section (`retry:`) sets nothing.
    }
    if (!(node instanceof MappingNode)) {
      problems.at(node, path, "found " + Texts.describe(node) + "; allowed " + mapOf(section));
      return;
    }
    Map<String, Node> seen = new HashMap<>();
    for (NodeTuple tuple : ((MappingNode) node).getValue()) {
      Node keyNode = tuple.getKeyNode();
      Node valueNode = tuple.getValueNode();
      if (!(keyNode instanceof ScalarNode) || Texts.isNull(keyNode)) {
        problems.at(
            keyNode,
            path,
            "found " + Texts.describe(keyNode) + " as a key; allowed " + keysOf(section));
        continue;
      }
      String key = ((ScalarNode) keyNode).getValue();
      String childPath = Texts.join(path, key);
      if (Tag.MERGE.equals(keyNode.getTag()) || key.equals("<<")) {
        problems.at(
            keyNode,
            path,
            "found a YAML merge key (<<); merge keys are not supported: put shared settings in"
                + " defaults, which every route inherits");
        continue;
      }
      Node first = seen.putIfAbsent(key, keyNode);
      if (first != null) {
        problems.at(
            keyNode,
            childPath,
            "found the key "
                + Texts.shown(key)
                + " a second time (first at line "
                + (first.getStartMark().getLine() + 1)
                + "); a key may appear once");
        continue;
      }
      Schema.Node child = section.child(key);
      if (child == null) {
        problems.at(keyNode, childPath, unknownKey(key, section));
      } else if (child == ConfigSchema.DEFAULTS) {
        file.defaults = new Layer("defaults", valueNode);
        walkSection(valueNode, ConfigSchema.DEFAULTS, childPath, "", file.defaults, file);
      } else if (child instanceof SectionList) {
        walkList(valueNode, (SectionList) child, childPath, file);
      } else if (child instanceof Section) {
        walkSection(valueNode, (Section) child, childPath, keyPrefix + key + ".", layer, file);
      } else {
        Leaf leaf = (Leaf) child;
        layer.put(
            keyPrefix + key, leaf, readValue(leaf, valueNode, childPath), valueNode, childPath);
      }
    }
  }

  private void walkList(Node node, SectionList list, String path, ParsedFile file) {
    if (Texts.isNull(node) || !tagAllowed(node, path)) {
      return;
    }
    if (!(node instanceof SequenceNode)) {
      problems.at(
          node,
          path,
          "found "
              + Texts.describe(node)
              + "; allowed a list of routes, each "
              + mapOf(list.element)
              + " (start each with - )");
      return;
    }
    List<Node> items = ((SequenceNode) node).getValue();
    if (items.size() > list.maxItems) {
      problems.at(
          node, path, "found " + items.size() + " routes; allowed at most " + list.maxItems);
      return;
    }
    for (int i = 0; i < items.size(); i++) {
      Node item = items.get(i);
      String itemPath = path + "[" + i + "]";
      Layer layer = new Layer(itemPath, item);
      file.routes.add(layer);
      if (Texts.isNull(item)) {
        problems.at(item, itemPath, "found nothing; allowed a route, " + mapOf(list.element));
      } else {
        walkSection(item, list.element, itemPath, "", layer, file);
      }
    }
  }

  /** The value of a leaf, null for none, or {@link Layer#INVALID} after reporting why. */
  private Object readValue(Leaf leaf, Node node, String path) {
    if (!tagAllowed(node, path)) {
      return Layer.INVALID;
    }
    if (leaf.type instanceof ListType) {
      return readList((ListType) leaf.type, node, path);
    }
    if (!(node instanceof ScalarNode)) {
      problems.at(node, path, "found " + Texts.describe(node) + "; allowed " + allowed(leaf));
      return Layer.INVALID;
    }
    if (Texts.isNull(node)) {
      if (leaf.nullable) {
        return null;
      }
      problems.at(node, path, "found nothing (null); allowed " + allowed(leaf));
      return Layer.INVALID;
    }
    String raw = ((ScalarNode) node).getValue();
    String text = substitute(raw, node, path);
    if (text == null) {
      return Layer.INVALID;
    }
    String trimmed = text.trim();
    if (leaf.nullable
        && (trimmed.isEmpty()
            || trimmed.equalsIgnoreCase("none")
            || trimmed.equalsIgnoreCase("null")
            || trimmed.equals("~"))) {
      return null;
    }
    return convert(
        leaf.type, raw, text, node, path, allowed(leaf), leaf.nullable ? ", or none" : "");
  }

  private Object readList(ListType type, Node node, String path) {
    if (!(node instanceof SequenceNode)) {
      String hint =
          node instanceof ScalarNode && !Texts.isNull(node)
              ? " (for one item write [" + ((ScalarNode) node).getValue() + "])"
              : "";
      problems.at(
          node, path, "found " + Texts.describe(node) + "; allowed " + type.allowed() + hint);
      return Layer.INVALID;
    }
    List<Object> out = new ArrayList<>();
    boolean ok = true;
    List<Node> items = ((SequenceNode) node).getValue();
    for (int i = 0; i < items.size(); i++) {
      Node item = items.get(i);
      String itemPath = path + "[" + i + "]";
      if (!tagAllowed(item, itemPath)) {
        ok = false;
        continue;
      }
      if (!(item instanceof ScalarNode) || Texts.isNull(item)) {
        problems.at(
            item,
            itemPath,
            "found " + Texts.describe(item) + "; allowed " + type.element.allowed());
        ok = false;
        continue;
      }
      String raw = ((ScalarNode) item).getValue();
      String text = substitute(raw, item, itemPath);
      Object v =
          text == null
              ? Layer.INVALID
              : convert(type.element, raw, text, item, itemPath, type.element.allowed(), "");
      if (v == Layer.INVALID) {
        ok = false;
      } else {
        out.add(v);
      }
    }
    return ok ? Collections.unmodifiableList(out) : Layer.INVALID;
  }

  private Object convert(
      ValueType type,
      String raw,
      String text,
      Node node,
      String path,
      String allowed,
      String orNone) {
    String found = Texts.shown(text) + (raw.equals(text) ? "" : " (from " + Texts.shown(raw) + ")");
    if (text.trim().isEmpty()) {
      problems.at(
          node,
          path,
          "found an empty value"
              + (raw.equals(text) ? "" : " (from " + Texts.shown(raw) + ")")
              + "; allowed "
              + allowed);
      return Layer.INVALID;
    }
    try {
      return type.convert(text);
    } catch (IllegalArgumentException e) {
      problems.at(node, path, "found " + found + "; " + e.getMessage() + orNone);
      return Layer.INVALID;
    }
  }

  /** The text after environment substitution, or null after reporting why not. */
  private String substitute(String raw, Node node, String path) {
    try {
      return env.apply(raw);
    } catch (IllegalArgumentException e) {
      problems.at(node, path, e.getMessage());
      return null;
    }
  }

  private boolean tagAllowed(Node node, String path) {
    String tag = node.getTag().getValue();
    if (tag.startsWith(Tag.PREFIX)) {
      return true;
    }
    problems.at(
        node, path, "found the tag " + Texts.shown(tag) + "; YAML tags are not allowed here");
    return false;
  }

  private static String allowed(Leaf leaf) {
    return leaf.type.allowed() + (leaf.nullable ? ", or none" : "");
  }

  private static String mapOf(Section section) {
    return "a map with the keys " + String.join(", ", section.children.keySet());
  }

  private static String keysOf(Section section) {
    return "a key name such as " + section.children.keySet().iterator().next();
  }

  private static String unknownKey(String key, Section section) {
    StringBuilder out = new StringBuilder("unknown key ").append(Texts.shown(key));
    // A sibling spelt in another case first, then the same key one level down, then a typo.
    String hint = Suggestions.sameName(key, section.children.keySet());
    if (hint == null) {
      hint = section.findDescendant(key);
    }
    if (hint == null) {
      hint = Suggestions.nearest(key, section.children.keySet());
    }
    if (hint != null) {
      out.append("; did you mean `").append(hint).append("`?");
    }
    out.append(" (allowed here: ").append(String.join(", ", section.children.keySet())).append(')');
    return out.toString();
  }
}
