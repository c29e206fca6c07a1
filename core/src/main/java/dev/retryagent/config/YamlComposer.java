package dev.retryagent.config;

/**
 * Turns YAML text into a node tree ({@link YamlNode}), never into Java objects: no constructor
 * runs, so no type named in the file is ever instantiated. A file in the subset {@link
 * YamlSubsetReader} reads (what configuration files are written in) is read by it, without
 * SnakeYAML's parser; any other, and every file with a problem, by SnakeYAML ({@link
 * SnakeYamlReader}), to the same tree. Limits keep a hostile file cheap: size, aliases to
 * collections (billion laughs), nesting depth. Every failure becomes one located problem. A plain
 * value holding {@code ${NAME}} inside a flow collection is quoted first ({@link
 * #quoteFlowReferences}), positions placed back where the file has them.
 *
 * <p>No SnakeYAML type appears here: verifying this class would load them (its exceptions, parser
 * and resolver), and a file in the subset needs none.
 */
final class YamlComposer {
  /** Most characters in a file; real configurations are a few KiB. */
  static final int MAX_CHARS = 256 * 1024;

  /** Aliases to lists or maps; amplification attacks need thousands. */
  static final int MAX_COLLECTION_ALIASES = 20;

  /** The contract's deepest key is 6 levels down (routes[i].retry.retryOn.statuses[j]). */
  static final int MAX_NESTING = 16;

  private YamlComposer() {}

  /** The root node, or null for an empty document or when a problem was reported. */
  static YamlNode compose(String text, FileProblems problems) {
    if (text.length() > MAX_CHARS) {
      int line = 1;
      int column = 1;
      for (int i = 0; i < MAX_CHARS; i++) {
        if (text.charAt(i) == '\n') {
          line++;
          column = 1;
        } else {
          column++;
        }
      }
      problems.at(
          line,
          column,
          "",
          "found a file of "
              + text.length()
              + " characters; allowed at most "
              + MAX_CHARS
              + " (a configuration is a few KiB)");
      return null;
    }
    // Only a file with a reference pays for the pre-pass: without one, nothing new runs.
    if (text.indexOf("${") < 0) {
      YamlNode subset = YamlSubsetReader.read(text, null);
      return subset != null ? subset : SnakeYamlReader.compose(text, problems, null);
    }
    // A file that reads as written is read so, with no pre-pass: an unquoted ${ inside a flow
    // collection is never valid YAML, so quoting could only change a file that fails (or, where
    // the pre-pass misreads its context, one that loads). It was ~0.4 ms of premain for
    // config/llm-provider.yml's two references, which need no quotes.
    YamlNode subset = YamlSubsetReader.read(text, null);
    if (subset != null) {
      return subset;
    }
    int[] ranges = flowReferences(text);
    if (ranges == null) {
      return SnakeYamlReader.compose(text, problems, null);
    }
    String read = quoted(text, ranges);
    long[] inserted = insertedAt(text, read, ranges);
    // Quoting adds no tab, anchor, tag, block scalar or other text outside the subset: a quoted
    // text the subset reads was outside it only for the references, so this reads what the file
    // means without SnakeYAML's classes.
    subset = YamlSubsetReader.read(read, inserted);
    if (subset != null) {
      return subset;
    }
    // Outside the subset: SnakeYAML reads the file as written first, so a valid one is never
    // changed; only its failure is read again quoted, and its problems are those of that read.
    FileProblems asWritten = new FileProblems(problems.source());
    YamlNode root = SnakeYamlReader.compose(text, asWritten, null);
    if (asWritten.isEmpty()) {
      return root;
    }
    return SnakeYamlReader.compose(read, problems, inserted);
  }

  /**
   * The text with every plain scalar holding {@code ${} inside a flow collection ({@code { }},
   * {@code [ ]}) single-quoted, or the same instance when there is none: there YAML ends a plain
   * scalar at the {@code {} of {@code ${NAME}}, so {@code { deadline: ${X:-5s} }} was invalid
   * YAML while {@code deadline: ${X:-5s}} in a block loads. Such a scalar is never valid YAML
   * (after {@code $} the {@code {} can only be an error), so quoting it changes no file that
   * loaded. For {@link StrictProbe}, which reads the same text as the composer.
   */
  static String quoteFlowReferences(String text) {
    if (text.indexOf("${") < 0) {
      return text;
    }
    int[] ranges = flowReferences(text);
    return ranges == null ? text : quoted(text, ranges);
  }

