package dev.retryagent.config;

import dev.retryagent.config.ConfigSchema.Leaf;
import dev.retryagent.config.ConfigSchema.Section;
import dev.retryagent.config.ConfigSchema.SectionList;
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
 * what the file sets into {@link FilePart}s. It never stops at the first problem, and it never goes
 * deeper than the schema, so recursive aliases cannot make it loop.
 */
final class ConfigWalker {
  /** What one file sets, before merging and building. */
  static final class ParsedFile {
    /** {@code version} and {@code agent.*}. */
    final FilePart file;

    FilePart defaults = new FilePart("defaults", null);
    final List<FilePart> routes = new ArrayList<>();

    ParsedFile(Node root) {
      this.file = new FilePart("", root);
    }
  }

  private final FileProblems problems;
  private final EnvSubstitution env;

  ConfigWalker(FileProblems problems, EnvSubstitution env) {
    this.problems = problems;
    this.env = env;
  }

  ParsedFile walk(Node root) {
    ParsedFile file = new ParsedFile(root);
    if (root != null) {
      walkSection(root, ConfigSchema.ROOT, "", file.file, file);
    }
    return file;
  }

  private void walkSection(
      Node node, Section section, String path, FilePart part, ParsedFile file) {
    if (isNull(node) || !tagAllowed(node, path)) {
      return; // An empty section (`retry:`) sets nothing.
    }
    if (!(node instanceof MappingNode)) {
      problems.at(node, path, "found " + describe(node) + "; allowed " + mapOf(section));
      return;
    }
    Map<String, Node> seen = new HashMap<>();
    for (NodeTuple tuple : ((MappingNode) node).getValue()) {
      Node keyNode = tuple.getKeyNode();
      Node valueNode = tuple.getValueNode();
      if (!(keyNode instanceof ScalarNode) || isNull(keyNode)) {
        problems.at(
            keyNode, path, "found " + describe(keyNode) + " as a key; allowed " + keysOf(section));
        continue;
      }
      String key = ((ScalarNode) keyNode).getValue();
      String childPath = join(path, key);
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
                + ConfigProblem.shown(key)
                + " a second time (first at line "
                + (first.getStartMark().getLine() + 1)
                + "); a key may appear once");
        continue;
      }
      ConfigSchema.Node child = section.child(key);
      if (child == null) {
        problems.at(keyNode, childPath, unknownKey(key, section));
      } else if (child == ConfigSchema.DEFAULTS) {
        file.defaults = new FilePart("defaults", valueNode);
        walkSection(valueNode, ConfigSchema.DEFAULTS, childPath, file.defaults, file);
      } else if (child instanceof SectionList) {
        walkList(valueNode, (SectionList) child, childPath, file);
      } else if (child instanceof Section) {
        walkSection(valueNode, (Section) child, childPath, part, file);
      } else {
        Leaf leaf = (Leaf) child;
        part.put(leaf, readValue(leaf, valueNode, childPath), valueNode, childPath);
      }
    }
  }

  private void walkList(Node node, SectionList list, String path, ParsedFile file) {
    if (isNull(node) || !tagAllowed(node, path)) {
      return;
    }
    if (!(node instanceof SequenceNode)) {
      problems.at(
          node,
          path,
          "found "
              + describe(node)
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
      FilePart route = new FilePart(itemPath, item);
      file.routes.add(route);
      if (isNull(item)) {
        problems.at(item, itemPath, "found nothing; allowed a route, " + mapOf(list.element));
      } else {
        walkSection(item, list.element, itemPath, route, file);
      }
    }
  }

  /** The value of a leaf, null for none, or {@link FilePart#INVALID} after reporting why. */
  private Object readValue(Leaf leaf, Node node, String path) {
    if (!tagAllowed(node, path)) {
      return FilePart.INVALID;
    }
    if (leaf.type instanceof ListType) {
      return readList((ListType) leaf.type, node, path);
    }
    if (!(node instanceof ScalarNode)) {
      problems.at(node, path, "found " + describe(node) + "; allowed " + allowed(leaf));
      return FilePart.INVALID;
    }
    if (isNull(node)) {
      if (leaf.nullable) {
        return null;
      }
      problems.at(node, path, "found nothing (null); allowed " + allowed(leaf));
      return FilePart.INVALID;
    }
    String raw = ((ScalarNode) node).getValue();
    String text = substitute(raw, node, path);
    if (text == null) {
      return FilePart.INVALID;
    }
    String trimmed = text.trim();
    if (leaf.nullable
        && (trimmed.isEmpty()
            || trimmed.equalsIgnoreCase("none")
            || trimmed.equalsIgnoreCase("null")
            || trimmed.equals("~"))) {
      return null;
    }
    return convert(leaf.type, leaf.nullable, raw, text, node, path);
  }

  private Object readList(ListType type, Node node, String path) {
    if (!(node instanceof SequenceNode)) {
      String hint =
          node instanceof ScalarNode && !isNull(node)
              ? " (for one item write [" + ((ScalarNode) node).getValue() + "])"
              : "";
      problems.at(node, path, "found " + describe(node) + "; allowed " + type.allowed() + hint);
      return FilePart.INVALID;
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
      if (!(item instanceof ScalarNode) || isNull(item)) {
        problems.at(
            item, itemPath, "found " + describe(item) + "; allowed " + type.element.allowed());
        ok = false;
        continue;
      }
      String raw = ((ScalarNode) item).getValue();
      String text = substitute(raw, item, itemPath);
      Object v =
          text == null ? FilePart.INVALID : convert(type.element, false, raw, text, item, itemPath);
      if (v == FilePart.INVALID) {
        ok = false;
      } else {
        out.add(v);
      }
    }
    if (ok && out.isEmpty() && type.emptyProblem() != null) {
      problems.at(node, path, type.emptyProblem());
      return FilePart.INVALID;
    }
    return ok ? Collections.unmodifiableList(out) : FilePart.INVALID;
  }

  /**
   * The converted value, or {@link FilePart#INVALID} after reporting why. The texts of a problem
   * are built only when there is one: this runs for every value of every file.
   */
  private Object convert(
      ValueType type, boolean nullable, String raw, String text, Node node, String path) {
    String orNone = nullable ? ", or none" : "";
    if (text.trim().isEmpty()) {
      problems.at(
          node,
          path,
          "found an empty value" + from(raw, text) + "; allowed " + type.allowed() + orNone);
      return FilePart.INVALID;
    }
    try {
      return type.convert(text);
    } catch (IllegalArgumentException e) {
      String found = type.shown(text) + (raw.equals(text) ? "" : " (from " + type.shown(raw) + ")");
      problems.at(node, path, "found " + found + "; " + e.getMessage() + orNone);
      return FilePart.INVALID;
    }
  }

  /** Where a substituted value came from, as in {@code found 0 (from "${N}")}. */
  private static String from(String raw, String text) {
    return raw.equals(text) ? "" : " (from " + ConfigProblem.shown(raw) + ")";
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
        node,
        path,
        "found the tag " + ConfigProblem.shown(tag) + "; YAML tags are not allowed here");
    return false;
  }

  /** A node for "found ...": its value, or "a list", "a map", "nothing". */
  private static String describe(Node node) {
    if (node instanceof ScalarNode) {
      return isNull(node) ? "nothing (null)" : ConfigProblem.shown(((ScalarNode) node).getValue());
    }
    if (node instanceof SequenceNode) {
      return "a list";
    }
    if (node instanceof MappingNode) {
      return "a map";
    }
    return "an unexpected node";
  }

  private static boolean isNull(Node node) {
    return node instanceof ScalarNode && Tag.NULL.equals(node.getTag());
  }

  /** {@code routes[1]} + {@code retry} = {@code routes[1].retry}. */
  private static String join(String path, String key) {
    return path.isEmpty() ? key : path + "." + key;
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
    StringBuilder out = new StringBuilder("unknown key ").append(ConfigProblem.shown(key));
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
