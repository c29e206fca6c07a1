package dev.retryagent.config;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * {@link YamlSubsetReader} either builds exactly SnakeYAML's tree (what {@link
 * SnakeYamlReader#compose} builds: structure, scalar values, tags, the line and column of every
 * node) or declines (null); and it declines every text SnakeYAML finds a problem in, so that every
 * problem is still found and worded by SnakeYAML. Checked on every YAML file of the repository, on
 * tens of thousands of mutations of the configuration files, and on hand-picked corners; and the
 * files in {@code config/} must be read by it (otherwise it saves nothing).
 */
class YamlSubsetReaderTest {
  /** Characters that change YAML's meaning, and some that do not. */
  private static final String MUTATIONS = " :-#'\"[]{},\n~&*!|>?%@`\\xq0\t.<";

  /** The tree SnakeYAML composes, or null with the reason when it reports a problem. */
  private static YamlNode snake(String text, List<String> problems) {
    FileProblems found = new FileProblems("test");
    YamlNode root = SnakeYamlReader.compose(text, found);
    found.sorted().forEach(p -> problems.add(p.toString()));
    return root;
  }

  /** The reader agrees with SnakeYAML on {@code text}; returns whether it read it. */
  private static boolean agrees(String text) {
    List<String> problems = new ArrayList<>();
    YamlNode expected = snake(text, problems);
    YamlNode actual = YamlSubsetReader.read(text);
    if (actual == null) {
      return false;
    }
    assertThat(problems).as("read a text SnakeYAML refuses:%n%s", text).isEmpty();
    assertThat(expected).as("read a text SnakeYAML finds empty:%n%s", text).isNotNull();
    assertThat(describe(actual)).as("the tree of:%n%s", text).isEqualTo(describe(expected));
    return true;
  }

  /** Everything of a tree the walker reads, one node per line. */
  private static String describe(YamlNode root) {
    StringBuilder out = new StringBuilder();
    describe(root, "", out);
    return out.toString();
  }

  private static void describe(YamlNode node, String indent, StringBuilder out) {
    out.append(indent)
        .append(node.getClass().getSimpleName())
        .append(' ')
        .append(node.tag())
        .append(" at ")
        .append(node.line())
        .append(':')
        .append(node.column());
    if (node instanceof YamlNode.Scalar) {
      out.append(" [").append(((YamlNode.Scalar) node).getValue()).append("]\n");
    } else if (node instanceof YamlNode.Sequence) {
      out.append('\n');
      for (YamlNode item : ((YamlNode.Sequence) node).getValue()) {
        describe(item, indent + "  ", out);
      }
    } else {
      out.append('\n');
      for (YamlNode.Entry t : ((YamlNode.Mapping) node).getValue()) {
        describe(t.getKeyNode(), indent + "  ? ", out);
        describe(t.getValueNode(), indent + "  : ", out);
      }
    }
  }

  static List<Path> repositoryYamlFiles() throws IOException {
    try (Stream<Path> files = Files.walk(Path.of(".."))) {
      return files
          .filter(p -> p.getFileName().toString().matches(".*\\.ya?ml"))
          .filter(p -> !p.toString().contains("/target/") && !p.toString().contains("/.git/"))
          .sorted()
          .collect(Collectors.toList());
    }
  }

  @ParameterizedTest
  @MethodSource("repositoryYamlFiles")
  void agreesWithSnakeYamlOnEveryFileOfTheRepository(Path file) throws IOException {
    agrees(Files.readString(file));
  }

  /** The YAML blocks of README.md and docs/*.md: what users copy into their files. */
  static List<String> documentedYaml() throws IOException {
    List<Path> pages = new ArrayList<>();
    pages.add(Path.of("..", "README.md"));
    try (Stream<Path> docs = Files.list(Path.of("..", "docs"))) {
      docs.filter(p -> p.toString().endsWith(".md")).sorted().forEach(pages::add);
    }
    List<String> blocks = new ArrayList<>();
    for (Path page : pages) {
      String[] lines = Files.readString(page).split("\n", -1);
      StringBuilder block = null;
      for (String line : lines) {
        if (block == null && line.trim().equals("```yaml")) {
          block = new StringBuilder();
        } else if (block != null && line.trim().equals("```")) {
          blocks.add(block.toString());
          block = null;
        } else if (block != null) {
          block.append(line).append('\n');
        }
      }
    }
    return blocks;
  }

