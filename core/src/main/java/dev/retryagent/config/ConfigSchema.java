package dev.retryagent.config;

import static dev.retryagent.config.ValueType.integer;

import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The tree of every key of the configuration (docs/configuration.md): its sections, and for each
 * key its type and bounds. The walker checks a file against it, the "did you mean" hints search it,
 * and the tests hold docs/configuration.md (which has each key's default and meaning),
 * config/reference.yml and the JSON schema to it.
 *
 * <p>The keys are written once, in the section files ({@link AgentKeys}, {@link FleetKeys}, {@link
 * RouteKeys}, {@link RetryKeys}, {@link BackoffKeys}, {@link BudgetKeys}, {@link
 * CircuitBreakerKeys}, {@link RateLimitKeys}), as statements that also say where a value goes (see
 * {@link KeyVisitor}). This class runs them once to build the tree; a key's path is its place in
 * it. A file has three {@link Part}s that are applied apart: the file level, a route's own keys,
 * and a policy, which {@code defaults} and every route hold.
 */
final class ConfigSchema {
  private ConfigSchema() {}

  /** Most routes in one file: matching is a linear scan, first match wins. */
  static final int MAX_ROUTES = 1000;

  /** {@code version}, {@code agent} and {@code fleet}. */
  static final Part FILE = new Part();

  /** A route's {@code name} and {@code match}. */
  static final Part ROUTE_OWN = new Part();

  /** {@code retry}, {@code budget}, {@code circuitBreaker}, {@code rateLimit}. */
  static final Part POLICY = new Part();

  static final Section ROOT = new Section("", "retry-agent configuration, version 1.");
  static final Section DEFAULTS =
      new Section("defaults", "The policy of every call that no route claims.");
  static final Section ROUTE =
      new Section(
          "route", "A route: which requests it claims and how its sections differ from defaults.");
  static final SectionList ROUTES =
      new SectionList(
          "routes",
          "First match wins; a route's sections override defaults key by key.",
          ROUTE,
          MAX_ROUTES);

  /** The four sections a policy has, in {@code defaults} and in each route. */
  static final List<Section> POLICY_SECTIONS;

  static {
    FILE.describe(ROOT);
    POLICY.describe(DEFAULTS);
    ROUTE_OWN.describe(ROUTE);
    List<Section> policy = new ArrayList<>();
    for (Node section : DEFAULTS.children.values()) {
      policy.add((Section) section);
      ROUTE.add(section); // The same nodes: a key of both is one definition.
    }
    POLICY_SECTIONS = Collections.unmodifiableList(policy);
    ROOT.add(DEFAULTS);
    ROOT.add(ROUTES);
  }

  /**
   * The key statements of one part, the schema's only list of keys. Run with a describing visitor
   * to build the tree, with an applying one to set what a file wrote.
   */
  static void visit(Part part, KeyVisitor k, ConfigDraft d) {
    if (part == FILE) {
      if (k.key("version", integer(1, 1))) {
        d.version = k.intValue();
      }
      AgentKeys.visit(k, d);
      FleetKeys.visit(k, d);
    } else if (part == ROUTE_OWN) {
      RouteKeys.visit(k, d);
    } else {
      RetryKeys.visit(k, d);
      BudgetKeys.visit(k, d);
      CircuitBreakerKeys.visit(k, d);
      RateLimitKeys.visit(k, d);
    }
  }

  /** A part of a file applied on its own, with its keys in the order its statements visit them. */
  static final class Part {
    private List<Leaf> leaves;

    private Part() {}

    private void describe(Section into) {
      KeyVisitor.Describer describer = new KeyVisitor.Describer(into, "");
      visit(this, describer, null);
      leaves = describer.leaves();
    }

    /** Every key of the part, in visiting order. */
    List<Leaf> leaves() {
      return leaves;
    }
  }

  /**
   * A handle by which code outside a key's section file reads that key (the cross-key checks, the
   * assembler); bound to the key when the tree is built, by the key's one definition.
   */
  static final class KeyRef {
    private Leaf leaf;

    void bind(Leaf leaf) {
      if (this.leaf != null) {
        throw new IllegalStateException("key handle bound twice: " + leaf.path);
      }
      this.leaf = leaf;
    }

    Leaf leaf() {
      return leaf;
    }
  }

  // ---------------------------------------------------------------- nodes of the tree

  /** One key of the tree. */
  abstract static class Node {
    final String name;

    Node(String name) {
      this.name = name;
    }
  }

  /** A map of named keys. Filled while the tree is built, read-only afterwards. */
  static final class Section extends Node {
    /** One line for the JSON schema; the keys' meanings are in docs/configuration.md. */
    final String doc;

    private final Map<String, Node> map = new LinkedHashMap<>();
    final Map<String, Node> children = Collections.unmodifiableMap(map);

    Section(String name, String doc) {
      super(name);
      this.doc = doc;
    }

    void add(Node child) {
      if (map.put(child.name, child) != null) {
        throw new IllegalStateException("duplicate schema key " + child.name + " in " + name);
      }
    }

    Node child(String key) {
      return map.get(key);
    }

    /**
     * The leaves under this section by path relative to it ({@code retry.backoff.max}, {@code
     * routes[].name}), in declaration order. A shared section's leaves appear under each parent.
     */
    Map<String, Leaf> leaves() {
      Map<String, Leaf> out = new LinkedHashMap<>();
      collect("", this, out);
      return out;
    }

    private static void collect(String prefix, Section section, Map<String, Leaf> out) {
      for (Node child : section.map.values()) {
        if (child instanceof Section) {
          collect(prefix + child.name + ".", (Section) child, out);
        } else if (child instanceof SectionList) {
          collect(prefix + child.name + "[].", ((SectionList) child).element, out);
        } else {
          out.put(prefix + child.name, (Leaf) child);
        }
      }
    }

    /**
     * The path, relative to this section, of the deepest descendant named exactly {@code key} (case
     * aside), for "did you mean retry.maxAttempts?"; null when none or several.
     */
    String findDescendant(String key) {
      List<String> found = new ArrayList<>();
      for (Node child : map.values()) {
        if (child instanceof Section) {
          for (Node grandChild : ((Section) child).map.values()) {
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
    /** Relative to its part: {@code retry.backoff.max}, {@code agent.strict}, {@code name}. */
    final String path;

    final ValueType type;

    /** True when {@code none} (or null) is allowed, meaning "not set". */
    final boolean nullable;

    Leaf(String name, String path, ValueType type, boolean nullable) {
      super(name);
      this.path = path;
      this.type = type;
      this.nullable = nullable;
    }
  }

  /** A list of maps of one shape ({@code routes}). */
  static final class SectionList extends Node {
    final String doc;
    final Section element;

    /** Most items accepted. */
    final int maxItems;

    SectionList(String name, String doc, Section element, int maxItems) {
      super(name);
      this.doc = doc;
      this.element = element;
      this.maxItems = maxItems;
    }
  }
}
