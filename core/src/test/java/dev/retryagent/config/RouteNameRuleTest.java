package dev.retryagent.config;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/**
 * A route's name: version 1 of the contract sets no rule for it, so any text of 1 to 64 characters
 * without a control character and without a blank at an end loads; unique in any case, {@code
 * default} reserved; a refused name is reported with its route and what is wrong, a control
 * character by its code.
 */
class RouteNameRuleTest {
  private static final String[] NAMES = {
    "Payments API",
    "openai:chat",
    "payments/v2",
    "say \\\"hi\\\"", // say "hi"
    "back\\\\slash", // back\slash
    "a,b=c",
    "star*?",
    "caf\u00e9",
    "_payments",
    "-x",
    ".x",
    "%41",
    "{tag}",
    "x]"
  };

  private static final String[] LOADED = {
    "Payments API",
    "openai:chat",
    "payments/v2",
    "say \"hi\"",
    "back\\slash",
    "a,b=c",
    "star*?",
    "caf\u00e9",
    "_payments",
    "-x",
    ".x",
    "%41",
    "{tag}",
    "x]"
  };

  @Test
  void anyNameOfTheContractLoadsAsWritten() throws Exception {
    StringBuilder yaml = new StringBuilder("routes:\n");
    for (int i = 0; i < NAMES.length; i++) {
      yaml.append("  - name: \"").append(NAMES[i]).append("\"\n");
      yaml.append("    match: {hosts: [h").append(i).append(".example]}\n");
    }
    AgentConfig c = ConfigLoader.parse(yaml.toString(), Yaml.SOURCE, Map.of());
    assertThat(c.routes().stream().map(Route::name).collect(Collectors.toList()))
        .containsExactly(LOADED);
    assertThat(c.resolve("GET", "h0.example", 443, "/").routeName()).isEqualTo("Payments API");
    assertThat(c.resolve("GET", "h1.example", 443, "/").routeName()).isEqualTo("openai:chat");
  }

  @Test
  void sixtyFourCharactersLoadCountedAsCharactersNotCodeUnits() throws Exception {
    String emoji = "\ud83d\ude80"; // one character, two UTF-16 units
    String name = emoji.repeat(64);
    assertThat(Yaml.load("routes: [{name: \"" + name + "\"}]").routes().get(0).name())
        .isEqualTo(name);
    assertThat(Yaml.load("routes: [{name: '" + "x".repeat(64) + "'}]").routes()).hasSize(1);
    ConfigProblem p = Yaml.problem("routes: [{name: '" + "x".repeat(65) + "'}]");
    assertThat(p.path()).isEqualTo("routes[0].name");
    assertThat(p.message()).endsWith("; this one has 65 characters");
  }

  @Test
  void aNameWithAControlCharacterIsRefusedNamingItsRouteAndTheCharacterByItsCode() {
    String[][] cases = {
      {"\"a\\tb\"", "\t", "U+0009 at character 2"},
      {"\"a\\nb\"", "\n", "U+000A at character 2"},
      {"\"ab\\x7f\"", "\u007f", "U+007F at character 3"},
      {"\"a\\x85\"", "\u0085", "U+0085 at character 2"},
      {"\"a\\u2028b\"", "\u2028", "U+2028 at character 2"},
      {"\"a\\u2029b\"", "\u2029", "U+2029 at character 2"},
      {"\"r\\x1b[31mred\"", "\u001b", "U+001B at character 2"},
    };
    for (String[] c : cases) {
      List<ConfigProblem> problems =
          Yaml.problems(
              "routes:",
              "  - name: fine",
              "    match: {hosts: [a]}",
              "  - name: " + c[0],
              "    match: {hosts: [b]}");
      assertThat(problems).as(c[0]).hasSize(1);
      ConfigProblem p = problems.get(0);
      assertThat(p.path()).as(c[0]).isEqualTo("routes[1].name");
      assertThat(p.line()).as(c[0]).isEqualTo(4);
      assertThat(p.message())
          .as(c[0])
          .startsWith("found \"")
          .contains("allowed any text of 1 to 64 characters without control characters")
          .endsWith("; this one has the control character " + c[2])
          .doesNotContain(c[1]);
      assertThat(p.toString()).as(c[0]).doesNotContain(c[1]);
    }
  }

