package dev.retryagent.config;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.yaml.snakeyaml.LoaderOptions;
import org.yaml.snakeyaml.composer.Composer;
import org.yaml.snakeyaml.nodes.MappingNode;
import org.yaml.snakeyaml.nodes.Node;
import org.yaml.snakeyaml.nodes.NodeId;
import org.yaml.snakeyaml.nodes.NodeTuple;
import org.yaml.snakeyaml.nodes.SequenceNode;
import org.yaml.snakeyaml.nodes.Tag;
import org.yaml.snakeyaml.parser.ParserImpl;
import org.yaml.snakeyaml.reader.StreamReader;
import org.yaml.snakeyaml.resolver.Resolver;

/**
 * The composer's resolver decides only null and merge, without regular expressions: for every
 * scalar it must say "null" and "merge" exactly when SnakeYAML's own resolver does, and every tag
 * it gives must pass the walker's tag check as SnakeYAML's does (the walker reads nothing else of a
 * tag).
 */
class NullAndMergeResolverTest {
  private static final String[] SCALARS = {
    "",
    "~",
    "null",
    "Null",
    "NULL",
    "nULL",
    "nul",
    "nulls",
    " ",
    "none",
    "None",
    "no",
    "n",
    "N",
    "<<",
    "<",
    "<<<",
    "=",
    "true",
    "false",
    "yes",
    "off",
    "0",
    "1",
    "-1",
    "0x1f",
    "0o7",
    "1.5",
    ".5",
    ".inf",
    ".nan",
    "1e3",
    "2026-12-01",
    "2026-12-01T10:00:00Z",
    "30s",
    "5xx",
    "!",
    "&",
    "*",
    "*.example.com",
    "api.example.com:443",
    "/v1/**",
    "${RETRY_MODE}",
    "\u0000",
    "~x",
    "null "
  };

  private final Resolver snake = new Resolver();
  private final Resolver ours = new SnakeYamlReader.NullAndMergeResolver();

  @Test
  void nullAndMergeAsSnakeYamlForPlainScalars() {
    for (String s : SCALARS) {
      Tag expected = snake.resolve(NodeId.scalar, s, true);
      Tag actual = ours.resolve(NodeId.scalar, s, true);
      assertThat(actual.equals(Tag.NULL)).as("null: %s", s).isEqualTo(expected.equals(Tag.NULL));
      assertThat(actual.equals(Tag.MERGE)).as("merge: %s", s).isEqualTo(expected.equals(Tag.MERGE));
      assertThat(actual.getValue()).as("tag of %s", s).startsWith(Tag.PREFIX);
    }
  }

  @Test
  void quotedScalarsAndCollectionsAsSnakeYaml() {
    for (String s : SCALARS) {
      assertThat(ours.resolve(NodeId.scalar, s, false))
          .as("quoted %s", s)
          .isEqualTo(snake.resolve(NodeId.scalar, s, false));
    }
    for (NodeId kind : new NodeId[] {NodeId.sequence, NodeId.mapping, NodeId.anchor}) {
      assertThat(ours.resolve(kind, null, true)).isEqualTo(snake.resolve(kind, null, true));
      assertThat(ours.resolve(kind, null, false)).isEqualTo(snake.resolve(kind, null, false));
    }
  }

  /** Every configuration in the repository composes to the same null and merge nodes. */
  @Test
  void repositoryConfigurationsComposeAlike() throws Exception {
    List<Path> files = new ArrayList<>();
    for (Path dir : new Path[] {Paths.get("../config")}) {
      try (Stream<Path> s = Files.walk(dir)) {
        s.filter(p -> p.toString().endsWith(".yml") || p.toString().endsWith(".yaml"))
            .forEach(files::add);
      }
    }
    assertThat(files).isNotEmpty();
    for (Path f : files) {
      String text = Files.readString(f);
      List<String> a = new ArrayList<>();
      List<String> b = new ArrayList<>();
      flatten(compose(text, snake), "", a);
      flatten(compose(text, ours), "", b);
      assertThat(b).as(f.toString()).isEqualTo(a);
    }
  }

  private static Node compose(String text, Resolver resolver) {
    LoaderOptions options = SnakeYamlReader.options();
    return new Composer(new ParserImpl(new StreamReader(text), options), resolver, options)
        .getSingleNode();
  }

  /** Each node's path, kind and whether it is null or merge. */
  private static void flatten(Node node, String path, List<String> out) {
    if (node == null) {
      return;
    }
    boolean isNull = node.getTag().equals(Tag.NULL);
    boolean merge = node.getTag().equals(Tag.MERGE);
    out.add(path + " " + node.getNodeId() + (isNull ? " null" : "") + (merge ? " merge" : ""));
    if (node instanceof MappingNode) {
      for (NodeTuple t : ((MappingNode) node).getValue()) {
        flatten(t.getKeyNode(), path + "/k", out);
        flatten(t.getValueNode(), path + "/v", out);
      }
    } else if (node instanceof SequenceNode) {
      int i = 0;
      for (Node child : ((SequenceNode) node).getValue()) {
        flatten(child, path + "/" + i++, out);
      }
    }
  }
}
