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
        .isEqualTo("java.lang.IllegalStateException: refused at <redacted> then <redacted>")
        .doesNotContain("pw")
        .doesNotContain("token")
        .doesNotContain("\n");
  }

  @Test
  void aPasswordHoldingSlashOrQuestionMarkIsCutWhole() {
    assertThat(CauseLine.of(new RuntimeException("at http://u:p/w?x@h/x")))
        .isEqualTo("java.lang.RuntimeException: at <redacted>");
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

  /**
   * What core's Sanitizer hid, and the first cut of this helper wrote (r41): a query holding '@', a
   * user-info without a scheme, a password with a blank (the JDK's URISyntaxException), escaped and
   * encoded URLs, a key's value, a credential after its word. Plain words stay.
   */
  @Test
  void noWordThatCouldCarryASecretIsWritten() {
    String[] messages = {
      "bad http://h/cb?email=a@b.com&token=SECRET x",
      "proxy admin:SECRET@10.0.0.1:3128 refused",
      "Illegal character in authority at index 7: http://alice:SECRET horse@h/x",
      "at http:\\/\\/u:SECRET@h\\/x",
      "at http%3A%2F%2Fu%3ASECRET%40h",
      "password=SECRET x",
      "header Authorization: Bearer SECRET",
      "u:SECRET word@h",
    };
    for (String m : messages) {
      assertThat(CauseLine.of(new IllegalStateException(m))).as(m).doesNotContain("SECRET");
    }
    assertThat(
            CauseLine.of(new IllegalStateException("cannot rewrite okhttp3/RealCall: no method")))
        .isEqualTo("java.lang.IllegalStateException: cannot rewrite okhttp3/RealCall: no method");
    assertThat(CauseLine.of(new IllegalStateException("connect to localhost:8080 failed")))
        .isEqualTo("java.lang.IllegalStateException: connect to localhost:8080 failed");
  }

  @Test
  void aMessageThatCannotBeReadIsTheClassNameAlone() {
    RuntimeException odd =
        new RuntimeException() {
          @Override
          public String getMessage() {
            throw new NoClassDefFoundError("x");
          }
        };
    assertThat(CauseLine.of(odd)).isEqualTo(odd.getClass().getName());
  }
}
