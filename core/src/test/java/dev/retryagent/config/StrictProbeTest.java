package dev.retryagent.config;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The file's own {@code agent.strict} read from a file that failed: what the full parser would say
 * about it, never more (ConfigSourcesTest covers the files, this the rare shapes of the text).
 */
class StrictProbeTest {
  private static Boolean probe(String text) {
    return StrictProbe.read(text, false, Map.of());
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
   * An empty first document sets nothing, as the walker reads it; a later one does not count. Test
   * only: behaviour already right, checked against a deliberate break.
   */
  @Test
  void anEmptyFirstDocumentReadsAsNotStrict() {
    assertThat(probe("---\n---\nagent: {strict: true}\n")).isFalse();
    assertThat(probe("--- # nothing\n...\n---\nagent: {strict: true}\n")).isFalse();
    assertThat(probe("~\n---\nagent: {strict: true}\n")).isFalse();
  }
}