  /**
   * The column a position of the quoted text has in the file: {@code column} less the quotes
   * inserted before it on its line ({@code inserted}: sorted {@code line << 32 | column} of each
   * inserted character in the quoted text, as SnakeYAML counts columns, in code points; null for
   * none). An inserted opening quote maps to the character it stands before.
   */
  static int originalColumn(long[] inserted, int line, int column) {
    if (inserted == null) {
      return column;
    }
    long lineStart = (long) line << 32;
    return column - (lowerBound(inserted, lineStart | column) - lowerBound(inserted, lineStart));
  }

  private static int lowerBound(long[] sorted, long key) {
    int lo = 0;
    int hi = sorted.length;
    while (lo < hi) {
      int mid = (lo + hi) >>> 1;
      if (sorted[mid] < key) {
        lo = mid + 1;
      } else {
        hi = mid;
      }
    }
    return lo;
  }

  /**
   * Start and end (exclusive) of every plain scalar inside a flow collection that holds {@code
   * ${}, in pairs, or null for none or for a text this scan does not follow exactly (a line break
   * other than LF or CRLF, a byte order mark inside, a block scalar whose indicator starts its
   * line): such text is read as written. Quoted scalars (over lines too), comments, block scalars
   * and the continuation lines of a multi-line plain scalar are skipped, so only a {@code [} or
   * {@code {} where YAML starts a collection opens one. A plain scalar ends where YAML ends it in a
   * flow ({@code , ? [ ] { }}, a {@code :} before a blank or one of {@code , [ ] { }}, a blank
   * before {@code #}, the line's end), except inside a reference: from {@code ${} to the first
   * {@code }} on its line (as {@link EnvSubstitution} reads it), nothing ends it.
   */
  static int[] flowReferences(String text) {
    int n = text.length();
    for (int i = 0; i < n; i++) {
      char c = text.charAt(i);
      if (c == '\u0085'
          || c == '\u2028'
          || c == '\u2029'
          || c == '\uFEFF'
          || c == '\r' && (i + 1 >= n || text.charAt(i + 1) != '\n')) {
        return null; // SnakeYAML counts lines and columns otherwise than this scan
      }
    }
    int[] ranges = new int[8];
    int count = 0;
    int i = 0;
    int depth = 0; // flow depth
    boolean newLine = true;
    int lineStart = 0;
    int indent = 0; // of the block line being read
    int previousIndent = -1; // of the last block line that held a token
    int plainParent = -2; // > -2: a block plain scalar goes on over lines indented more than this
    int nodeColumn = -1; // block: where the node on this line starts (a key's, for its value)
    int entryColumn = -1; // block: the last '-' or '?' on this line
    int keyColumn = -1; // block: where the key before the last ':' on this line starts
    boolean firstToken = true;
    // Block: where the node whose value is still to come at the end of a line starts (a key's
    // column after its ':', a '-' or '?'), or -1; its value on a next line is its child.
    int openParent = -1;
    int lineParent = -1; // openParent as the line being read started
    // No '}' from the last unclosed reference's `${` up to here (its line's end): a later `${`
    // before it is unclosed too, found without scanning the line again (many `${` stay linear).
    int noCloseUntil = -1;
    while (i < n) {
      char c = text.charAt(i);
      if (depth == 0 && newLine) {
        newLine = false;
        lineStart = i;
        int j = i;
        while (j < n && (text.charAt(j) == ' ' || text.charAt(j) == '\t')) {
          j++;
        }
        if (j >= n || text.charAt(j) == '\n' || text.charAt(j) == '\r') {
          i = lineEnd(text, j); // blank: a multi-line plain scalar goes on
          newLine = true;
          continue;
        }
        boolean comment = text.charAt(j) == '#';
        if (!comment && plainParent > -2 && j - i > plainParent) {
          // The continuation of a plain scalar: text, not a collection, up to a comment.
          int end = lineEnd(text, j);
          for (int k = j + 1; k < end; k++) {
            if (text.charAt(k) == '#'
                && (text.charAt(k - 1) == ' ' || text.charAt(k - 1) == '\t')) {
              plainParent = -2;
              break;
            }
          }
          i = end;
          newLine = true;
          continue;
        }
        plainParent = -2;
        if (comment) {
          i = lineEnd(text, j);
          newLine = true;
          continue;
        }
        previousIndent = indent;
        indent = j - i;
        lineParent = openParent < indent ? openParent : -1;
        openParent = -1;
        nodeColumn = -1;
        keyColumn = -1;
        entryColumn = -1;
        firstToken = true;
        i = j;
        continue;
      }
      if (depth == 0) {
        if (c == ' ' || c == '\t' || c == '\r') {
          i++;
          continue;
        }
        if (c == '\n' || c == '#') {
          i = lineEnd(text, i);
          newLine = true;
          continue;
        }
        int column = i - lineStart;
        boolean first = firstToken;
        // An anchor or tag before a block scalar's indicator leaves it the line's first node.
        firstToken = firstToken && (c == '&' || c == '!');

        char next = i + 1 < n ? text.charAt(i + 1) : '\n';
        boolean blankNext = next == ' ' || next == '\t' || next == '\n' || next == '\r';
        if ((c == '-' || c == '?') && blankNext) {
          entryColumn = column;
          openParent = column;
          nodeColumn = -1;
          keyColumn = -1;
          i++;
          continue;
        }
        if (c == ':' && blankNext) {
          keyColumn = nodeColumn; // where the map starts: its value's parent
          openParent = keyColumn;
          i++;
          continue;
        }
        if (c != '&' && c != '!') {
          openParent = -1;
        }
        if (nodeColumn < 0 && c != '|' && c != '>') {
          nodeColumn = column;
        }
        if (c == '[' || c == '{') {
          depth = 1;
          i++;
          continue;
        }
        if (c == '\'' || c == '"') {
          int open = i;
          i = quotedEnd(text, i);
          lineStart = lineStartBefore(text, i, open, lineStart);
          continue;
        }
        if (c == '|' || c == '>') {
          if (first) {
            return null; // its parent's indentation is on another line
          }
          // Its lines are indented more than its parent, which starts at this line's indentation
          // or after: skipping every such line skips them all.
          i = lineEnd(text, i);
          while (i < n) {
            int j = i;
            while (j < n && text.charAt(j) == ' ') {
              j++;
            }
            if (j < n && text.charAt(j) != '\n' && text.charAt(j) != '\r' && j - i <= indent) {
              break;
            }
            i = lineEnd(text, j);
          }
          newLine = true;
          continue;
        }
        if (c == '&' || c == '!') {
          while (i < n && " \t\r\n".indexOf(text.charAt(i)) < 0) {
            i++;
          }
          continue;
        }
        // A plain scalar (or an alias, a directive, a document marker, a stray indicator): to a
        // key's ':', a comment or the line's end. Over lines, it goes on where YAML continues it
        // at the latest: on lines indented more than the collection it is in, which starts at
        // its key, its '-', or for a value on a line of its own, after the previous line's
        // indentation.
        int parent =
            keyColumn >= 0
                ? keyColumn
                : entryColumn >= 0 ? entryColumn : lineParent >= 0 ? lineParent : previousIndent;
        while (i < n) {
          char d = text.charAt(i);
          if (d == '\n' || d == '\r') {
            plainParent = parent;
            break;
          }
          char e = i + 1 < n ? text.charAt(i + 1) : '\n';
          if (d == ':' && (e == ' ' || e == '\t' || e == '\n' || e == '\r')) {
            break;
          }
          if ((d == ' ' || d == '\t') && e == '#') {
            break;
          }
          i++;
        }
        continue;
      }
      // Flow context.
      char next = i + 1 < n ? text.charAt(i + 1) : '\n';
      if (c == ' '
          || c == '\t'
          || c == '\r'
          || c == ','
          || c == '?'
          || c == ':'
          || c == '-' && (next == ' ' || next == '\t' || next == '\n' || next == '\r')) {
        i++;
        continue;
      }
      if (c == '\n') {
        i++;
        lineStart = i;
        continue;
      }
      if (c == '#') {
        while (i < n && text.charAt(i) != '\n') {
          i++;
        }
        continue;
      }
      if (c == '[' || c == '{') {
        depth++;
        i++;
        continue;
      }
      if (c == ']' || c == '}') {
        depth--;
        i++;
        continue; // at 0: the block line goes on (a key's ':', a comment)
      }
      if (c == '\'' || c == '"') {
        int open = i;
        i = quotedEnd(text, i);
        lineStart = lineStartBefore(text, i, open, lineStart);
        continue;
      }
      if (c == '&' || c == '!' || c == '*') {
        while (i < n && " \t\r\n,[]{}".indexOf(text.charAt(i)) < 0) {
          i++;
        }
        continue;
      }
      // A plain scalar.
      int start = i;
      boolean reference = false;
      boolean nested = false;
      while (i < n) {
        char d = text.charAt(i);
        char e = i + 1 < n ? text.charAt(i + 1) : '\n';
        if (d == '$' && e == '{') {
          reference = true;
          int close = i + 2;
          if (close < noCloseUntil) {
            close = noCloseUntil;
          } else {
            while (close < n && text.charAt(close) != '}' && text.charAt(close) != '\n') {
              close++;
            }
          }
          // Unclosed on its line: the value is quoted as far as YAML reads it, and the
          // substitution names the unterminated reference.
          if (close < n && text.charAt(close) == '}') {
            // `${A:-${B}}`: its first '}' is the inner one, so quoting would split it; as
            // written, the parser's hint names it (nested references are not supported).
            for (int k = i + 2; k + 1 < close; k++) {
              if (text.charAt(k) == '$' && text.charAt(k + 1) == '{') {
                nested = true;
              }
            }
            i = close + 1;
          } else {
            noCloseUntil = close;
            i += 2;
          }
          continue;
        }
        if (d == '\n'
            || d == '\r'
            || ",?[]{}".indexOf(d) >= 0
            || d == ':' && " \t\r\n,[]{}".indexOf(e) >= 0
            || (d == ' ' || d == '\t') && e == '#') {
          break;
        }
        i++;
      }
      int end = i;
      while (end > start && (text.charAt(end - 1) == ' ' || text.charAt(end - 1) == '\t')) {
        end--;
      }
      // A scalar starting with one of these is an error as written: left so.
      if (reference && !nested && "|>%@`".indexOf(text.charAt(start)) < 0) {
        if (count == ranges.length) {
          ranges = java.util.Arrays.copyOf(ranges, count * 2);
        }
        ranges[count++] = start;
        ranges[count++] = end;
      }
    }
    return count == 0 ? null : java.util.Arrays.copyOf(ranges, count);
  }

