package dev.retryagent.config;

/**
 * Turns YAML text into a node tree ({@link YamlNode}), never into Java objects: no constructor
 * runs, so no type named in the file is ever instantiated. A file in the subset {@link
 * YamlSubsetReader} reads (what configuration files are written in) is read by it, without
 * SnakeYAML's parser; any other, and every file with a problem, by SnakeYAML ({@link
 * SnakeYamlReader}), to the same tree. Limits keep a hostile file cheap: size, aliases to
 * collections (billion laughs), nesting depth. Every failure becomes one located problem.
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
    YamlNode subset = YamlSubsetReader.read(text);
    return subset != null ? subset : SnakeYamlReader.compose(text, problems);
  }
}