  @ParameterizedTest
  @MethodSource("documentedYaml")
  void agreesWithSnakeYamlOnTheDocumentedExamples(String block) {
    agrees(block);
  }

  @Test
  void readsTheConfigurationFilesWeShipItselfWithoutSnakeYamlsParser() {
    assertThat(ConfigFiles.yamlFiles()).hasSizeGreaterThanOrEqualTo(4);
    for (Path file : ConfigFiles.yamlFiles()) {
      assertThat(agrees(ConfigFiles.read(file))).as(file.toString()).isTrue();
    }
  }

  @Test
  void agreesWithSnakeYamlOnMutationsOfTheConfigurationFiles() {
    // -Dyaml.mutants=N -Dyaml.seed=S explore further than CI does
    Random random = new Random(Long.getLong("yaml.seed", 20261202L));
    int perFile = Integer.getInteger("yaml.mutants", 4000);
    int read = 0;
    int mutants = 0;
    for (Path file : ConfigFiles.yamlFiles()) {
      String text = ConfigFiles.read(file);
      String[] lines = text.split("\n", -1);
      for (int i = 0; i < lines.length; i++) {
        for (String changed : lineMutations(lines[i])) {
          String[] copy = lines.clone();
          copy[i] = changed;
          mutants++;
          read += agrees(String.join("\n", copy)) ? 1 : 0;
        }
      }
      for (int n = 0; n < perFile; n++) {
        StringBuilder mutant = new StringBuilder(text);
        for (int edits = 1 + random.nextInt(3); edits > 0; edits--) {
          int at = random.nextInt(mutant.length());
          switch (random.nextInt(3)) {
            case 0:
              mutant.insert(at, MUTATIONS.charAt(random.nextInt(MUTATIONS.length())));
              break;
            case 1:
              mutant.deleteCharAt(at);
              break;
            default:
              mutant.setCharAt(at, MUTATIONS.charAt(random.nextInt(MUTATIONS.length())));
          }
        }
        mutants++;
        read += agrees(mutant.toString()) ? 1 : 0;
      }
    }
    assertThat(mutants).isGreaterThan(16_000);
    assertThat(read)
        .as("most mutants are still in the subset, and agree")
        .isGreaterThan(mutants / 4);
  }

  private static final String[] INDENTS = {"", "", "", " ", "  ", "  ", "    ", "\t"};
  private static final String[] ENTRIES = {"", "", "", "- ", "-", "- - ", "? "};
  private static final String[] KEYS = {
    "a", "b", "key", "'q'", "\"d\"", "<<", "null", "~", "--- a", "...", "-k", "a b", "a#b", "%x",
    "k'", "[a]", "{k}", "&x a", "*x", "!t a", "@a", "`a", ".a", "a?", "?a", ":a", "a:b", "1"
  };
  private static final String[] COLONS = {": ", ": ", ":", " : ", ":  ", ""};
  private static final String[] VALUES = {
    "",
    "1",
    "x y",
    "'s'",
    "'it''s'",
    "\"d\"",
    "\"e\\n\"",
    "~",
    "null",
    "NULL",
    "nULL",
    "a # c",
    "a#c",
    "-1",
    "- x",
    "a: b",
    "a:b",
    "x ? y",
    "[a, b]",
    "[a,b]",
    "[]",
    "{}",
    "{k: v}",
    "{k:v}",
    "[a, [b, {c: d}]]",
    "[a,]",
    "[a b]",
    "{a}",
    "[a: b]",
    "&x 1",
    "*x",
    "!t v",
    "|",
    ">",
    "'open",
    "\"open",
    "[open",
    "%",
    "@",
    "`",
    "...",
    "---",
    "http://h:1/p?q#f",
    "${A:-b}",
    "<<",
    "'a' b",
    "# only",
    "a\tb"
  };

