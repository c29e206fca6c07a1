package dev.retryagent.config;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import org.yaml.snakeyaml.nodes.Node;

/**
 * Loads a YAML configuration file into an {@link AgentConfig}: the whole file or nothing. Safe on
 * hostile input: only SnakeYAML's node tree is built (no Java object named by the file), and size,
 * alias and nesting limits make a bad file cost milliseconds and one clear problem. Every problem
 * of a file is reported at once, with line, column and key path. Stateless and thread-safe.
 */
public final class ConfigLoader {
  /** Bytes read at most; UTF-8 needs up to 4 per character of {@link YamlComposer#MAX_CHARS}. */
  static final long MAX_FILE_BYTES = 4L * YamlComposer.MAX_CHARS;

  private ConfigLoader() {}

  /**
   * Reads and parses a file (UTF-8).
   *
   * @param env the environment for {@code ${NAME}} substitution (the agent passes System.getenv())
   * @throws ConfigException with every problem, also when the file cannot be read
   */
  public static AgentConfig load(Path file, Map<String, String> env) throws ConfigException {
    Objects.requireNonNull(file, "file");
    Objects.requireNonNull(env, "env");
    String source = file.toString();
    String text;
    try {
      long size = Files.size(file);
      if (size > MAX_FILE_BYTES) {
        throw fileProblem(
            source,
            "found a file of "
                + size
                + " bytes; allowed at most "
                + MAX_FILE_BYTES
                + " (a configuration is a few KiB)");
      }
      text = decode(Files.readAllBytes(file), source);
    } catch (IOException e) {
      throw fileProblem(source, "cannot read the file: " + describe(e));
    }
    return parse(text, source, env);
  }

  /**
   * Parses YAML text.
   *
   * @param sourceName shown in problems, e.g. the file name
   * @param env the environment for {@code ${NAME}} substitution
   * @throws ConfigException with every problem found
   */
  public static AgentConfig parse(String yaml, String sourceName, Map<String, String> env)
      throws ConfigException {
    Objects.requireNonNull(yaml, "yaml");
    Objects.requireNonNull(sourceName, "sourceName");
    Objects.requireNonNull(env, "env");
    FileProblems problems = new FileProblems(sourceName);
    Node root = YamlComposer.compose(stripBom(yaml), problems);
    if (!problems.isEmpty()) {
      throw problems.toException(false);
    }
    ConfigWalker.ParsedFile parsed =
        new ConfigWalker(problems, new EnvSubstitution(env)).walk(root);
    AgentConfig config = new ConfigAssembler(problems).assemble(parsed, sourceName);
    if (!problems.isEmpty() || config == null) {
      if (problems.isEmpty()) {
        problems.at(root, "", "the configuration could not be built");
      }
      throw problems.toException(ConfigAssembler.strictRequested(parsed));
    }
    return config;
  }

  private static String stripBom(String s) {
    return !s.isEmpty() && s.charAt(0) == '\uFEFF' ? s.substring(1) : s;
  }

  private static String decode(byte[] bytes, String source) throws ConfigException {
    try {
      return StandardCharsets.UTF_8
          .newDecoder()
          .onMalformedInput(CodingErrorAction.REPORT)
          .onUnmappableCharacter(CodingErrorAction.REPORT)
          .decode(ByteBuffer.wrap(bytes))
          .toString();
    } catch (CharacterCodingException e) {
      throw fileProblem(source, "found bytes that are not UTF-8; allowed a UTF-8 text file");
    }
  }

  private static ConfigException fileProblem(String source, String message) {
    return new ConfigException(List.of(new ConfigProblem(source, 0, 0, "", message)));
  }

  private static String describe(IOException e) {
    String type = e.getClass().getSimpleName();
    return e.getMessage() == null ? type : type + " " + e.getMessage();
  }
}