  /** After the line break that ends the line {@code i} is on, or the text's end. */
  private static int lineEnd(String text, int i) {
    int at = text.indexOf('\n', i);
    return at < 0 ? text.length() : at + 1;
  }

  /**
   * Where the line holding {@code i - 1} starts: after the last line break in {@code [open, i)},
   * else {@code lineStart}. Only the quoted scalar from {@code open} is looked at, not the line
   * before it: a line of many quoted items stays linear.
   */
  private static int lineStartBefore(String text, int i, int open, int lineStart) {
    for (int k = i - 1; k > open; k--) {
      if (text.charAt(k) == '\n') {
        return k + 1;
      }
    }
    return lineStart;
  }

  /** After the closing quote of the scalar quoted at {@code i} (over lines), or the text's end. */
  private static int quotedEnd(String text, int i) {
    char quote = text.charAt(i);
    int n = text.length();
    int j = i + 1;
    while (j < n) {
      char c = text.charAt(j);
      if (quote == '"' && c == '\\') {
        j += 2;
        continue;
      }
      if (c == quote) {
        if (quote == '\'' && j + 1 < n && text.charAt(j + 1) == '\'') {
          j += 2;
          continue;
        }
        return j + 1;
      }
      j++;
    }
    return n;
  }

  /** The text with each range single-quoted, a quote inside doubled. */
  private static String quoted(String text, int[] ranges) {
    StringBuilder out = new StringBuilder(text.length() + ranges.length * 2);
    int at = 0;
    for (int r = 0; r < ranges.length; r += 2) {
      out.append(text, at, ranges[r]).append('\'');
      for (int k = ranges[r]; k < ranges[r + 1]; k++) {
        char c = text.charAt(k);
        out.append(c);
        if (c == '\'') {
          out.append('\'');
        }
      }
      out.append('\'');
      at = ranges[r + 1];
    }
    return out.append(text, at, text.length()).toString();
  }

  /**
   * {@code line << 32 | column} of each character {@link #quoted} inserts, in the quoted text,
   * sorted; columns in code points, as SnakeYAML's marks count them.
   */
  private static long[] insertedAt(String text, String quoted, int[] ranges) {
    // Where each inserted character is in the quoted text, in order.
    int[] at = new int[quoted.length() - text.length()];
    int count = 0;
    int shift = 0;
    for (int r = 0; r < ranges.length; r += 2) {
      at[count++] = ranges[r] + shift++;
      for (int k = ranges[r]; k < ranges[r + 1]; k++) {
        if (text.charAt(k) == '\'') {
          at[count++] = k + ++shift;
        }
      }
      at[count++] = ranges[r + 1] + shift++;
    }
    long[] inserted = new long[count];
    int line = 0;
    int column = 0;
    int next = 0;
    for (int k = 0; k < quoted.length() && next < count; k++) {
      if (k == at[next]) {
        inserted[next++] = (long) line << 32 | column;
      }
      char c = quoted.charAt(k);
      if (c == '\n') {
        line++;
        column = 0;
      } else if (!Character.isLowSurrogate(c)) {
        column++;
      }
    }
    return inserted;
  }
}