  @Test
  void agreesWithSnakeYamlOnGeneratedDocuments() {
    Random random = new Random(Long.getLong("yaml.seed", 7L));
    int documents = Integer.getInteger("yaml.documents", 40_000);
    int read = 0;
    for (int d = 0; d < documents; d++) {
      StringBuilder text = new StringBuilder();
      for (int lines = 1 + random.nextInt(6); lines > 0; lines--) {
        switch (random.nextInt(12)) {
          case 0:
            text.append("# comment");
            break;
          case 1:
            text.append(pick(random, new String[] {"", "---", "...", "--- ", " "}));
            break;
          default:
            text.append(pick(random, INDENTS))
                .append(pick(random, ENTRIES))
                .append(random.nextInt(5) == 0 ? "" : pick(random, KEYS) + pick(random, COLONS))
                .append(pick(random, VALUES));
        }
        text.append(random.nextInt(8) == 0 ? " # c\n" : "\n");
      }
      read += agrees(text.toString()) ? 1 : 0;
    }
    assertThat(read).as("some are in the subset").isGreaterThan(documents / 100);
  }

  private static String pick(Random random, String[] from) {
    return from[random.nextInt(from.length)];
  }

  /** A line deleted, doubled, indented or outdented, its comment removed, a value emptied. */
  private static List<String> lineMutations(String line) {
    List<String> out = new ArrayList<>();
    out.add("");
    out.add(line + "\n" + line);
    out.add(" " + line);
    out.add("  " + line);
    if (line.startsWith(" ")) {
      out.add(line.substring(1));
    }
    int colon = line.indexOf(": ");
    if (colon > 0) {
      out.add(line.substring(0, colon + 1));
      out.add(line.substring(0, colon + 1) + " ~");
      out.add(line.substring(0, colon + 2) + "'" + line.substring(colon + 2).trim() + "'");
    }
    int hash = line.indexOf(" #");
    if (hash > 0) {
      out.add(line.substring(0, hash));
    }
    return out;
  }

  @ParameterizedTest
  @ValueSource(
      strings = {
        "a: 1",
        "a: 1\nb:\n  c: x y z # note\n  d: 'it''s'\n",
        "a:\n- 1\n- 2\nb: 3",
        "a:\n  - name: x\n    k: v\n  - name: y\n",
        "- a\n- b: 1\n  c: 2\n",
        "a: [1, 'two', \"three\", [4, 5], {k: v}]\nb: {}\nc: []",
        "a: { x: 1, y: [429, 503] }",
        "a:\nb: ~\nc: null\nd: Null\ne: NULL\nf: ''\ng: \"\"\n",
        "<<: 1\n'<<': 2",
        "url: http://h:80/p?q=1#frag\nh: ${X:-api.example.com}\n",
        "a: b #c\nd: e#f\n",
        "# only a comment\na: 1\n\n\n# trailing\n",
        "a: 1\n  # indented comment\nb: 2",
        "key with spaces: v\n",
        "a:   \n  b: 1",
      })
  void readsTheUsualShapes(String text) {
    assertThat(agrees(text)).as("read:%n%s", text).isTrue();
  }

  @ParameterizedTest
  @ValueSource(
      strings = {
        "",
        "# nothing\n",
        "scalar",
        "---\na: 1",
        "--- a: 1",
        "--- !!map\na: 1",
        "--- # c\na: 1",
        "... \na: 1",
        "a: 1\n---\nb: 2",
        "a: 1\n...\n",
        "%YAML 1.1\n---\na: 1",
        "a: &x 1\nb: *x",
        "a: !!str 1",
        "a: |\n  text\n",
        "a: >\n  text\n",
        "a: multi\n  line",
        "a: [1,\n 2]",
        "a: \"esc\\n\"",
        "a:\tb",
        "a: caf\u00e9",
        "a: 1\r\nb: 2",
        "? a\n: 1",
        "- - a",
        "-\n  a: 1",
        "a: b: c",
        "a: 'x' y",
        "a: 1\n b: 2",
        "a:\n  b: 1\n c: 2",
        "a: [1, 2,]",
        "a: {x}",
        "a: *.example.com",
      })
  void leavesTheRestToSnakeYaml(String text) {
    assertThat(YamlSubsetReader.read(text)).as("declined:%n%s", text).isNull();
    agrees(text); // and it would be the same anyway when SnakeYAML reads it
  }
}
