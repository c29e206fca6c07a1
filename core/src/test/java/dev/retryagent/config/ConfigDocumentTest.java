package dev.retryagent.config;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retryagent.config.ConfigDocument.Row;
import dev.retryagent.config.ConfigSchema.Leaf;
import dev.retryagent.config.ValueType.EnumType;
import dev.retryagent.config.ValueType.ListType;
import dev.retryagent.internal.Units;
import dev.retryagent.policy.CircuitBreakerPolicy;
import java.util.ArrayList;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * docs/configuration.md is the contract: each key it documents has exactly one definition in the
 * schema, each key of the schema is documented, and what the document says a key accepts is what
 * the loader enforces. (That each default is the built-in one is ConfigFilesTest's.)
 */
class ConfigDocumentTest {

  @Test
  void everyDocumentedKeyHasExactlyOneDefinitionAndEveryKeyIsDocumented() {
    Map<String, Set<Leaf>> definitions = new LinkedHashMap<>();
    for (Map.Entry<String, Leaf> e : ConfigSchema.ROOT.leaves().entrySet()) {
      definitions
          .computeIfAbsent(
              ConfigDocument.keyOf(e.getKey()),
              k -> Collections.newSetFromMap(new IdentityHashMap<>()))
          .add(e.getValue());
    }
    Map<String, Row> documented = ConfigDocument.byKey();
    assertThat(documented.keySet()).containsExactlyInAnyOrderElementsOf(definitions.keySet());
    for (Map.Entry<String, Set<Leaf>> e : definitions.entrySet()) {
      assertThat(e.getValue()).as(e.getKey()).hasSize(1);
    }
    int statements = 0;
    for (ConfigSchema.Part part :
        List.of(ConfigSchema.FILE, ConfigSchema.ROUTE_OWN, ConfigSchema.POLICY)) {
      statements += part.leaves().size();
    }
    assertThat(statements).as("key statements in the section files").isEqualTo(documented.size());
  }

  @Test
  void defaultsAndRoutesShareThePolicySections() {
    for (ConfigSchema.Section section : ConfigSchema.POLICY_SECTIONS) {
      assertThat(ConfigSchema.ROUTE.child(section.name)).isSameAs(section);
      assertThat(ConfigSchema.DEFAULTS.child(section.name)).isSameAs(section);
    }
  }

  @Test
  void everyKeyHasADefaultExceptARoutesOwnKeys() {
    List<String> without = new ArrayList<>();
    for (Row row : ConfigDocument.rows()) {
      if (row.defaultText == null) {
        without.add(row.key);
      }
    }
    assertThat(without)
        .containsExactly(
            "routes[].name",
            "routes[].match.hosts",
            "routes[].match.methods",
            "routes[].match.paths");
  }

  @Test
  void whatAKeyAcceptsIsWhatTheLoaderEnforces() {
    Map<String, Leaf> leaves = new LinkedHashMap<>();
    for (Map.Entry<String, Leaf> e : ConfigSchema.ROOT.leaves().entrySet()) {
      leaves.put(ConfigDocument.keyOf(e.getKey()), e.getValue());
    }
    int bounded = 0;
    for (Row row : ConfigDocument.rows()) {
      Leaf leaf = leaves.get(row.key);
      ValueType type = leaf.type instanceof ListType ? ((ListType) leaf.type).element : leaf.type;
      if (type.range() != null) {
        assertThat(row.accepts).as(row.toString()).contains(type.range());
        bounded++;
      }
      if (type instanceof EnumType) {
        for (String name : ((EnumType) type).names) {
          assertThat(row.accepts).as(row.toString()).contains("`" + name + "`");
        }
      }
      if (type == ValueType.BOOLEAN) {
        assertThat(row.accepts).as(row.toString()).isEqualTo("`true` or `false`");
      }
      if (leaf.nullable) {
        assertThat(row.accepts).as(row.toString()).contains("`none`");
      }
      if (leaf.type instanceof ListType && ((ListType) leaf.type).emptyProblem() != null) {
        assertThat(row.accepts).as(row.toString()).contains("non-empty list");
      }
    }
    assertThat(bounded).as("keys with numeric bounds").isGreaterThanOrEqualTo(20);
  }

  @Test
  void aWindowsSizeIsDocumentedWithBothOfItsRanges() {
    Row size = ConfigDocument.byKey().get("circuitBreaker.window.size");
    assertThat(size.accepts)
        .contains("count: 1.." + CircuitBreakerPolicy.MAX_COUNT_WINDOW)
        .contains(
            "time: a duration "
                + Units.formatDuration(CircuitBreakerPolicy.MIN_TIME_WINDOW)
                + ".."
                + Units.formatDuration(CircuitBreakerPolicy.MAX_TIME_WINDOW));
    assertThat(size.meaning)
        .contains(
            "a time window without a size is "
                + Units.formatDuration(CircuitBreakerPolicy.DEFAULT_TIME_WINDOW));
  }

  @Test
  void everyRowHasAMeaning() {
    for (Row row : ConfigDocument.rows()) {
      assertThat(row.meaning).as(row.toString()).isNotBlank();
      assertThat(row.accepts).as(row.toString()).isNotBlank();
    }
  }
}