  @Test
  void aNameWithAnInvisibleCharacterOrAnUnpairedSurrogateIsRefused() throws Exception {
    // "ab\u202e" writes the rest of its log line right to left in a terminal; "ab" and
    // "ab\u200b" are two routes that look alike; "a\ud800" and "a?" were two routes written the
    // same by every UTF-8 output (the same series twice in one scrape).
    String[][] cases = {
      {"\"ab\\u202e\"", "the invisible character U+202E at character 3"},
      {"\"ab\\u200b\"", "the invisible character U+200B at character 3"},
      {"\"a\\u2066b\\u2069\"", "the invisible character U+2066 at character 2"},
      {"\"soft\\xadhyphen\"", "the invisible character U+00AD at character 5"},
      {"\"a\\ud800\"", "the unpaired surrogate U+D800 at character 2"},
      {"\"\\udc00a\"", "the unpaired surrogate U+DC00 at character 1"},
    };
    for (String[] c : cases) {
      ConfigProblem p = Yaml.problem("routes: [{name: " + c[0] + "}]");
      assertThat(p.path()).as(c[0]).isEqualTo("routes[0].name");
      assertThat(p.message()).as(c[0]).endsWith("; this one has " + c[1]);
    }
    // A pair is one character, and a name of it loads: also one whose code point's low 16 bits
    // read as a surrogate (U+2DC00, U+1D800: c761b72e refused them).
    assertThat(Yaml.load("routes: [{name: \"rocket \\ud83d\\ude80\"}]").routes().get(0).name())
        .isEqualTo("rocket \ud83d\ude80");
    for (String name : new String[] {"svc\ud877\udc00", "orders-\ud836\udc00", "ok \u2764\ufe0f"}) {
      assertThat(RouteKeys.nameProblem(name)).as(name).isNull();
    }
    // Characters that print as nothing: a tag character, the Hangul filler, the Mongolian vowel
    // separator.
    assertThat(RouteKeys.nameProblem("ab\udb40\udc41"))
        .isEqualTo("this one has the invisible character U+E0041 at character 3");
    assertThat(RouteKeys.nameProblem("a\u3164b")).endsWith("U+3164 at character 2");
    assertThat(RouteKeys.nameProblem("a\u180eb")).endsWith("U+180E at character 2");
  }

  /**
   * Every character that prints as nothing is refused, on every JDK alike: each format character
   * (category Cf) this JDK knows, and Unicode 16's Default_Ignorable_Code_Point list, written out
   * here from the Unicode data (r26 found U+FFA0, U+034F, U+17B4, U+1BCA0 and U+1D173 loading).
   * Variation selectors stay allowed (emoji), and nothing else is refused.
   */
  @Test
  void everyCharacterThatPrintsAsNothingIsRefusedAndNoOther() {
    int[][] defaultIgnorable = {
      {0xad, 0xad}, {0x34f, 0x34f}, {0x61c, 0x61c}, {0x115f, 0x1160}, {0x17b4, 0x17b5},
      {0x180b, 0x180f}, {0x200b, 0x200f}, {0x202a, 0x202e}, {0x2060, 0x206f}, {0x3164, 0x3164},
      {0xfe00, 0xfe0f}, {0xfeff, 0xfeff}, {0xffa0, 0xffa0}, {0xfff0, 0xfff8}, {0x1bca0, 0x1bca3},
      {0x1d173, 0x1d17a}, {0xe0000, 0xe0fff}
    };
    // Unicode 16's Cf beyond what this JDK may know (JDK 17 reads Unicode 13).
    int[][] format = {
      {0x600, 0x605},
      {0x6dd, 0x6dd},
      {0x70f, 0x70f},
      {0x890, 0x891},
      {0x8e2, 0x8e2},
      {0xfff9, 0xfffb},
      {0x110bd, 0x110bd},
      {0x110cd, 0x110cd},
      {0x13430, 0x1343f}
    };
    int refused = 0;
    for (int c = 0; c <= Character.MAX_CODE_POINT; c++) {
      if (Character.isISOControl(c)
          || c == 0x2028
          || c == 0x2029
          || Character.isSurrogate((char) c) && c <= 0xffff) {
        continue; // refused as a control character or a surrogate, with their own words
      }
      boolean selector =
          c >= 0xfe00 && c <= 0xfe0f
              || c >= 0xe0100 && c <= 0xe01ef
              || c >= 0x180b && c <= 0x180f && c != 0x180e;
      boolean invisible =
          !selector
              && (Character.getType(c) == Character.FORMAT
                  || within(c, defaultIgnorable)
                  || within(c, format));
      String name = "a" + new String(Character.toChars(c)) + "b";
      String problem = RouteKeys.nameProblem(name);
      if (invisible) {
        refused++;
        assertThat(problem)
            .as("U+%04X", c)
            .isEqualTo(
                "this one has the invisible character U+"
                    + String.format("%04X", c)
                    + " at character 2");
      } else {
        assertThat(problem).as("U+%04X", c).isNull();
      }
    }
    assertThat(refused).isGreaterThan(3_900); // mostly the unassigned ignorable block E0000-E0FFF
  }

