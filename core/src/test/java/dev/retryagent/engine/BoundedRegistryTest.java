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

  @Test
  void aGroupHoldsTheValuesOfItsKeysWhileTheRegistryHoldsThem() {
    // Grouped by the part before the slash, as the limiters are by target.
    BoundedRegistry<String, String> grouped =
        new BoundedRegistry<>(
            v -> true, new BoundedRegistry.UseClock(), k -> k.substring(0, k.indexOf('/')));
    grouped.get("a/1", k -> k, 3);
    grouped.get("b/1", k -> k, 3);
    grouped.get("a/2", k -> k, 3);
    assertThat(grouped.group("a")).containsExactly("a/1", "a/2");
    assertThat(grouped.group("c")).isEmpty();

    grouped.get("c/1", k -> k, 3); // a/1, the least recently used, goes
    assertThat(grouped.group("a")).containsExactly("a/2");
    grouped.removeKeys(k -> k.startsWith("a/"));
    assertThat(grouped.group("a")).isEmpty();
    assertThat(grouped.group("b")).containsExactly("b/1");
  }

  @Test
  void aNewEntryLooksAtABoundedNumberOfEntriesWhenAllAreBusy() {
    // Issue 14: 100,000 failing hosts made every insert scan all 10,000 busy breakers.
    int[] looked = {0};
    BoundedRegistry<String, String> counting =
        new BoundedRegistry<>(
            v -> {
              looked[0]++;
              return false;
            });
    for (int i = 0; i < 10_000; i++) {
      counting.get("host-" + i, k -> k, 10_000);
    }
    looked[0] = 0;
    counting.get("one-more", k -> k, 10_000);
    assertThat(looked[0]).isLessThanOrEqualTo(BoundedRegistry.IDLE_SEARCH_MAX);
    assertThat(counting.size()).isEqualTo(10_000);
    assertThat(counting.values().get(0)).isEqualTo("host-1"); // host-0, the oldest, went
  }

  @Test
  void aSmallBoundDropsOnlyTheEntriesMadeUnderIt() {
    busy.add("wide-0");
    get("wide-0", 100);
    get("wide-1", 100);
    get("narrow-0", 1);
    get("narrow-1", 1);
    assertThat(keys()).containsExactly("wide-0", "wide-1", "narrow-1");
    // Found under either bound: one entry per key.
    assertThat(registry.get("wide-1", k -> "again", 1)).isEqualTo("wide-1");
    assertThat(registry.size()).isEqualTo(3);
  }

  @Test
  void aBoundNoLongerInUseIsFoldedIntoTheLargestRetained() {
    for (int i = 0; i < 6; i++) {
      get("old-" + i, 10);
    }
    get("small", 1);
    registry.retainBounds(java.util.List.of(1, 4));
    assertThat(keys()).containsExactly("old-2", "old-3", "old-4", "old-5", "small");
    assertThat(registry.evictions()).isEqualTo(2);
    get("next", 4); // counted with the folded ones
    assertThat(registry.size()).isEqualTo(5);
  }

  @Test
  void anIdleEntryBehindASampleOfBusyOnesGoesBeforeAnyOfThem() {
    // The 16 oldest were the open breakers of dead endpoints, 4 idle hosts behind them: a busy
    // one was dropped (its host got a fresh closed breaker) while the idle ones stayed.
    int bound = BoundedRegistry.IDLE_SEARCH + 4;
    for (int i = 0; i < BoundedRegistry.IDLE_SEARCH; i++) {
      get("busy-" + i, bound);
      busy.add("busy-" + i);
    }
    for (int i = 0; i < 4; i++) {
      get("idle-" + i, bound);
    }
    get("new", bound);
    assertThat(keys()).doesNotContain("idle-0").contains("busy-0", "new").hasSize(bound);
  }

  @Test
  void pastTheLongestSearchTheLeastRecentlyUsedOfTheSampleGoes() {
    int bound = BoundedRegistry.IDLE_SEARCH_MAX + 1;
    for (int i = 0; i < bound; i++) {
      get("busy-" + i, bound);
      busy.add("busy-" + i);
    }
    get("idle", bound); // past the search: not looked at
    assertThat(keys()).doesNotContain("busy-0").contains("idle");
  }
}
