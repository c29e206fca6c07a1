package dev.retryagent.config;

import java.util.Map;
import org.yaml.snakeyaml.events.CollectionStartEvent;
import org.yaml.snakeyaml.events.Event;
import org.yaml.snakeyaml.events.ScalarEvent;
import org.yaml.snakeyaml.parser.Parser;
import org.yaml.snakeyaml.parser.ParserImpl;
import org.yaml.snakeyaml.reader.StreamReader;

/**
 * The file's own {@code agent.strict}, for a file that could not be loaded before its {@code agent}
 * section was read: one that is not YAML (a tab in the indentation, an unclosed bracket), holds a
 * second document, exceeds a limit of {@link YamlComposer}, is not UTF-8 or is too large. Such a
 * file is still well-formed YAML up to its first error, and {@code agent.strict: true} written
 * there was written: it stops the JVM as in any other invalid file.
 *
 * <p>Never a guess: SnakeYAML's event parser reads the text until its first error, and only a
 * top-level key {@code agent} whose map holds {@code strict} with a scalar counts, read with the
 * walker's rules (the first of duplicate keys, YAML's own tags only, {@code ${NAME}} from the
 * environment, {@link ValueType#BOOLEAN}). Anything after the error, after the first document,
 * reached through an alias, or cut off by a size limit does not count, nor a scalar followed by
 * {@code :} ({@code strict: true: x}, a map the parser refuses at that {@code :}).
 *
 * <p>Runs only for a file that failed: a valid file never loads this class.
 */
final class StrictProbe {
  private StrictProbe() {}

  /**
   * {@link Boolean#TRUE} when the text's own {@code agent.strict} reads as true before its first
   * error; {@link Boolean#FALSE} when it reads otherwise or the first document was read to its end
   * without it; null when an error (or the end of text that was cut) came first, so it is not
   * known.
   *
   * @param text at most {@link YamlComposer#MAX_CHARS} characters of it are read
   * @param cut whether {@code text} is the start of a longer file: an answer then counts only when
   *     something written after what decided it was read, as the cut may fall inside the value
   *     ({@code strict: true} of {@code strict: truely}) or before the key ({@code agent.strict}
   *     written after the cut)
   */
  static Boolean read(String text, boolean cut, Map<String, String> env) {
    String probed = text;
    boolean truncated = cut;
    if (probed.length() > YamlComposer.MAX_CHARS) {
      // never more than a loadable file: the rest of a hostile one is not parsed
      probed = probed.substring(0, YamlComposer.MAX_CHARS);
      truncated = true;
    }
    if (!probed.isEmpty() && probed.charAt(0) == '\uFEFF') {
      probed = probed.substring(1);
    }
    // The text the composer parses: `agent: { strict: ${S} }` is read as it would have been.
    // Its inserted quotes do not count against the file's limit.
    int written = probed.length();
    probed = YamlComposer.quoteFlowReferences(probed);
    Parser parser =
        new ParserImpl(
            new StreamReader(probed),
            SnakeYamlReader.options(YamlComposer.MAX_CHARS + probed.length() - written));
    // Cut text: an answer counts only once what decided it is known to end before the cut (see
    // decided); the ends the parser adds at the end of the text are no such proof.
    int end = truncated ? probed.codePointCount(0, probed.length()) : Integer.MAX_VALUE;
    try {
      return find(parser, probed, end, env);
    } catch (RuntimeException e) {
      // the first error came before the answer (a YAMLException, or a parser bug)
      return null;
    }
  }

  /**
   * Reads up to {@code agent.strict} of the first document; see {@link #read}.
   *
   * @param end the code point where cut text ends ({@link Integer#MAX_VALUE}: not cut)
   */
  private static Boolean find(Parser parser, String text, int end, Map<String, String> env) {
    parser.getEvent(); // StreamStart
    Event e = parser.getEvent();
    if (!e.is(Event.ID.DocumentStart)) {
      // an empty file sets nothing; cut text may go on with a document
      return before(e, end) ? Boolean.FALSE : null;
    }
    Event root = parser.getEvent();
    if (!isMapping(root)) {
      // not a map at the top: no agent section (the walker says so)
      return decided(parser, Boolean.FALSE, end);
    }
    Event agent = valueOf(parser, "agent", 1);
    if (agent.is(Event.ID.MappingEnd)) {
      return before(agent, end) ? Boolean.FALSE : null;
    }
    if (agent.is(Event.ID.Alias)) {
      return null; // not followed: which node it names is the composer's to say
    }
    if (!isMapping(agent)) {
      return decided(parser, Boolean.FALSE, end);
    }
    Event strict = valueOf(parser, "strict", 2);
    if (strict.is(Event.ID.MappingEnd)) {
      // the agent section ended without it; in cut text, `strict` may follow the cut
      return before(strict, end) ? Boolean.FALSE : null;
    }
    if (strict.is(Event.ID.Alias)) {
      return null;
    }
    if (!(strict instanceof ScalarEvent)) {
      return decided(parser, Boolean.FALSE, end); // a list or map (invalid)
    }
    ScalarEvent s = (ScalarEvent) strict;
    if (followedByValueIndicator(text, s.getEndMark().getIndex(), agent)) {
      // `strict: true: x`: the scalar is the first key of a map the parser refuses there (its
      // error is at that `:`), not the value; what the value is, the file does not say.
      return null;
    }
    Boolean value;
    if (!standardTag(s.getTag()) || YamlNode.NULL.equals(s.getTag())) {
      value = Boolean.FALSE; // the walker refuses the value
    } else {
      try {
        String v = new EnvSubstitution(env).apply(s.getValue(), ValueType.BOOLEAN.maySecret());
        value = Boolean.TRUE.equals(ValueType.BOOLEAN.convert(v)) ? Boolean.TRUE : Boolean.FALSE;
      } catch (IllegalArgumentException invalid) {
        value = Boolean.FALSE;
      }
    }
    // in cut text the cut may fall inside the value: `strict: t` of `strict: true`
    return decided(parser, value, end);
  }

