package dev.retryagent.config;

import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.yaml.snakeyaml.LoaderOptions;
import org.yaml.snakeyaml.composer.Composer;
import org.yaml.snakeyaml.error.Mark;
import org.yaml.snakeyaml.error.MarkedYAMLException;
import org.yaml.snakeyaml.error.YAMLException;
import org.yaml.snakeyaml.events.Event;
import org.yaml.snakeyaml.nodes.MappingNode;
import org.yaml.snakeyaml.nodes.Node;
import org.yaml.snakeyaml.nodes.NodeId;
import org.yaml.snakeyaml.nodes.NodeTuple;
import org.yaml.snakeyaml.nodes.ScalarNode;
import org.yaml.snakeyaml.nodes.SequenceNode;
import org.yaml.snakeyaml.nodes.Tag;
import org.yaml.snakeyaml.parser.Parser;
import org.yaml.snakeyaml.parser.ParserImpl;
import org.yaml.snakeyaml.reader.StreamReader;
import org.yaml.snakeyaml.resolver.Resolver;

/**
 * SnakeYAML, for the files {@link YamlSubsetReader} leaves to it: read with {@link YamlComposer}'s
 * limits into the same {@link YamlNode} tree, never into Java objects (no constructor runs, so no
 * type named in a file is ever instantiated), every failure one located problem. Loaded only for
 * such a file.
 */
final class SnakeYamlReader {
  private SnakeYamlReader() {}

  /**
   * The tree of {@code text}, or null for an empty document or when a problem was reported: what
   * {@link YamlComposer#compose} does for a file {@link YamlSubsetReader} leaves to SnakeYAML, any
   * file outside its subset and every file with a problem.
   */
  static YamlNode compose(String text, FileProblems problems) {
    return compose(text, problems, null);
  }

  /**
   * As {@link #compose(String, FileProblems)}, every position (of a node, of a problem) placed in
   * the file before {@code inserted} quotes were inserted ({@link YamlComposer#originalColumn}).
   */
  static YamlNode compose(String text, FileProblems problems, long[] inserted) {
    // The limit is the file's: quotes the pre-pass inserted do not count against it.
    LoaderOptions options =
        options(YamlComposer.MAX_CHARS + (inserted == null ? 0 : inserted.length));
    StreamReader reader = new StreamReader(text);
    TrackingParser parser = new TrackingParser(new ParserImpl(reader, options));
    try {
      Node root =
          new AliasPlacingComposer(parser, new NullAndMergeResolver(), options).getSingleNode();
      return root == null ? null : convert(root, new IdentityHashMap<>(), inserted);
    } catch (MarkedYAMLException e) {
      Mark mark = e.getProblemMark() != null ? e.getProblemMark() : e.getContextMark();
      at(problems, mark != null ? mark : parser.lastMark(reader), inserted, describe(e, text));
    } catch (YAMLException e) {
      at(problems, parser.lastMark(reader), inserted, describe(e.getMessage()));
    } catch (RuntimeException e) {
      // A parser bug must not leak as anything but a located problem.
      at(
          problems,
          parser.lastMark(reader),
          inserted,
          "invalid YAML: the parser failed (" + e.getClass().getSimpleName() + ")");
    }
    return null;
  }

  private static void at(FileProblems problems, Mark mark, long[] inserted, String message) {
    if (mark == null || inserted == null) {
      problems.at(mark, "", message);
    } else {
      int line = mark.getLine();
      problems.at(
          line + 1, YamlComposer.originalColumn(inserted, line, mark.getColumn()) + 1, "", message);
    }
  }

  /**
   * SnakeYAML's tree as ours, node for node: a list or map an alias repeats is converted once and
   * shared (a scalar through an alias is a node of its own, {@link AliasPlacingComposer}), as in
   * SnakeYAML's graph (a copy per alias would let a few aliases multiply a file's size), and a list
   * or map that contains itself stays a cycle, which the walker never follows deeper than the
   * schema.
   */
  private static YamlNode convert(Node node, Map<Node, YamlNode> done, long[] inserted) {
    YamlNode converted = done.get(node);
    if (converted != null) {
      return converted;
    }
    String tag = node.getTag().getValue();
    int line = node.getStartMark().getLine();
    int column = YamlComposer.originalColumn(inserted, line, node.getStartMark().getColumn());
    if (node instanceof ScalarNode) {
      converted = new YamlNode.Scalar(tag, ((ScalarNode) node).getValue(), line, column);
      done.put(node, converted);
    } else if (node instanceof SequenceNode) {
      List<YamlNode> items = new ArrayList<>();
      done.put(node, new YamlNode.Sequence(tag, items, line, column));
      for (Node item : ((SequenceNode) node).getValue()) {
        items.add(convert(item, done, inserted));
      }
    } else {
      List<YamlNode.Entry> entries = new ArrayList<>();
      done.put(node, new YamlNode.Mapping(tag, entries, line, column));
      for (NodeTuple t : ((MappingNode) node).getValue()) {
        entries.add(
            new YamlNode.Entry(
                convert(t.getKeyNode(), done, inserted),
                convert(t.getValueNode(), done, inserted)));
      }
    }
    return done.get(node);
  }

