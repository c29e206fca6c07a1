package dev.retryagent.config;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;

/**
 * Whatever text it is given, the loader returns a configuration or throws a ConfigException whose
 * every problem is located; nothing else escapes (no NPE, no ClassCastException, no SnakeYAML
 * exception), and it stays fast.
 */
class ConfigLoaderProperties {
  private static final String REFERENCE = ConfigFiles.read(ConfigFiles.REFERENCE);
  private static final String[] REFERENCE_LINES = REFERENCE.split("\n", -1);

  /** A generous bound against hangs, not a benchmark: typical inputs take a few milliseconds. */
  private static final long MAX_NANOS = 5_000_000_000L;

  @Property(tries = 500)
  void arbitraryTextLoadsOrFailsWithLocatedProblems(@ForAll("yamlish") String text) {
    checkOutcome(text);
  }

  @Property(tries = 200)
  void arbitraryUnicodeLoadsOrFailsWithLocatedProblems(@ForAll String text) {
    checkOutcome(text);
  }

  @Property(tries = 500)
  void mutationsOfTheReferenceLoadOrFailWithLocatedProblems(
      @ForAll("referenceMutations") String text) {
    checkOutcome(text);
  }

  @Property(tries = 300)
  void mutationsOfTheExampleRoutesLoadOrFailWithLocatedProblems(
      @ForAll("routeMutations") String text) {
    checkOutcome(text);
  }

  private static void checkOutcome(String text) {
    long start = System.nanoTime();
    try {
      AgentConfig config = ConfigLoader.parse(text, "fuzz.yml", Map.of("HOST", "a.example"));
      assertThat(config).isNotNull();
      assertThat(config.defaultPolicy()).isNotNull();
    } catch (ConfigException e) {
      assertThat(e.problems()).isNotEmpty();
      for (ConfigProblem p : e.problems()) {
        assertThat(p.line() >= 1 || !p.path().isEmpty()).as("located: %s", p).isTrue();
        assertThat(p.message()).isNotBlank();
        assertThat(p.source()).isEqualTo("fuzz.yml");
      }
      assertThat(e.getMessage()).isNotBlank();
    }
    assertThat(System.nanoTime() - start).isLessThan(MAX_NANOS);
  }

  @Provide
  Arbitrary<String> yamlish() {
    Arbitrary<String> tokens =
        Arbitraries.of(
            "retry",
            "defaults",
            "routes",
            "agent",
            "match",
            "hosts",
            "name",
            "maxAttempts",
            "backoff",
            "window",
            "size",
            "type",
            "time",
            "count",
            "statuses",
            "deadline",
            ":",
            ": ",
            "- ",
            "\n",
            "\n  ",
            "\n    ",
            "  ",
            "{",
            "}",
            "[",
            "]",
            ",",
            "&a ",
            "*a",
            "!!str ",
            "!x ",
            "<<: ",
            "? ",
            "|",
            ">",
            "#",
            "'",
            "\"",
            "${HOST}",
            "${NOPE}",
            "${X:-1}",
            "---",
            "...",
            "~",
            "null",
            "none",
            "5xx",
            "10s",
            "50%",
            "64KiB",
            "0",
            "-1",
            "3",
            "1e9",
            "\t",
            "\\",
            "%",
            "@",
            "`",
            "\u0000",
            "\uFEFF",
            "é",
            "\u2028");
    return tokens.list().ofMaxSize(80).map(l -> String.join("", l));
  }

  @Provide
  Arbitrary<String> referenceMutations() {
    return mutationsOf(REFERENCE_LINES);
  }

  @Provide
  Arbitrary<String> routeMutations() {
    String routes =
        Yaml.lines(
            "defaults: {retry: {maxAttempts: 4, backoff: {max: 2s}}}",
            "routes:",
            "  - name: payments",
            "    match:",
            "      hosts: ['api.pay.example.com', '*.pay.internal:8443', '[::1]:8080']",
            "      methods: [POST]",
            "      paths: ['/v1/charges/**']",
            "    retry: {maxAttempts: 5, unsafeMethods: if-idempotency-key, deadline: 10s}",
            "    circuitBreaker: {window: {type: time, size: 30s}, minimumCalls: 5}",
            "  - name: auth",
            "    match: {hosts: ['${HOST}']}",
            "    retry: {enabled: false}");
    return mutationsOf(routes.split("\n", -1));
  }

  private static Arbitrary<String> mutationsOf(String[] lines) {
    Arbitrary<Mutation> one =
        Combinators.combine(
                Arbitraries.integers().between(0, 6),
                Arbitraries.integers().between(0, lines.length - 1),
                Arbitraries.integers().between(0, lines.length - 1),
                Arbitraries.integers().between(0, 200),
                Arbitraries.chars()
                    .with(
                        ' ', ':', '-', '[', ']', '{', '}', '#', '\'', '"', '&', '*', '!', '%', '0',
                        '9', 'x', '\t', '\n'))
            .as(Mutation::new);
    return one.list()
        .ofMinSize(1)
        .ofMaxSize(6)
        .map(
            mutations -> {
              List<String> out = new ArrayList<>(Arrays.asList(lines));
              for (Mutation m : mutations) {
                m.apply(out);
              }
              return String.join("\n", out);
            });
  }

  /** One edit of a file's lines: delete, duplicate, swap, change a character, indent, dedent. */
  private static final class Mutation {
    final int kind;
    final int a;
    final int b;
    final int column;
    final char c;

    Mutation(int kind, int a, int b, int column, char c) {
      this.kind = kind;
      this.a = a;
      this.b = b;
      this.column = column;
      this.c = c;
    }

    void apply(List<String> lines) {
      if (lines.isEmpty()) {
        return;
      }
      int i = a % lines.size();
      int j = b % lines.size();
      String line = lines.get(i);
      switch (kind) {
        case 0:
          lines.remove(i);
          break;
        case 1:
          lines.add(j, line);
          break;
        case 2:
          lines.set(i, lines.get(j));
          lines.set(j, line);
          break;
        case 3:
          if (!line.isEmpty()) {
            int at = column % line.length();
            lines.set(i, line.substring(0, at) + c + line.substring(at + 1));
          }
          break;
        case 4:
          lines.set(i, "  " + line);
          break;
        case 5:
          lines.set(i, line.startsWith("  ") ? line.substring(2) : line);
          break;
        default:
          int at = line.isEmpty() ? 0 : column % line.length();
          lines.set(i, line.substring(0, at) + c + line.substring(at));
      }
    }

    @Override
    public String toString() {
      return "mutation " + kind + " at " + a + "/" + b + " col " + column + " '" + c + "'";
    }
  }
}