  /** Whether {@code e} was written before {@code end}, not added by the parser at the end. */
  private static boolean before(Event e, int end) {
    return e.getStartMark() != null && e.getStartMark().getIndex() < end;
  }

  /**
   * {@code answer}, decided by the node just read, when the text was not cut or an event after it
   * was written before the cut (a {@code }}, the next key), so that the node ended there; else
   * null.
   */
  private static Boolean decided(Parser parser, Boolean answer, int end) {
    if (end == Integer.MAX_VALUE) {
      return answer;
    }
    while (true) {
      Event e = parser.getEvent();
      if (e == null || e.is(Event.ID.StreamEnd)) {
        return null;
      }
      if (before(e, end)) {
        return answer;
      }
    }
  }

  /**
   * In the map whose start was just read, the first value of {@code key} (its first event), or the
   * map's end when it ends without it. Other keys and their values are skipped; a key that is not a
   * scalar written in place (a list, a map, an alias) is none.
   */
  private static Event valueOf(Parser parser, String key, int level) {
    while (true) {
      Event k = parser.getEvent();
      if (k.is(Event.ID.MappingEnd)) {
        return k;
      }
      boolean match =
          k instanceof ScalarEvent
              && key.equals(((ScalarEvent) k).getValue())
              && !YamlNode.NULL.equals(((ScalarEvent) k).getTag());
      if (!match) {
        skipNode(parser, k, level + 1);
      }
      Event v = parser.getEvent();
      if (match) {
        return v;
      }
      skipNode(parser, v, level + 1);
    }
  }

  /**
   * Reads to the end of the node that {@code first} starts, at depth {@code level}.
   *
   * @throws IllegalStateException deeper than {@link YamlComposer#MAX_NESTING}, where the composer
   *     stopped: the scanner's cost per token grows with the depth of [ and {
   */
  private static void skipNode(Parser parser, Event first, int level) {
    if (!(first instanceof CollectionStartEvent)) {
      return;
    }
    int depth = level;
    while (depth >= level) {
      if (depth > YamlComposer.MAX_NESTING) {
        throw new IllegalStateException("nested too deep");
      }
      Event e = parser.getEvent();
      if (e instanceof CollectionStartEvent) {
        depth++;
      } else if (e.is(Event.ID.MappingEnd) || e.is(Event.ID.SequenceEnd)) {
        depth--;
      }
    }
  }

  /**
   * Whether the scalar that ends at code point {@code end} is followed, on its line, by a {@code :}
   * that SnakeYAML's scanner takes as a mapping value indicator: any {@code :} inside a flow map
   * (after a plain scalar one followed by a space or {@code ,[]{}}, else it would be part of the
   * scalar), in a block one a {@code :} followed by a space, a tab, a line break or the end.
   */
  private static boolean followedByValueIndicator(String text, int end, Event agent) {
    int i = text.offsetByCodePoints(0, Math.min(end, text.codePointCount(0, text.length())));
    while (i < text.length() && (text.charAt(i) == ' ' || text.charAt(i) == '\t')) {
      i++;
    }
    if (i >= text.length() || text.charAt(i) != ':') {
      return false;
    }
    if (((CollectionStartEvent) agent).isFlow()) {
      return true;
    }
    if (i + 1 >= text.length()) {
      return true;
    }
    char next = text.charAt(i + 1);
    return next == ' '
        || next == '\t'
        || next == '\r'
        || next == '\n'
        || next == '\u0085'
        || next == '\u2028'
        || next == '\u2029';
  }

  /** A map the walker reads: none of its own tags, or one of YAML's. */
  private static boolean isMapping(Event e) {
    return e.is(Event.ID.MappingStart) && standardTag(((CollectionStartEvent) e).getTag());
  }

  private static boolean standardTag(String tag) {
    return tag == null || tag.equals("!") || tag.startsWith(YamlNode.STANDARD_TAG_PREFIX);
  }
}
