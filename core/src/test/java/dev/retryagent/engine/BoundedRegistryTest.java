package dev.retryagent.engine;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

class BoundedRegistryTest {
  private final Set<String> busy = new HashSet<>();
  private final BoundedRegistry<String, String> registry =
      new BoundedRegistry<>(v -> !busy.contains(v));

  private String get(String key, int max) {
    return registry.get(key, k -> k, max);
  }

  private List<String> keys() {
    return registry.values().stream().collect(Collectors.toList());
  }

  @Test
  void returnsTheSameEntryForTheSameKey() {
    String a = registry.get("a", k -> new String(k), 10);
    assertThat(registry.get("a", k -> new String(k), 10)).isSameAs(a);
    assertThat(registry.size()).isEqualTo(1);
  }

  @Test
  void dropsTheLeastRecentlyUsedIdleEntryPastTheBound() {
    get("a", 3);
    get("b", 3);
    get("c", 3);
    get("a", 3); // a is now the most recently used
    get("d", 3);
    assertThat(keys()).containsExactly("c", "a", "d");
    assertThat(registry.evictions()).isEqualTo(1);
  }

  @Test
  void skipsBusyEntriesWhenChoosingWhatToDrop() {
    get("a", 3);
    get("b", 3);
    get("c", 3);
    busy.add("a");
    get("d", 3);
    assertThat(keys()).containsExactly("a", "c", "d");
  }

  @Test
  void dropsTheLeastRecentlyUsedEntryWhenNoneIsIdle() {
    get("a", 2);
    get("b", 2);
    busy.add("a");
    busy.add("b");
    busy.add("c");
    get("c", 2);
    assertThat(keys()).containsExactly("b", "c");
  }

  @Test
  void neverDropsTheEntryJustCreated() {
    busy.add("b");
    get("a", 1);
    get("b", 1);
    assertThat(keys()).containsExactly("b");
    get("c", 1);
    assertThat(keys()).containsExactly("c");
  }

  @Test
  void staysWithinTheBoundUnderManyHosts() {
    for (int i = 0; i < 10_000; i++) {
      get("host-" + i, 100);
    }
    assertThat(registry.size()).isEqualTo(100);
    assertThat(registry.evictions()).isEqualTo(9_900);
    assertThat(keys().get(99)).isEqualTo("host-9999");
  }
}
