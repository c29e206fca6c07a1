package dev.retryagent.config;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * {@code ${NAME}} unquoted inside a one-line or multi-line flow map or list ({@code { }}, {@code [
 * ]}), as the contract's own examples write sections: YAML ends a plain value at the {@code {} of
 * {@code ${}, so such a file was invalid YAML and the application ran without the agent. {@link
 * YamlComposer} quotes such values before reading, and every problem keeps its column in the file.
 */
class FlowReferencesTest {
  private static final Map<String, String> ENV =
      Map.of("MAX", "5", "HOST", "api.example.com", "ZERO", "0");

  @Test
  void aReferenceInAFlowMapLoads() throws ConfigException {
    AgentConfig c =
        Yaml.loadWithEnv(
            ENV, "defaults:", "  retry: { maxAttempts: ${MAX:-4}, deadline: ${D:-7s} }");
    assertThat(c.defaultPolicy().retry().maxAttempts()).isEqualTo(5);
    assertThat(c.defaultPolicy().retry().deadline()).isEqualTo(Duration.ofSeconds(7));
    AgentConfig nested =
        Yaml.loadWithEnv(ENV, "defaults: {retry: {maxAttempts: ${UNSET:-3},deadline: ${D:-1m}}}");
    assertThat(nested.defaultPolicy().retry().maxAttempts()).isEqualTo(3);
    assertThat(nested.defaultPolicy().retry().deadline()).isEqualTo(Duration.ofMinutes(1));
  }

  @Test
  void aReferenceInAFlowListLoadsAlsoInsideALargerValue() throws ConfigException {
    AgentConfig c =
        Yaml.loadWithEnv(
            ENV,
            "routes:",
            "  - name: payments",
            "    match: { hosts: [${HOST}:8443, \"x.example.com\", ${B:-b.example.com}],"
                + " paths: [${P:-/v1/a-b/**}] }",
            "    retry: { maxAttempts: ${MAX} }");
    Route r = c.routes().get(0);
    assertThat(r.hosts()).containsExactly("api.example.com:8443", "x.example.com", "b.example.com");
    assertThat(r.paths()).containsExactly("/v1/a-b/**");
    assertThat(r.policy().retry().maxAttempts()).isEqualTo(5);
  }

  @Test
  void aMultiLineFlowCollectionWithCommentsLoads() throws ConfigException {
    AgentConfig c =
        Yaml.loadWithEnv(
            ENV,
            "routes:",
            "  - name: a # ${NOT_A_REFERENCE} in a comment",
            "    match: {",
            "      hosts: [",
            "        ${HOST},   # the API ${X}",
            "        'x.${HOST}', \"${HOST}.x\"",
            "      ]",
            "    }",
            "    retry: { maxAttempts: ${MAX} }");
    assertThat(c.routes().get(0).hosts())
        .containsExactly("api.example.com", "x.api.example.com", "api.example.com.x");
  }

  @Test
  void theLiteralEscapeKeepsItsMeaning() throws ConfigException {
    AgentConfig c =
        Yaml.loadWithEnv(ENV, "routes:", "  - name: a", "    match: { paths: [/a$${X}/b] }");
    assertThat(c.routes().get(0).paths()).containsExactly("/a${X}/b");
  }

  @Test
  void blockContextAndQuotedReferencesAreReadAsWritten() {
    String[] texts = {
      "defaults:\n  retry:\n    deadline: ${X:-5s}\n    maxAttempts: '${M}'\n",
      "defaults: { retry: { deadline: '${X:-5s}', maxAttempts: \"${M}\" } }\n",
      "a: [b, c] # ${X}\nd: |\n  [${X}]\ne: text\n  [${X}]\nf:\n  - x ${X} [${Y}]\n",
      "a: \"multi\n  [${X}] line\"\nb: 'x\n  [${Y}]'\n",
    };
    for (String t : texts) {
      assertThat(YamlComposer.quoteFlowReferences(t)).as(t).isSameAs(t);
    }
  }

  @Test
  void quotesOnlyThePlainValuesInAFlow() {
    assertThat(YamlComposer.quoteFlowReferences("a: [${H}:8443, 'q', it's${X}]\n"))
        .isEqualTo("a: ['${H}:8443', 'q', 'it''s${X}']\n");
    assertThat(YamlComposer.quoteFlowReferences("a: {${K}: ${V:-x, y}, b: ${U} }\n"))
        .isEqualTo("a: {'${K}': '${V:-x, y}', b: '${U}' }\n");
    assertThat(YamlComposer.quoteFlowReferences("- [${A} # c ${B}\n  , ${C}]\n"))
        .isEqualTo("- ['${A}' # c ${B}\n  , '${C}']\n");
  }

  @Test
  void aFileWithoutReferencesIsReadAsTheSameText() {
    String text = "defaults: { retry: { maxAttempts: 3 } }\nroutes: [ { name: $x } ]\n";
    assertThat(YamlComposer.quoteFlowReferences(text)).isSameAs(text);
  }

  @Test
  void aProblemInsideOrAfterAQuotedValueKeepsItsColumn() {
    // Column 25 is the `$`: where the value starts in the file.
    ConfigProblem inside =
        Yaml.problemWithEnv(ENV, "defaults:", "  retry: { maxAttempts: ${ZERO:-1} }");
    assertThat(inside.line()).isEqualTo(2);
    assertThat(inside.column()).isEqualTo(25);
    assertThat(inside.message()).contains("allowed 1..10");

    List<ConfigProblem> after =
        Yaml.problems("defaults:", "  retry: { deadline: ${X:-5s}, maxAttempts: 'it''s', x: 0 }");
    assertThat(after).extracting(ConfigProblem::column).containsExactly(45, 54);
    List<ConfigProblem> all =
        Yaml.problems(
            "defaults:", "  retry: { deadline: ${X:-5s}, maxAttempts: 0, other: ${Y:-it's} }");
    assertThat(all).extracting(ConfigProblem::column).containsExactly(45, 48);
    // The same on the SnakeYAML path (an anchor is outside the subset reader's).
    List<ConfigProblem> snake =
        Yaml.problems(
            "defaults:",
            "  retry: &r { deadline: ${X:-5s}, maxAttempts: 0,",
            "    other: ${Y:-it's} }");
    assertThat(snake).extracting(ConfigProblem::line).containsExactly(2, 3);
    assertThat(snake).extracting(ConfigProblem::column).containsExactly(48, 5);
    // A YAML error after a quoted value, on its line.
    ConfigProblem yaml = Yaml.problem("defaults: { retry: { deadline: ${X:-5s} ] }");
    assertThat(yaml.message()).startsWith("invalid YAML");
    assertThat(yaml.column()).isEqualTo(41); // the ]
  }

  @Test
  void anUnterminatedReferenceIsNamed() {
    ConfigProblem p =
        Yaml.problem("defaults: { retry: {", "  deadline: ${X:-5s, maxAttempts: 2", "} }");
    assertThat(p.message()).contains("unterminated ${");
    assertThat(p.line()).isEqualTo(2);
    assertThat(p.column()).isEqualTo(13);
    // Up to the first } on its line, as the substitution reads it: here the map's own.
    assertThat(Yaml.problem("defaults: { retry: { deadline: ${X:-5s, maxAttempts: 2 } }").message())
        .startsWith("invalid YAML");
  }

  @Test
  void aFailingFileStillHasItsOwnStrictReadThroughAReference() {
    // The file fails after its agent section: its strict is read from the text as the composer
    // reads it, the reference in the flow map included (before, the probe stopped at its '{').
    assertThat(StrictProbe.read("agent: { strict: ${S:-true} }\nx: [\n", false, Map.of())).isTrue();
  }

  @Test
  void manyUnclosedReferencesOnOneLineAreReadInLinearWork() {
    // Each unclosed `${` once scanned to the line's end: quadratic, some 2.5e13 reads here, hours.
    // Linear, it is milliseconds. Called directly: this size is past what a file may hold.
    int n = 5_000_000;
    String text = "[" + "${".repeat(n);
    assertThat(YamlComposer.flowReferences(text)).containsExactly(1, 1 + 2 * n);
  }

  @Test
  void aLineOfManyQuotedItemsIsReadInLinearWork() {
    // After each quoted item the start of its line was searched back from it: quadratic, some
    // 8e12 reads for this line. Only the quoted item itself is searched now.
    int n = 2_000_000;
    String text = "a: ${X}\nb: [" + "'a',".repeat(n) + "${Y}]\n";
    int at = text.indexOf("${Y}");
    assertThat(YamlComposer.flowReferences(text)).containsExactly(at, at + 4);
  }

  @Test
  void aTagOrAnchorBeforeABlockScalarLeavesItsTextAlone() {
    // The `|` is the line's first node: its text's indentation is set by a line before, so the
    // pre-pass cannot tell where it ends; it once quoted `[${X}]`, the block scalar's own text.
    String[] texts = {
      "x:\n  !!str |\n  [${X}]\n", "x:\n  &a |\n  [${X}]\n", "x:\n  &a !!str >\n  [${X}]\n",
    };
    for (String t : texts) {
      assertThat(YamlComposer.quoteFlowReferences(t)).as(t).isSameAs(t);
    }
  }

  @Test
  void aKeysValueOnTheNextLineEndsBeforeTheNextKey() {
    // `payments` is the value of `name`, at column 2: `description` is its sibling, not the
    // value's continuation, and the block scalar's text `[${X}]` is text.
    String t = "- name:\n    payments\n  description: |\n    a # b\n    [${X}]\n";
    assertThat(YamlComposer.quoteFlowReferences(t)).isSameAs(t);
    String entry = "-\n  payments\n- description: |\n    a # b\n    [${X}]\n";
    assertThat(YamlComposer.quoteFlowReferences(entry)).isSameAs(entry);
  }

  @Test
  void aNestedReferenceInAFlowStillGetsTheQuotingHint() {
    String t = "defaults: { retry: { deadline: ${A:-${B}} } }\n";
    assertThat(YamlComposer.quoteFlowReferences(t)).isSameAs(t);
    assertThat(Yaml.problem("defaults: { retry: { deadline: ${A:-${B}}, maxAttempts: ${M} } }"))
        .satisfies(p -> assertThat(p.message()).contains("must be quoted"))
        .satisfies(p -> assertThat(p.column()).isEqualTo(33)); // its {, as before
  }

  @Test
  void insertedQuotesDoNotCountAgainstTheSizeLimit() throws ConfigException {
    // A file of exactly the limit, read by SnakeYAML (an anchor), whose reference is quoted.
    String first = "defaults: &d { retry: { deadline: ${X:-5s} } }";
    String pad = "#" + "x".repeat(YamlComposer.MAX_CHARS - first.length() - 3);
    assertThat(Yaml.lines(pad, first)).hasSize(YamlComposer.MAX_CHARS);
    AgentConfig c = Yaml.loadWithEnv(ENV, pad, first);
    assertThat(c.defaultPolicy().retry().deadline()).isEqualTo(Duration.ofSeconds(5));
    String strict = "agent: { strict: ${S:-true} }";
    String text =
        Yaml.lines("#" + "x".repeat(YamlComposer.MAX_CHARS - strict.length() - 3), strict);
    assertThat(text).hasSize(YamlComposer.MAX_CHARS);
    assertThat(StrictProbe.read(text, false, Map.of())).isTrue();
  }
}
