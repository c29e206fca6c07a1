package dev.retryagent.config;

import dev.retryagent.config.ConfigSchema.KeyRef;
import dev.retryagent.config.ConfigSchema.Leaf;
import dev.retryagent.config.ConfigSchema.Section;
import dev.retryagent.config.FilePart.Setting;
import dev.retryagent.policy.StatusSet;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * How a section file writes each of its keys, once: its name, its type (with the policy's bounds)
 * and, in the same statement, where a value goes.
 *
 * <pre>{@code
 * if (k.key("maxAttempts", integer(1, RetryPolicy.MAX_ATTEMPTS_LIMIT))) {
 *   d.retry.maxAttempts(k.intValue());
 * }
 * }</pre>
 *
 * <p>{@link ConfigSchema} runs every statement once with a {@link Describer}: {@code key} adds the
 * key to the tree under the sections opened by {@link #section} and returns false, so no setter
 * runs. The assembler runs the statements of one part of a file with an {@link Applier}: {@code
 * key} returns true for each key that part wrote with a valid value, and the setter takes it. The
 * path of a key is its place in the tree; no other code spells it. Its default and meaning are in
 * docs/configuration.md, which the tests hold to the tree and to the built-in defaults.
 *
 * <p>Why statements rather than a table of setters: the configuration is read in {@code premain},
 * where each lambda or method reference is a class spun at start-up and each class per key is a
 * class loaded from the jar. Here a key costs a few bytecodes in its section's class. The arguments
 * are evaluated on every visit, so they stay cheap: a type with a pattern is a constant.
 */
abstract class KeyVisitor {
  private KeyVisitor() {}

  /** A key; true when the setter below it must run with this key's value. */
  final boolean key(String name, ValueType type) {
    return leaf(null, name, type, false);
  }

  /** A key that other code reads through {@code ref}. */
  final boolean key(String name, ValueType type, KeyRef ref) {
    return leaf(ref, name, type, false);
  }

  /** A key that also accepts {@code none} (or null), which the setter receives as null. */
  final boolean noneOr(String name, ValueType type) {
    return leaf(null, name, type, true);
  }

  /** A key that accepts {@code none} and that other code reads through {@code ref}. */
  final boolean noneOr(String name, ValueType type, KeyRef ref) {
    return leaf(ref, name, type, true);
  }

  /** Opens a section; the keys visited through the returned visitor are its children. */
  abstract KeyVisitor section(String name, String doc);

  abstract boolean leaf(KeyRef ref, String name, ValueType type, boolean nullable);

  /** The value of the key whose {@code key} call just returned true, as its type converted it. */
  abstract Object value();

  final boolean bool() {
    return (Boolean) value();
  }

  final int intValue() {
    return Math.toIntExact((Long) value());
  }

  final double number() {
    return (Double) value();
  }

  final Duration duration() {
    return (Duration) value();
  }

  final String text() {
    return (String) value();
  }

  @SuppressWarnings("unchecked")
  final <T> List<T> list() {
    return new ArrayList<>((List<T>) value());
  }

  final StatusSet statuses() {
    return StatusSet.of(this.<String>list());
  }

  // ---------------------------------------------------------------- the two visitors

  /** Builds the tree: adds each key to the open section, and never enters a setter. */
  static final class Describer extends KeyVisitor {
    private final Section section;
    private final String prefix;
    private final List<Leaf> leaves;

    Describer(Section section, String prefix) {
      this(section, prefix, new ArrayList<>());
    }

    private Describer(Section section, String prefix, List<Leaf> leaves) {
      this.section = section;
      this.prefix = prefix;
      this.leaves = leaves;
    }

    /** The keys described so far, in order, this visitor's sections included. */
    List<Leaf> leaves() {
      return leaves;
    }

    @Override
    KeyVisitor section(String name, String doc) {
      Section child = new Section(name, doc);
      section.add(child);
      return new Describer(child, prefix + name + ".", leaves);
    }

    @Override
    boolean leaf(KeyRef ref, String name, ValueType type, boolean nullable) {
      Leaf leaf = new Leaf(name, prefix + name, type, nullable);
      section.add(leaf);
      leaves.add(leaf);
      if (ref != null) {
        ref.bind(leaf);
      }
      return false;
    }

    @Override
    Object value() {
      throw new IllegalStateException("a setter ran while the schema was being described");
    }
  }

  /**
   * Applies the settings of one part of a file: the n-th key visited is the part's n-th key, so the
   * statements must visit every key unconditionally (a name check guards the order).
   */
  static final class Applier extends KeyVisitor {
    private final List<Leaf> leaves;
    private final Map<Leaf, Setting> settings;
    private int next;
    private Setting current;
    private boolean sawInvalid;

    Applier(List<Leaf> leaves, Map<Leaf, Setting> settings) {
      this.leaves = leaves;
      this.settings = settings;
    }

    @Override
    KeyVisitor section(String name, String doc) {
      return this;
    }

    @Override
    boolean leaf(KeyRef ref, String name, ValueType type, boolean nullable) {
      Leaf leaf = leaves.get(next++);
      if (!leaf.name.equals(name)) {
        throw new IllegalStateException("keys visited out of order: " + name + " at " + leaf.path);
      }
      current = settings.get(leaf);
      if (current == null) {
        return false;
      }
      if (!current.valid()) {
        sawInvalid = true; // Already reported by the walker; the part is not built.
        return false;
      }
      return true;
    }

    @Override
    Object value() {
      return current.value;
    }

    /** The setting of the key visited last, or null when the part did not write it. */
    Setting current() {
      return current;
    }

    /**
     * True when a visited key was written with an invalid value.
     *
     * @throws IllegalStateException when the statements skipped a key of the part
     */
    boolean sawInvalid() {
      if (next != leaves.size()) {
        throw new IllegalStateException(
            "keys visited out of order: " + next + " of " + leaves.size() + " visited");
      }
      return sawInvalid;
    }
  }
}
