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

    ParsedFile(YamlNode root) {
      this.file = new FilePart("", root);
    }
  }

  private final FileProblems problems;
  private final FileProblems warnings;
  private final EnvSubstitution env;

  /**
   * @param warnings where valid values that most likely do not do what was meant go ({@link
   *     ValueType#caution})
   */
  ConfigWalker(FileProblems problems, FileProblems warnings, EnvSubstitution env) {
    this.problems = problems;
    this.warnings = warnings;
    this.env = env;
  }

  ParsedFile walk(YamlNode root) {
    ParsedFile file = new ParsedFile(root);
    if (root != null) {
      walkSection(root, ConfigSchema.ROOT, "", file.file, file);
    }
    return file;
  }

  private void walkSection(
      YamlNode node, Section section, String path, FilePart part, ParsedFile file) {
    if (!tagAllowed(node, path) || isNull(node)) {
      return; // An empty section (`retry:`) sets nothing.
    }
    if (!(node instanceof YamlNode.Mapping)) {
      problems.at(node, path, "found " + describe(node) + "; allowed " + mapOf(section));
      return;
    }
    Map<String, YamlNode> seen = new HashMap<>();
    for (YamlNode.Entry tuple : ((YamlNode.Mapping) node).getValue()) {
      YamlNode keyNode = tuple.getKeyNode();
      YamlNode valueNode = tuple.getValueNode();
      if (!(keyNode instanceof YamlNode.Scalar) || isNull(keyNode)) {
        problems.at(
            keyNode, path, "found " + describe(keyNode) + " as a key; allowed " + keysOf(section));
        continue;
      }
      String key = ((YamlNode.Scalar) keyNode).getValue();
      String childPath = join(path, key);
      if (YamlNode.MERGE.equals(keyNode.tag()) || key.equals("<<")) {
        problems.at(
            keyNode,
            path,
            "found a YAML merge key (<<); merge keys are not supported: put shared settings in"
                + " defaults, which every route inherits");
        continue;
      }
      YamlNode first = seen.putIfAbsent(key, keyNode);
      if (first != null) {
        problems.at(
            keyNode,
            childPath,
            "found the key "
                + ConfigProblem.shown(key)
                + " a second time (first at line "
                + (first.line() + 1)
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

  private void walkList(YamlNode node, SectionList list, String path, ParsedFile file) {
    if (!tagAllowed(node, path) || isNull(node)) {
      return;
    }
    if (!(node instanceof YamlNode.Sequence)) {
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
    List<YamlNode> items = ((YamlNode.Sequence) node).getValue();
    if (items.size() > list.maxItems) {
      problems.at(
          node, path, "found " + items.size() + " routes; allowed at most " + list.maxItems);
      return;
    }
    for (int i = 0; i < items.size(); i++) {
      YamlNode item = items.get(i);
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
  private Object readValue(Leaf leaf, YamlNode node, String path) {
    if (!tagAllowed(node, path)) {
      return FilePart.INVALID;
    }
    if (leaf.type instanceof ListType) {
      return readList((ListType) leaf.type, node, path);
    }
    if (!(node instanceof YamlNode.Scalar)) {
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
    String raw = ((YamlNode.Scalar) node).getValue();
    String text = substitute(raw, leaf.type, node, path);
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

  private Object readList(ListType type, YamlNode node, String path) {
    if (!(node instanceof YamlNode.Sequence)) {
      if (node instanceof YamlNode.Scalar && !isNull(node)) {
        // Shown as an item is, with what its type hides hidden (a host's user-info, a path's
        // query), in the hint too: the value is one item, as the hint says.
        String shown = type.element.shown(((YamlNode.Scalar) node).getValue());
        problems.at(
            node,
            path,
            "found "
                + shown
                + "; allowed "
                + type.allowed()
                + " (for one item write ["
                + shown
                + "])");
      } else {
        problems.at(node, path, "found " + describe(node) + "; allowed " + type.allowed());
      }
      return FilePart.INVALID;
    }
    List<Object> out = new ArrayList<>();
    boolean ok = true;
    List<YamlNode> items = ((YamlNode.Sequence) node).getValue();
    for (int i = 0; i < items.size(); i++) {
      YamlNode item = items.get(i);
      String itemPath = path + "[" + i + "]";
      if (!tagAllowed(item, itemPath)) {
        ok = false;
        continue;
      }
      if (!(item instanceof YamlNode.Scalar) || isNull(item)) {
        problems.at(
            item, itemPath, "found " + describe(item) + "; allowed " + type.element.allowed());
        ok = false;
        continue;
      }
      String raw = ((YamlNode.Scalar) item).getValue();
      String text = substitute(raw, type.element, item, itemPath);
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
      ValueType type, boolean nullable, String raw, String text, YamlNode node, String path) {
    String orNone = nullable ? ", or none" : "";
    if (text.trim().isEmpty()) {
      problems.at(
          node,
          path,
          "found an empty value" + from(type, raw, text) + "; allowed " + type.allowed() + orNone);
      return FilePart.INVALID;
    }
    try {
      Object value = type.convert(text);
      String caution = type.caution(value);
      if (caution != null) {
        warnings.at(node, path, caution);
      }
      return value;
    } catch (IllegalArgumentException e) {
      String found = type.shown(text) + (raw.equals(text) ? "" : " (from " + type.shown(raw) + ")");
      problems.at(node, path, "found " + found + "; " + e.getMessage() + orNone);
      return FilePart.INVALID;
    }
  }

  /** Where a substituted value came from, as in {@code found 0 (from "${N}")}. */
  private static String from(ValueType type, String raw, String text) {
    return raw.equals(text) ? "" : " (from " + type.shown(raw) + ")";
  }

  /** The text after environment substitution, or null after reporting why not. */
  private String substitute(String raw, ValueType type, YamlNode node, String path) {
    try {
      return env.apply(raw, type.maySecret());
    } catch (IllegalArgumentException e) {
      problems.at(node, path, e.getMessage());
      return null;
    }
  }

  private boolean tagAllowed(YamlNode node, String path) {
    String tag = node.tag();
    if (YamlNode.NULL.equals(tag)
        && node instanceof YamlNode.Scalar
        && !SnakeYamlReader.NullAndMergeResolver.isNull(((YamlNode.Scalar) node).getValue())) {
      // `path: !!null /var/log/x` would otherwise drop the value written after the tag unsaid:
      // only the spellings YAML itself reads as null (an empty value, ~, null) are one.
      problems.at(
          node,
          path,
          // The value is not repeated: it may be a password (fleet.redis.url).
          "found the tag !!null before a value; YAML tags are not allowed here: write the value"
              + " alone, or none");
      return false;
    }
    if (tag.startsWith(YamlNode.STANDARD_TAG_PREFIX)) {
      return true;
    }
    problems.at(
        node,
        path,
        "found the tag " + ConfigProblem.shown(tag) + "; YAML tags are not allowed here");
    return false;
  }

  /**
   * A node written where a section or list belongs, for "found ...": its value, or "a list", "a
   * map", "nothing". The value is no key's, so what any key hides is hidden ({@link
   * ConfigProblem#shownAny}): {@code redis: "user:password@cache"} is a URL one level too high.
   */
  private static String describe(YamlNode node) {
    if (node instanceof YamlNode.Scalar) {
      return isNull(node)
          ? "nothing (null)"
          : ConfigProblem.shownAny(((YamlNode.Scalar) node).getValue());
    }
    if (node instanceof YamlNode.Sequence) {
      return "a list";
    }
    if (node instanceof YamlNode.Mapping) {
      return "a map";
    }
    return "an unexpected node";
  }

  private static boolean isNull(YamlNode node) {
    return node.isNull();
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