  static LoaderOptions options() {
    return options(YamlComposer.MAX_CHARS);
  }

  /** As {@link #options()}, with room for {@code codePoints} (the file's and inserted quotes). */
  static LoaderOptions options(int codePoints) {
    LoaderOptions options = new LoaderOptions();
    options.setCodePointLimit(codePoints);
    options.setMaxAliasesForCollections(YamlComposer.MAX_COLLECTION_ALIASES);
    options.setNestingDepthLimit(YamlComposer.MAX_NESTING);
    // The walker reports duplicate keys itself, with both locations; these guard any other use.
    options.setAllowDuplicateKeys(false);
    options.setAllowRecursiveKeys(false);
    options.setProcessComments(false);
    return options;
  }

  private static String describe(MarkedYAMLException e, String text) {
    String problem = e.getProblem() == null ? "" : e.getProblem().trim();
    String context = e.getContext() == null ? "" : e.getContext().trim();
    if (context.startsWith("expected a single document")) {
      return "found a second document (---); a configuration file holds one";
    }
    StringBuilder out = new StringBuilder("invalid YAML: ").append(problem.replace('\n', ' '));
    if (!context.isEmpty()) {
      out.append(" (").append(context.replace('\n', ' '));
      Mark contextMark = e.getContextMark();
      if (contextMark != null && contextMark != e.getProblemMark()) {
        out.append(" at line ").append(contextMark.getLine() + 1);
      }
      out.append(')');
    }
    return out.append(unquotedReferenceHint(e.getProblemMark(), text)).toString();
  }

  /**
   * A hint where the parser stopped at the {@code {} of a {@code ${NAME}} reference: inside {@code
   * { }} or {@code [ ]} a plain value ends at a {@code {}, so {@code { deadline: ${X:-5s} }} fails
   * there (in a block, {@code deadline: ${X:-5s}} loads). It shows the reference as written and as
   * it loads, quoted ({@code ${X-5s}} as {@code '${X:-5s}'}), its fallback as {@link
   * EnvSubstitution#shown} shows it; the fallback is left out ({@code ...}) where the reference
   * may be in {@code fleet}, whose {@code redis.url} may hold a password: which key it is for is
   * not known yet. Empty when the mark is elsewhere. {@link YamlComposer#quoteFlowReferences}
   * quotes such values before parsing, so only a text it leaves as written (one it does not follow
   * exactly) still stops there.
   */
  private static String unquotedReferenceHint(Mark mark, String text) {
    int[] buffer = mark == null ? null : mark.getBuffer();
    int at = mark == null ? -1 : mark.getPointer();
    if (buffer == null
        || at < 1
        || at >= buffer.length
        || buffer[at] != '{'
        || buffer[at - 1] != '$') {
      return "";
    }
    StringBuilder body = new StringBuilder();
    boolean closed = false;
    for (int i = at + 1; i < buffer.length && body.length() <= 1024; i++) {
      int c = buffer[i];
      if (c == '}') {
        closed = true;
        break;
      }
      if (c == '\n' || c == '\r') {
        break;
      }
      body.appendCodePoint(c);
    }
    boolean secret = mayBeInFleet(text);
    String written = body.toString();
    String corrected = closed ? EnvSubstitution.corrected(written, secret) : null;
    String shown = EnvSubstitution.shown(written, secret);
    String hint;
    if (corrected == null) {
      // No whole reference to correct (no `}` on its line, or no name): its name, as far as read.
      int end = 0;
      while (end < written.length() && isNameChar(written.charAt(end))) {
        end++;
      }
      boolean fallback = end < written.length() && ":-".indexOf(written.charAt(end)) >= 0;
      hint =
          "as in '${"
              + (end == 0 ? "NAME" : written.substring(0, end))
              + (fallback ? ":-..." : "")
              + "}'";
    } else if (corrected.equals("${" + shown + "}")) {
      hint = "as in '" + corrected + "'";
    } else {
      hint = "write ${" + shown + "} as '" + corrected + "'";
    }
    return "; inside { } or [ ] a ${...} reference must be quoted, "
        + hint
        + " (unquoted, its { starts a map there)";
  }

  private static boolean isNameChar(char c) {
    return c == '_' || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
  }

  /**
   * True unless the file shows the reference cannot be in {@code fleet}: without {@code fleet} (in
   * any case) and without a {@code \} (an escape could spell it) anywhere in it. Not only before
   * the reference: an anchored map (a compose file's {@code x-redis: &r { url: ${R:pw} }}) is
   * written before the {@code fleet: { redis: *r }} that takes it, and its fallback was shown.
   */
  private static boolean mayBeInFleet(String text) {
    return text.indexOf('\\') >= 0 || text.toLowerCase(Locale.ROOT).contains("fleet");
  }

