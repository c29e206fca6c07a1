package dev.retryagent.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * {@link Syntax} answers exactly as the regular expressions it replaced: on every short string over
 * the characters that matter, on random longer ones, and around every bound (30 digits, 40 after a
 * whole number's first).
 */
class SyntaxTest {
  private static final Pattern DECIMAL =
      Pattern.compile("(?:[0-9]{1,30}(?:\\.[0-9]{1,30})?|\\.[0-9]{1,30})");
  // "_" groups digits: each one is followed by a digit (no "3_", no "1__0").
  private static final Pattern WHOLE =
      Pattern.compile("[+-]?(?=[0-9][0-9_]{0,40}(?![0-9_]))[0-9](?:_?[0-9])*");
  private static final Pattern NUMBER =
      Pattern.compile(
          "[+-]?(?:(?=[0-9][0-9_]{0,40}(?![0-9_]))[0-9](?:_?[0-9])*(?:\\.[0-9]{1,30})?"
              + "|\\.[0-9]{1,30})");
  private static final Pattern SIZE =
      Pattern.compile("([0-9]{1,30}(?:\\.[0-9]{1,30})?)\\s*([A-Za-z]*)");

  private static final String ALPHABET = "0 9._+-kB\tµ٣e";

  private static void agree(String s) {
    assertThat(Syntax.isDecimal(s)).as("decimal [%s]", s).isEqualTo(DECIMAL.matcher(s).matches());
    assertThat(Syntax.isWhole(s)).as("whole [%s]", s).isEqualTo(WHOLE.matcher(s).matches());
    assertThat(Syntax.isNumber(s)).as("number [%s]", s).isEqualTo(NUMBER.matcher(s).matches());
    Matcher m = SIZE.matcher(s);
    int end = Syntax.sizeNumberEnd(s);
    if (m.matches()) {
      assertThat(end).as("size [%s]", s).isEqualTo(m.end(1));
      assertThat(s.substring(Syntax.skipWhitespace(s, end))).isEqualTo(m.group(2));
    } else {
      assertThat(end).as("size [%s]", s).isEqualTo(-1);
    }
  }

  @Test
  void agreesOnEveryShortString() {
    List<String> strings = new ArrayList<>();
    strings.add("");
    for (int length = 1; length <= 5; length++) {
      List<String> longer = new ArrayList<>();
      for (String prefix : strings) {
        if (prefix.length() == length - 1) {
          for (char c : ALPHABET.toCharArray()) {
            longer.add(prefix + c);
          }
        }
      }
      strings.addAll(longer);
    }
    assertThat(strings).hasSizeGreaterThan(300_000);
    strings.forEach(SyntaxTest::agree);
  }

  @Test
  void agreesAroundEveryBound() {
    for (int n = 0; n <= 45; n++) {
      String digits = "7".repeat(n);
      String underscores = "1" + "_".repeat(Math.max(0, n - 1));
      String grouped = "1" + "_1".repeat(n / 2) + "1".repeat(n % 2); // a tail of n characters
      for (String s :
          new String[] {
            digits,
            "." + digits,
            digits + ".",
            digits + ".5",
            "5." + digits,
            "+" + digits,
            "-" + digits,
            "1" + digits,
            "+1" + digits,
            underscores,
            "+" + underscores,
            underscores + ".5",
            grouped,
            "-" + grouped,
            grouped + ".5",
            digits + "KiB",
            digits + " KiB",
            digits + ".5 MiB",
            "5." + digits + "B",
            digits + "\t\n b"
          }) {
        agree(s);
      }
    }
  }

  @Test
  void agreesOnRandomStrings() {
    Random random = new Random(42);
    String chars = "0123456789._+- \tKiMGBbkx";
    for (int n = 0; n < 200_000; n++) {
      StringBuilder s = new StringBuilder();
      for (int length = random.nextInt(70); length > 0; length--) {
        s.append(chars.charAt(random.nextInt(chars.length())));
      }
      agree(s.toString());
    }
  }
}
