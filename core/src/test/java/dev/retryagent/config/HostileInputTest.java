package dev.retryagent.config;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;

import java.io.RandomAccessFile;
import java.lang.management.ManagementFactory;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A hostile file costs little and yields one clear problem. The time bounds are generous guards
 * against runaway work, not benchmarks; the allocation bounds show nothing is expanded.
 */
class HostileInputTest {
  private static final Duration GUARD = Duration.ofSeconds(10);

  @TempDir Path dir;

  private static List<ConfigProblem> fail(String yaml) {
    AtomicReference<ConfigException> caught = new AtomicReference<>();
    assertTimeoutPreemptively(
        GUARD,
        () ->
            assertThatThrownBy(() -> ConfigLoader.parse(yaml, "hostile.yml", Map.of()))
                .isInstanceOfSatisfying(ConfigException.class, caught::set));
    return caught.get().problems();
  }

  private static long allocatedBy(Runnable r) {
    com.sun.management.ThreadMXBean threads =
        (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
    long id = Thread.currentThread().getId();
    long before = threads.getThreadAllocatedBytes(id);
    r.run();
    return threads.getThreadAllocatedBytes(id) - before;
  }

  static String billionLaughs() {
    StringBuilder y =
        new StringBuilder(
            "a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n");
    for (char c = 'b'; c <= 'i'; c++) {
      char prev = (char) (c - 1);
      y.append(c).append(": &").append(c).append(" [");
      for (int k = 0; k < 9; k++) {
        y.append(k == 0 ? "" : ",").append('*').append(prev);
      }
      y.append("]\n");
    }
    return y.toString();
  }

  @Test
  void aBillionLaughsFileFailsAtTheAliasLimitWithoutExpanding() {
    String yaml = billionLaughs();
    long allocated =
        allocatedBy(
            () -> {
              List<ConfigProblem> problems = fail(yaml);
              assertThat(problems).hasSize(1);
              assertThat(problems.get(0).line()).isEqualTo(4);
              assertThat(problems.get(0).message())
                  .isEqualTo(
                      "found more than 20 aliases to lists or maps; a configuration needs few"
                          + " (this limit stops \"billion laughs\" files)");
            });
    assertThat(allocated).isLessThan(50L << 20);
  }

  @Test
  void aBillionLaughsInsideAValidKeyFailsTheSameWay() {
    String yaml =
        "defaults:\n  retry:\n    retryOn:\n      statuses: &s [503, 503]\n"
            + "      exceptions: [*s, *s, *s, *s, *s, *s, *s, *s, *s, *s, *s, *s, *s, *s, *s, *s, *s,"
            + " *s, *s, *s, *s, *s]\n";
    assertThat(fail(yaml))
        .singleElement()
        .satisfies(p -> assertThat(p.message()).contains("aliases"));
  }

  @Test
  void aFiftyMegabyteStringIsRefusedBeforeParsing() {
    String huge = "a: b\n".repeat(10 << 20);
    long allocated =
        allocatedBy(
            () -> {
              List<ConfigProblem> problems = fail(huge);
              assertThat(problems).hasSize(1);
              assertThat(problems.get(0).line()).isPositive();
              assertThat(problems.get(0).message())
                  .isEqualTo(
                      "found a file of 52428800 characters; allowed at most 262144 (a"
                          + " configuration is a few KiB)");
            });
    assertThat(allocated).isLessThan(10L << 20);
  }

  @Test
  void aFiftyMegabyteFileIsRefusedWithoutBeingRead() throws Exception {
    Path file = dir.resolve("huge.yml");
    try (RandomAccessFile raf = new RandomAccessFile(file.toFile(), "rw")) {
      raf.setLength(50L << 20);
    }
    AtomicReference<ConfigException> caught = new AtomicReference<>();
    long allocated =
        allocatedBy(
            () ->
                assertThatThrownBy(() -> ConfigLoader.load(file, Map.of()))
                    .isInstanceOfSatisfying(ConfigException.class, caught::set));
    assertThat(caught.get().problems())
        .singleElement()
        .satisfies(
            p -> {
              assertThat(p.source()).isEqualTo(file.toString());
              assertThat(p.message())
                  .isEqualTo(
                      "found a file of 52428800 bytes; allowed at most 1048576 (a configuration"
                          + " is a few KiB)");
            });
    assertThat(allocated).isLessThan(5L << 20);
  }

  @Test
  void deepFlowNestingFailsAtTheDepthLimit() {
    List<ConfigProblem> problems = fail("[".repeat(200_000));
    assertThat(problems)
        .singleElement()
        .satisfies(
            p -> {
              assertThat(p.line()).isEqualTo(1);
              assertThat(p.message())
                  .isEqualTo(
                      "found lists or maps nested deeper than 16 levels; a configuration needs at most 6");
            });
    assertThat(fail("{a: ".repeat(50_000)))
        .singleElement()
        .satisfies(p -> assertThat(p.message()).contains("nested deeper than 16"));
  }

  @Test
  void deepBlockNestingFailsAtTheDepthLimit() {
    StringBuilder y = new StringBuilder();
    for (int i = 0; i < 100; i++) {
      y.append(" ".repeat(i)).append("k:\n");
    }
    assertThat(fail(y.toString()))
        .singleElement()
        .satisfies(p -> assertThat(p.message()).contains("nested deeper than 16"));
  }

  @Test
  void aRecursiveKeyIsAProblemNotALoop() {
    List<ConfigProblem> problems = fail("&k [*k]: 1");
    assertThat(problems).isNotEmpty();
    assertThat(problems).allSatisfy(p -> assertThat(p.line()).isPositive());
  }

  @Test
  void aRecursiveValueIsAProblemNotALoop() {
    List<ConfigProblem> problems =
        fail("defaults: &d {retry: {retryOn: {statuses: &s [*s]}}, budget: *d}");
    assertThat(problems)
        .extracting(ConfigProblem::path)
        .containsExactlyInAnyOrder(
            "defaults.retry.retryOn.statuses[0]",
            "defaults.budget.retry",
            "defaults.budget.budget");
  }

  @Test
  void manyDuplicateKeysAreReportedAndTheMessageStaysBounded() {
    String yaml = "version: 1\n".repeat(20_000);
    AtomicReference<ConfigException> caught = new AtomicReference<>();
    assertTimeoutPreemptively(
        GUARD,
        () ->
            assertThatThrownBy(() -> ConfigLoader.parse(yaml, "dup.yml", Map.of()))
                .isInstanceOfSatisfying(ConfigException.class, caught::set));
    assertThat(caught.get().problems()).hasSize(19_999);
    assertThat(caught.get().getMessage().lines().count()).isEqualTo(101);
    assertThat(caught.get().getMessage()).endsWith("... and 19899 more problems");
  }

  @Test
  void tooManyRoutesAreRefused() {
    StringBuilder y = new StringBuilder("routes:\n");
    for (int i = 0; i < 1001; i++) {
      y.append("  - {match: {hosts: [h").append(i).append("]}}\n");
    }
    assertThat(fail(y.toString()))
        .singleElement()
        .satisfies(
            p -> assertThat(p.message()).isEqualTo("found 1001 routes; allowed at most 1000"));
  }

  @Test
  void typeTagsAreNeverInstantiated() {
    String yaml =
        "agent: !!javax.script.ScriptEngineManager [!!java.net.URLClassLoader [[!!java.net.URL"
            + " [\"http://127.0.0.1:1/\"]]]]";
    assertThat(fail(yaml))
        .singleElement()
        .satisfies(
            p -> assertThat(p.message()).startsWith("invalid YAML: Global tag is not allowed"));
  }
}
