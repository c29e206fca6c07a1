package dev.retryagent.config;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/**
 * The file's own {@code agent.strict} read from a file that failed: what the full parser would say
 * about it, never more (ConfigSourcesTest covers the files, this the rare shapes of the text).
 */
class StrictProbeTest {
  private static Boolean probe(String text) {
    return StrictProbe.read(text, false, Map.of());
  }

  private static Boolean probeCut(String text) {
    return StrictProbe.read(text, true, Map.of());
  }

  /**
   * {@code strict: true: x} is no scalar {@code true}: the parser refuses the map it starts at its
   * {@code :} (block: "mapping values are not allowed here"; flow: "expected ',' or '}'"), so the
   * value is not known, as for any value the first error falls in.
   */
  @Test
  void aValueFollowedByAMapsColonIsNotKnown() {
    assertThat(probe("agent:\n  strict: true: x\n")).isNull();
    assertThat(probe("agent:\n  strict: true : x\n")).isNull();
    assertThat(probe("agent:\n  strict: true\t: x\n")).isNull();
    assertThat(probe("agent:\n  strict: true:\n")).isNull();
    assertThat(probe("agent:\n  strict: \"true\": x\n")).isNull();
    assertThat(probe("agent:\n  strict: true\n    more: x\n")).isNull(); // `true more: x`
    assertThat(probe("agent: {strict: true: x}\n")).isNull();
    assertThat(probe("agent: {strict: \"true\":x}\n")).isNull();
    assertThat(probe("agent: {strict: false: x}\n")).isNull();
  }

  /** A colon that is no map's, or an error after the value's line, leaves the value as read. */
  @Test
  void aColonOrAnErrorThatIsNotTheValuesLeavesItAsRead() {
    // part of the plain scalar `true:x`, which is not true
    assertThat(probe("agent: {strict: true:x}\n---\n")).isFalse();
    assertThat(probe("agent:\n  strict: true :x\n---\n")).isFalse();
    // after a comment, on the next line (an empty key SnakeYAML refuses), after a tab
    assertThat(probe("agent:\n  strict: true # a: b\n\t\n")).isTrue();
    assertThat(probe("agent:\n  strict: true\n  : x\n")).isTrue();
    assertThat(probe("agent:\n  strict: true\n\tmode: x\n")).isTrue();
    assertThat(probe("agent: {strict: true}: x\n")).isTrue();
  }

  /**
   * Text cut at a size limit: an answer counts only when something written after what decided it
   * was read; the file may go on with the value's end, with {@code strict} in the agent section, or
   * with the agent section.
   */
  @Test
  void inCutTextAnAnswerCountsOnlyWhenSomethingAfterItWasRead() {
    assertThat(probeCut("# only comments up to the cut\n#####")).isNull();
    assertThat(probeCut("---\n# an empty document so far\n###")).isNull();
    assertThat(probeCut("defaults: {}\n# comments\n#####")).isNull();
    assertThat(probeCut("agent:\n  mode: observe\n  # comments\n  ####")).isNull();
    assertThat(probeCut("agent:\n  strict: t")).isNull();
    assertThat(probeCut("agent:\n  strict: true\n  # comments")).isNull();
    // decided before the cut
    assertThat(probeCut("agent:\n  mode: observe\ndefaults: {}\n###")).isFalse();
    assertThat(probeCut("agent: {mode: observe}\n###")).isFalse();
    assertThat(probeCut("agent:\n  strict: f\n  mode: observe\n#")).isFalse();
    assertThat(probeCut("agent:\n  strict: true\n  mode: observe\n#")).isTrue();
    assertThat(probeCut("- a list\n- ###")).isFalse();
    // the same texts whole
    assertThat(probe("# only comments\n")).isFalse();
    assertThat(probe("agent:\n  mode: observe\n  # comments\n")).isFalse();
    assertThat(probe("agent:\n  strict: true\n  # comments")).isTrue();
  }

  /**
   * An empty first document sets nothing, as the walker reads it; a later one does not count. Test
   * only: behaviour already right, checked against a deliberate break.
   */
  @Test
  void anEmptyFirstDocumentReadsAsNotStrict() {
    assertThat(probe("---\n---\nagent: {strict: true}\n")).isFalse();
    assertThat(probe("--- # nothing\n...\n---\nagent: {strict: true}\n")).isFalse();
    assertThat(probe("~\n---\nagent: {strict: true}\n")).isFalse();
  }

  /**
   * A reload never stops the JVM: a file that fails is not probed for its own strict there (the
   * probe's answer would be true for each of these), and says its strict was not read.
   */
  @Test
  void aReloadDoesNotReadAFailingFileForItsStrict() throws Exception {
    byte[][] files = {
      "agent: {strict: true}\ndefaults:\n\tretry: {}\n".getBytes(StandardCharsets.UTF_8),
      "agent: {strict: true}\n# caf\u00e9\n".getBytes(StandardCharsets.ISO_8859_1),
      ("agent:\n  strict: true\n  mode: observe\n" + "#".repeat((int) ConfigLoader.MAX_FILE_BYTES))
          .getBytes(StandardCharsets.UTF_8)
    };
    for (byte[] file : files) {
      AtomicReference<ConfigException> atStart = new AtomicReference<>();
      assertThatThrownBy(() -> ConfigLoader.parse(file, "f.yml", Map.of()))
          .isInstanceOfSatisfying(ConfigException.class, atStart::set);
      assertThat(atStart.get().strict()).isTrue();
      AtomicReference<ConfigException> onReload = new AtomicReference<>();
      assertThatThrownBy(() -> ConfigLoader.parseForReload(file, "f.yml", Map.of()))
          .isInstanceOfSatisfying(ConfigException.class, onReload::set);
      assertThat(onReload.get().strict()).isFalse();
      assertThat(onReload.get().strictUnread()).isTrue();
      assertThat(onReload.get().problems()).isEqualTo(atStart.get().problems());
    }
  }
}
