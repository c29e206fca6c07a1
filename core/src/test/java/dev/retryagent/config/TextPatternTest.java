package dev.retryagent.config;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retryagent.config.ConfigSchema.Leaf;
import dev.retryagent.config.ValueType.StringType;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Random;
import java.util.Set;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * {@link TextPattern} answers exactly as {@link Pattern} for every string key of the schema and for
 * chosen forms, on random strings over each regex's own characters and around its length bounds;
 * and the route name, the key nearly every file sets, is matched without {@code java.util.regex}.
 */
class TextPatternTest {
  private static final String[] FORMS = {
    "[a-z]",
    "[a-z]+",
    "[a-z]*[0-9]?",
    "[^a]{2,3}",
    "[-a]{1,2}[.]",
    "[a-c][b-d]{0,2}[c-e]",
    "[\\[\\]]{1,2}",
    "[\\x41-\\x43]{2}",
    "a[b]",
    "[a]|[b]",
    "([a])",
    "[a-z&&[b]]",
    "[a]{2,}",
    "[a]+?",
    "[\\w]",
    "[a^&]{1,3}",
    "[^^]",
    "[a&&b]",
  };

  static Set<String> schemaRegexes() {
    Set<String> out = new LinkedHashSet<>();
    for (ConfigSchema.Section section :
        new ConfigSchema.Section[] {ConfigSchema.ROOT, ConfigSchema.DEFAULTS, ConfigSchema.ROUTE}) {
      for (Leaf leaf : section.leaves().values()) {
        if (leaf.type instanceof StringType) {
          out.add(((StringType) leaf.type).regex);
        }
      }
    }
    return out;
  }

  @Test
  void agreesWithPatternOnEveryStringKeyAndChosenForms() {
    Set<String> regexes = schemaRegexes();
    assertThat(regexes).as("the schema's string keys").hasSizeGreaterThanOrEqualTo(5);
    regexes.addAll(List.of(FORMS));
    Random random = new Random(3);
    for (String regex : regexes) {
      Pattern pattern = Pattern.compile(regex);
      TextPattern ours = TextPattern.compile(regex);
      StringBuilder chars = new StringBuilder("aZ09._-:$\u00e9\u0000 /[]");
      for (char c : regex.toCharArray()) {
        chars.append(c);
      }
      List<String> inputs = new ArrayList<>();
      for (int length : new int[] {0, 1, 2, 3, 63, 64, 65, 99, 100, 101, 253, 254, 4096, 4097}) {
        inputs.add("a".repeat(length));
        inputs.add("a" + "1".repeat(Math.max(0, length - 1)));
      }
      for (int n = 0; n < 20_000; n++) {
        StringBuilder s = new StringBuilder();
        for (int length = random.nextInt(12); length > 0; length--) {
          s.append(chars.charAt(random.nextInt(chars.length())));
        }
        inputs.add(s.toString());
      }
      for (String s : inputs) {
        assertThat(ours.matches(s))
            .as("%s on [%s]", regex, s)
            .isEqualTo(pattern.matcher(s).matches());
      }
    }
  }

  @Test
  void aHeaderNameIsMatchedWithoutRegularExpressions() {
    assertThat(TextPattern.parse(((StringType) ValueType.HEADER_NAME).regex)).isNotNull();
    assertThat(TextPattern.parse("[a]|[b]")).isNull();
  }

  /**
   * The route name, the key nearly every file sets, is checked by {@link RouteKeys#nameProblem} (no
   * regular expression in premain), exactly as the schema's regular expression says, on random
   * strings of controls, blanks, surrogate pairs and plain characters, around its length bound.
   */
  @Test
  void aRouteNameIsCheckedWithoutRegularExpressionsAsTheSchemaSays() {
    ValueType type = ConfigSchema.ROUTE.leaves().get("name").type;
    assertThat(type).isSameAs(RouteKeys.ROUTE_NAME);
    Pattern pattern = Pattern.compile(((StringType) type).regex);
    String[] pieces = {
      "a",
      "Z",
      "0",
      ".",
      "-",
      "_",
      ":",
      "/",
      " ",
      "\t",
      "\n",
      "\u0000",
      "\u001f",
      "\u007f",
      "\u0080",
      "\u0085",
      "\u009f",
      "\u00a0",
      "\u00a1",
      "\u00e9",
      "\u1680",
      "\u2000",
      "\u200a",
      "\u200b",
      "\u034f",
      "\u0600",
      "\u2065",
      "\uffa0",
      "\ufff0",
      "\u2028",
      "\u2029",
      "\u202f",
      "\u205f",
      "\u3000",
      "\ufeff",
      "\ud83d\ude80",
      "\"",
      "\\",
      "%",
      "*"
    };
    List<String> inputs = new ArrayList<>();
    for (int length : new int[] {1, 2, 62, 63, 64, 65, 66}) {
      inputs.add("a".repeat(length));
      inputs.add("\ud83d\ude80".repeat(length));
      inputs.add("a" + " ".repeat(Math.max(0, length - 2)) + "a");
    }
    Random random = new Random(7);
    for (int n = 0; n < 50_000; n++) {
      StringBuilder s = new StringBuilder();
      int length = n % 10 == 0 ? 60 + random.nextInt(8) : 1 + random.nextInt(6);
      for (int i = 0; i < length; i++) {
        s.append(pieces[random.nextInt(pieces.length)]);
      }
      inputs.add(s.toString());
    }
    for (String s : inputs) {
      assertThat(RouteKeys.nameProblem(s) == null)
          .as("[%s]", s)
          .isEqualTo(pattern.matcher(s).matches());
    }
  }
}
