package dev.retryagent.agent.tooling;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class CauseLineTest {

  @Test
  void aCauseSpanningLinesIsOneLine() {
    assertThat(CauseLine.of(new IllegalStateException("bad frame\n\tat x\r\nnext\u2028end")))
        .isEqualTo("java.lang.IllegalStateException: bad frame at x next end");
  }

  @Test
  void aUrlsUserInfoAndQueryAreCut() {
    String line =
        CauseLine.of(
            new IllegalStateException("refused\n\tat http://u:pw@h/x?token=1 then https://h2/y#f"));

    assertThat(line)
        .isEqualTo(
            "java.lang.IllegalStateException: refused at http://<redacted>@h/x then https://h2/y")
        .doesNotContain("pw")
        .doesNotContain("token")
        .doesNotContain("\n");
  }

  @Test
  void aPasswordHoldingSlashOrQuestionMarkIsCutWhole() {
    assertThat(CauseLine.of(new RuntimeException("at http://u:p/w?x@h/x")))
        .isEqualTo("java.lang.RuntimeException: at http://<redacted>@h/x");
  }

  @Test
  void aCauseWithoutMessageIsItsClassName() {
    assertThat(CauseLine.of(new StackOverflowError())).isEqualTo("java.lang.StackOverflowError");
    assertThat(CauseLine.of(null)).isEmpty();
  }

  @Test
  void aLongMessageIsBoundedAndACutUrlShowsNoPartOfItsPassword() {
    StringBuilder m = new StringBuilder();
    while (m.length() < CauseLine.MAX_INPUT_CHARS - 10) {
      m.append("word ");
    }
    m.append("http://user:hunter2@h/x");
    String line = CauseLine.of(new RuntimeException(m.toString()));

    assertThat(line).doesNotContain("hunter").endsWith("...");
    assertThat(line.length()).isLessThanOrEqualTo(400);
    assertThat(CauseLine.clean("a " + "http://user:hunter2@h" + "x".repeat(5000)))
        .doesNotContain("hunter");
  }
}