  private static String describe(String message) {
    String m = message == null ? "" : message;
    if (m.startsWith("Number of aliases")) {
      return "found more than "
          + YamlComposer.MAX_COLLECTION_ALIASES
          + " aliases to lists or maps; a configuration needs few (this limit stops"
          + " \"billion laughs\" files)";
    }
    if (m.startsWith("Nesting Depth")) {
      return "found lists or maps nested deeper than "
          + YamlComposer.MAX_NESTING
          + " levels; a configuration needs at most 6";
    }
    if (m.contains("exceeds the limit")) {
      return "allowed at most " + YamlComposer.MAX_CHARS + " characters";
    }
    return "invalid YAML: " + m.replace('\n', ' ');
  }

  /**
   * Resolves only the two implicit tags the walker reads: {@code null} (an empty plain scalar, a
   * lone space, {@code ~}, {@code null}, {@code Null}, {@code NULL}) and the merge key {@code <<},
   * exactly as SnakeYAML's own resolver does; every other plain scalar stays a string (the walker
   * parses values from their text, never from a tag). SnakeYAML's resolver matches up to four
   * regular expressions per plain scalar (bool, int, float, timestamp) that the walker never needs,
   * in {@code premain} where the code runs interpreted (docs/BENCHMARKS.md, "Issue 13: start-up
   * with a configuration file (third pass)"). Explicit tags ({@code !foo}) never reach a resolver:
   * the composer keeps them.
   */
  static final class NullAndMergeResolver extends Resolver {
    @Override
    protected void addImplicitResolvers() {
      // none: resolve() below decides without regular expressions
    }

    @Override
    public Tag resolve(NodeId kind, String value, boolean implicit) {
      if (kind == NodeId.scalar) {
        if (implicit && isNull(value)) {
          return Tag.NULL;
        }
        return implicit && value.equals("<<") ? Tag.MERGE : Tag.STR;
      }
      return kind == NodeId.sequence ? Tag.SEQ : Tag.MAP;
    }

    static boolean isNull(String value) {
      switch (value) {
        case "":
        case " ": // in SnakeYAML's pattern too, though a plain scalar is never a lone space
        case "~":
        case "null":
        case "Null":
        case "NULL":
          return true;
        default:
          return false;
      }
    }
  }

  /**
   * SnakeYAML's composer, but a scalar reached through an alias as a map's key or value is a node
   * of its own at the alias's place: SnakeYAML's returns the anchor's node itself, so a problem
   * with the value where the alias stands ({@code maxAttempts: *n} in a route, the anchor a valid
   * default elsewhere) was reported at the anchor's line. A copy costs one small node per alias
   * (the text shared), bounded by the file's size. Lists and maps stay shared, as the alias limit
   * counts on (their items keep their own places), and so does an alias as a list's item (SnakeYAML
   * composes those in a method of its own that cannot be overridden): reported at the anchor.
   */
  private static final class AliasPlacingComposer extends Composer {
    AliasPlacingComposer(Parser parser, Resolver resolver, LoaderOptions options) {
      super(parser, resolver, options);
    }

    @Override
    protected Node composeKeyNode(MappingNode node) {
      Event alias = nextAlias();
      return placed(super.composeKeyNode(node), alias);
    }

    @Override
    protected Node composeValueNode(MappingNode node) {
      Event alias = nextAlias();
      return placed(super.composeValueNode(node), alias);
    }

    /** The alias event that comes next, or null. */
    private Event nextAlias() {
      return parser.checkEvent(Event.ID.Alias) ? parser.peekEvent() : null;
    }

    private static Node placed(Node node, Event alias) {
      if (alias == null || !(node instanceof ScalarNode)) {
        return node;
      }
      ScalarNode s = (ScalarNode) node;
      return new ScalarNode(
          s.getTag(), s.getValue(), alias.getStartMark(), alias.getEndMark(), s.getScalarStyle());
    }
  }

  /** Remembers the last event handed out, to locate errors that SnakeYAML reports unmarked. */
  private static final class TrackingParser implements Parser {
    private final Parser delegate;
    private Mark last;

    TrackingParser(Parser delegate) {
      this.delegate = delegate;
    }

    Mark lastMark(StreamReader reader) {
      return last != null ? last : reader.getMark();
    }

    @Override
    public boolean checkEvent(Event.ID choice) {
      return delegate.checkEvent(choice);
    }

    @Override
    public Event peekEvent() {
      return delegate.peekEvent();
    }

    @Override
    public Event getEvent() {
      Event event = delegate.getEvent();
      if (event != null && event.getStartMark() != null) {
        last = event.getStartMark();
      }
      return event;
    }
  }
}
