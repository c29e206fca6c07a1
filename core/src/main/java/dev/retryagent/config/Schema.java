package dev.retryagent.config;

import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The shape of the key tree, described once: the walker, the "did you mean" suggestions, the
 * reference file test and the JSON schema test are all driven by it. {@link ConfigSchema} holds the
 * tree itself.
 */
final class Schema {
  private Schema() {}

  /** Applies one parsed value to the builders of a {@link Target}. */
  interface Setter {
    void apply(Target target, Object value);
  }

  /** One key of the tree. */
  abstract static class Node {
    final String name;
    final String doc;

    Node(String name, String doc) {
      this.name = name;
      this.doc = doc;
    }
  }

  /** A map of named keys. */
  static final class Section extends Node {
    final Map<String, Node> children;

    Section(String name, String doc, List<Node> children) {
      super(name, doc);
      Map<String, Node> map = new LinkedHashMap<>();
      for (Node child : children) {
        if (map.put(child.name, child) != null) {
          throw new IllegalStateException("duplicate schema key " + child.name + " in " + name);
        }
      }
      this.children = Collections.unmodifiableMap(map);
    }

    Node child(String key) {
      return children.get(key);
    }

    /** Leaf paths under this section, relative to it, in declaration order. */
    List<String> leafPaths() {
      List<String> out = new ArrayList<>();
      collect("", this, out);
      return out;
    }

    private static void collect(String prefix, Section section, List<String> out) {
      for (Node child : section.children.values()) {
        if (child instanceof Section) {
          collect(prefix + child.name + ".", (Section) child, out);
        } else if (child instanceof SectionList) {
          collect(prefix + child.name + "[].", ((SectionList) child).element, out);
        } else {
          out.add(prefix + child.name);
        }
      }
    }

    /**
     * The path, relative to this section, of the deepest descendant named exactly {@code key} (case
     * aside), for "did you mean retry.maxAttempts?"; null when none or several.
     */
    String findDescendant(String key) {
      List<String> found = new ArrayList<>();
      for (Node child : children.values()) {
        if (child instanceof Section) {
          for (Node grandChild : ((Section) child).children.values()) {
            if (grandChild.name.equalsIgnoreCase(key)) {
              found.add(child.name + "." + grandChild.name);
            }
          }
        }
      }
      return found.size() == 1 ? found.get(0) : null;
    }
  }

  /** A key that holds one value (a scalar or a list of scalars). */
  static final class Leaf extends Node {
    final ValueType type;

    /** True when {@code none} (or null) is allowed, meaning "not set". */
    final boolean nullable;

    /**
     * The default as YAML text, exactly as config/reference.yml writes it; null for route keys
     * without one (an absent match list matches anything; an absent name is route-index).
     */
    final String defaultText;

    final Setter setter;

    Leaf(
        String name,
        ValueType type,
        boolean nullable,
        String defaultText,
        String doc,
        Setter setter) {
      super(name, doc);
      this.type = type;
      this.nullable = nullable;
      this.defaultText = defaultText;
      this.setter = setter;
    }
  }

  /** A list of maps of one shape ({@code routes}). */
  static final class SectionList extends Node {
    final Section element;

    /** Most items accepted. */
    final int maxItems;

    SectionList(String name, String doc, Section element, int maxItems) {
      super(name, doc);
      this.element = element;
      this.maxItems = maxItems;
    }
  }

  static Section section(String name, String doc, Node... children) {
    return new Section(name, doc, List.of(children));
  }

  static Section section(String name, String doc, List<? extends Node> first, Node... more) {
    List<Node> all = new ArrayList<>(first);
    Collections.addAll(all, more);
    return new Section(name, doc, all);
  }

  static Leaf leaf(String name, ValueType type, String defaultText, String doc, Setter setter) {
    return new Leaf(name, type, false, defaultText, doc, setter);
  }

  /** A leaf that also accepts {@code none} (or null), which the setter receives as null. */
  static Leaf noneOr(String name, ValueType type, String defaultText, String doc, Setter setter) {
    return new Leaf(name, type, true, defaultText, doc, setter);
  }
}
