package dev.retryagent.config;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** {@code agent.redact.pathSegments}: read from the file, and what it masks. */
class PathMaskTest {
  private static final PathMask TOKENS =
      PathMask.of(List.of("[0-9a-f]{32}", "tok_[A-Za-z0-9]+", "[0-9]+"));

  @Test
  void aSegmentOneExpressionMatchesWholeIsMaskedAndNothingElse() {
    assertThat(TOKENS.apply("/v1/users/0123456789abcdef0123456789abcdef/orders/42"))
        .isEqualTo("/v1/users/<redacted>/orders/<redacted>");
    assertThat(TOKENS.apply("/reset/tok_AbC9/confirm/")).isEqualTo("/reset/<redacted>/confirm/");
    // Matched whole, not found inside: "v1" holds a digit, "x42" a number.
    assertThat(TOKENS.apply("/v1/x42/tok_/0123456789abcdef"))
        .isEqualTo("/v1/x42/tok_/0123456789abcdef");
    assertThat(TOKENS.apply("42")).isEqualTo("<redacted>");
    assertThat(TOKENS.apply("/")).isEqualTo("/");
    assertThat(TOKENS.apply("")).isEqualTo("");
    assertThat(TOKENS.apply("//42//")).isEqualTo("//<redacted>//");
  }

  @Test
  void aSegmentTooLongToMatchCheaplyIsMaskedWithoutMatching() {
    String pathological = "a".repeat(PathMask.LONGEST_MATCHED + 1);
    PathMask catastrophic = PathMask.of(List.of("(a+)+b"));
    assertThat(catastrophic.apply("/x/" + pathological + "/y")).isEqualTo("/x/<redacted>/y");
    assertThat(PathMask.NONE.apply("/x/" + pathological)).isEqualTo("/x/" + pathological);
  }

  @Test
  void noExpressionsMasksNothing() {
    assertThat(PathMask.of(List.of())).isSameAs(PathMask.NONE);
    assertThat(PathMask.NONE.apply("/v1/0123456789abcdef0123456789abcdef"))
        .isEqualTo("/v1/0123456789abcdef0123456789abcdef");
    assertThat(PathMask.NONE.apply(null)).isNull();
  }

  @Test
  void theKeyIsReadFromTheFileAndIsOffByDefault() throws Exception {
    assertThat(AgentConfig.defaults().pathMask()).isSameAs(PathMask.NONE);
    assertThat(ConfigLoader.parse("version: 1", "t.yml", Map.of()).pathMask())
        .isSameAs(PathMask.NONE);

    AgentConfig c =
        ConfigLoader.parse(
            Yaml.lines("agent:", "  redact:", "    pathSegments: ['[0-9a-f]{32}', 'tok_.*']"),
            "t.yml",
            Map.of());
    assertThat(c.pathMask().expressions()).containsExactly("[0-9a-f]{32}", "tok_.*");
    assertThat(c.pathMask().apply("/a/tok_1")).isEqualTo("/a/<redacted>");
    // Routes still match the real path.
    AgentConfig routed =
        ConfigLoader.parse(
            Yaml.lines(
                "agent: {redact: {pathSegments: ['tok_.*']}}",
                "routes: [{name: r, match: {paths: ['/a/tok_1']}}]"),
            "t.yml",
            Map.of());
    assertThat(routed.resolve("GET", "h", 80, "/a/tok_1").routeName()).isEqualTo("r");
  }

  @Test
  void anExpressionThatDoesNotCompileIsALocatedProblem() {
    List<ConfigProblem> problems =
        Yaml.problemsWithEnv(Map.of(), "agent:\n  redact:\n    pathSegments: ['ok', '[0-9']\n");
    assertThat(problems)
        .singleElement()
        .satisfies(
            p -> {
              assertThat(p.line()).isEqualTo(3);
              assertThat(p.column()).isEqualTo(26);
              assertThat(p.path()).isEqualTo("agent.redact.pathSegments[1]");
              assertThat(p.message())
                  .startsWith("found [0-9; not a regular expression (Unclosed character class)");
            });
  }

  @Test
  void aControlCharacterOrAnEmptyExpressionIsRefused() {
    assertThat(Yaml.problemsWithEnv(Map.of(), "agent: {redact: {pathSegments: [\"a\\x1b[31m\"]}}"))
        .singleElement()
        .satisfies(p -> assertThat(p.path()).isEqualTo("agent.redact.pathSegments[0]"));
    assertThat(Yaml.problemsWithEnv(Map.of(), "agent: {redact: {pathSegments: ['']}}"))
        .singleElement()
        .satisfies(p -> assertThat(p.path()).isEqualTo("agent.redact.pathSegments[0]"));
  }
}