  private static boolean within(int c, int[][] ranges) {
    for (int[] r : ranges) {
      if (c >= r[0] && c <= r[1]) {
        return true;
      }
    }
    return false;
  }

  @Test
  void aNameFromAVariableIsCheckedAsWritten() {
    ConfigProblem p =
        Yaml.problemWithEnv(Map.of("ROUTE", "pay\r\nments"), "routes: [{name: \"x${ROUTE}\"}]");
    assertThat(p.path()).isEqualTo("routes[0].name");
    assertThat(p.message())
        .startsWith("found \"xpay\\u000d\\u000aments\" (from ")
        .endsWith("; this one has the control character U+000D at character 5")
        .doesNotContain("\r")
        .doesNotContain("\n");
  }

  @Test
  void aBlankAtAnEndIsRefusedSpacesAndTabsAroundAreDroppedAsAroundEveryValue() throws Exception {
    // As every string value was read: ASCII blanks and controls around the text (a block
    // scalar's last line feed) are not part of it, as version 1 read a name.
    assertThat(Yaml.load("routes: [{name: \" Payments API \\t\"}]").routes().get(0).name())
        .isEqualTo("Payments API");
    assertThat(Yaml.load("routes:", "  - name: |", "      payments", "").routes().get(0).name())
        .isEqualTo("payments");
    String[][] cases = {
      {"\"\\u00a0pay\"", "starts with the blank U+00A0"},
      {"\"pay\\u3000\"", "ends with the blank U+3000"},
      {"\"\\ufeffpay\"", "has the invisible character U+FEFF at character 1"},
      {"\"pay\\u2009\"", "ends with the blank U+2009"},
    };
    for (String[] c : cases) {
      ConfigProblem p = Yaml.problem("routes: [{name: " + c[0] + "}]");
      assertThat(p.path()).as(c[0]).isEqualTo("routes[0].name");
      assertThat(p.message()).as(c[0]).endsWith("; this one " + c[1]);
    }
    // Inside, any blank is part of the name.
    assertThat(Yaml.load("routes: [{name: \"a\\u00a0b\\u3000c\"}]").routes().get(0).name())
        .isEqualTo("a\u00a0b\u3000c");
  }

  @Test
  void namesAreUniqueInAnyCaseAndDefaultStaysReserved() {
    ConfigProblem p =
        Yaml.problem(
            "routes:",
            "  - name: Payments API",
            "    match: {hosts: [a]}",
            "  - name: payments api",
            "    match: {hosts: [b]}");
    assertThat(p.path()).isEqualTo("routes[1].name");
    assertThat(p.message())
        .isEqualTo(
            "found the route name \"payments api\" a second time (first at routes[0], line 2);"
                + " route names are unique");
    assertThat(
            Yaml.problem(
                    "routes:",
                    "  - name: \"Caf\u00c9\"",
                    "    match: {hosts: [a]}",
                    "  - name: \"caf\u00e9\"",
                    "    match: {hosts: [b]}")
                .message())
        .startsWith("found the route name \"caf\u00e9\" a second time");
    assertThat(Yaml.problem("routes: [{name: ' DeFault '}]").message())
        .startsWith("found DeFault; allowed any other name");
  }
}
