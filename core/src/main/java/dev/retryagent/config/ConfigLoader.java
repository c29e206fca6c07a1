package dev.retryagent.config;

import java.io.FileInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.CharBuffer;
import java.nio.charset.CharsetDecoder;
import java.nio.charset.CoderResult;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileSystems;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;

/**
 * Loads a YAML configuration file into an {@link AgentConfig}: the whole file or nothing. Safe on
 * hostile input: only SnakeYAML's node tree is built (no Java object named by the file), and size,
 * alias and nesting limits make a bad file cost milliseconds and one clear problem. Every problem
 * of a file is reported at once, with line, column and key path. Stateless and thread-safe.
 */
public final class ConfigLoader {
  /** Bytes read at most; UTF-8 needs up to 4 per character of {@link YamlComposer#MAX_CHARS}. */
  public static final long MAX_FILE_BYTES = 4L * YamlComposer.MAX_CHARS;

  private ConfigLoader() {}

  /**
   * Reads and parses a file (UTF-8).
   *
   * <p>Only a regular file is read, and never more than {@link #MAX_FILE_BYTES} (+1) bytes of it: a
   * directory, a named pipe or a device (which could block or never end) and a file that grows
   * while it is read are each one problem, found without reading them whole.
   *
   * @param env the environment for {@code ${NAME}} substitution (the agent passes System.getenv())
   * @throws ConfigException with every problem, also when the file cannot be read
   */
  public static AgentConfig load(Path file, Map<String, String> env) throws ConfigException {
    Objects.requireNonNull(file, "file");
    Objects.requireNonNull(env, "env");
    return parse(read(file, env), file.toString(), env);
  }

  /**
   * The bytes of a configuration file, read with the limits of {@link #load}.
   *
   * @throws ConfigException one problem naming the file when it is not a readable regular file of
   *     at most {@link #MAX_FILE_BYTES} bytes
   */
  public static byte[] read(Path file) throws ConfigException {
    return read(file, null);
  }

  /**
   * As {@link #read(Path)}; a file too large to load is still read up to its own {@code
   * agent.strict} ({@link StrictProbe}), with {@code env} for {@code ${NAME}} substitution (null:
   * not read, {@link ConfigException#strictUnread()}).
   */
  static byte[] read(Path file, Map<String, String> env) throws ConfigException {
    String source = file.toString();
    try {
      BasicFileAttributes attributes = Files.readAttributes(file, BasicFileAttributes.class);
      if (attributes.isDirectory()) {
        throw fileProblem(source, "found a directory; allowed a configuration file");
      }
      if (!attributes.isRegularFile()) {
        // Opening a named pipe blocks until a writer comes; a device may never end.
        throw fileProblem(
            source,
            "found a special file (a named pipe, socket or device); allowed a regular file");
      }
      if (attributes.size() > MAX_FILE_BYTES) {
        throw tooLarge(source, Long.toString(attributes.size()), head(file, env), env);
      }
      byte[] bytes;
      try (InputStream in = open(file)) {
        bytes = in.readNBytes((int) MAX_FILE_BYTES + 1);
      }
      if (bytes.length > MAX_FILE_BYTES) {
        // it grew while it was read
        throw tooLarge(source, "more than " + MAX_FILE_BYTES, bytes, env);
      }
      return bytes;
    } catch (IOException e) {
      throw fileProblem(source, "cannot read the file: " + describe(e));
    }
  }

  /**
   * The first {@link YamlComposer#MAX_CHARS} bytes of a file too large to load, to read its own
   * {@code agent.strict} from; null when not wanted ({@code env} null) or not readable.
   */
  private static byte[] head(Path file, Map<String, String> env) {
    if (env == null) {
      return null;
    }
    try (InputStream in = open(file)) {
      return in.readNBytes(YamlComposer.MAX_CHARS);
    } catch (IOException e) {
      return null;
    }
  }

  /**
   * A stream of {@code file}: a {@link FileInputStream} for the default file system, whose classes
   * the JVM has loaded before any agent runs, where {@code Files.newInputStream} would load ~30 of
   * the JDK's channel classes from its module image first (~4 ms of {@code premain} on JDK 17 and
   * 25: agent/bench/cold-costs.sh); {@code Files} for any other file system.
   */
  private static InputStream open(Path file) throws IOException {
    if (file.getFileSystem() == FileSystems.getDefault()) {
      return new FileInputStream(file.toFile());
    }
    return Files.newInputStream(file);
  }

  /**
   * Parses the bytes of a file: UTF-8, an optional byte order mark, at most {@link
   * #MAX_FILE_BYTES}. The reload watcher parses exactly the bytes it saw settle, never a second
   * read of the file.
   *
   * @param sourceName shown in problems, e.g. the file name
   * @param env the environment for {@code ${NAME}} substitution
   * @throws ConfigException with every problem found
   */
  public static AgentConfig parse(byte[] content, String sourceName, Map<String, String> env)
      throws ConfigException {
    return parse(content, sourceName, env, true);
  }

  /**
   * As {@link #parse(byte[], String, Map)}, for a reload: a file that fails is not read again for
   * its own {@code agent.strict} ({@link StrictProbe}), which only decides whether a start stops
   * the JVM, and a reload never does. The exception's {@link ConfigException#strict()} is false and
   * {@link ConfigException#strictUnread()} true where the probe would have run.
   *
   * @throws ConfigException with every problem found
   */
  public static AgentConfig parseForReload(
      byte[] content, String sourceName, Map<String, String> env) throws ConfigException {
    return parse(content, sourceName, env, false);
  }

  private static AgentConfig parse(
      byte[] content, String sourceName, Map<String, String> env, boolean probe)
      throws ConfigException {
    Objects.requireNonNull(content, "content");
    Objects.requireNonNull(sourceName, "sourceName");
    if (content.length > MAX_FILE_BYTES) {
      throw tooLarge(sourceName, Integer.toString(content.length), probe ? content : null, env);
    }
    return parse(decode(content, sourceName, env, probe), sourceName, env, probe);
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
    return parse(yaml, sourceName, env, true);
  }

  /**
   * @param probe whether a text that is not YAML is read for its own agent.strict
   */
  private static AgentConfig parse(
      String yaml, String sourceName, Map<String, String> env, boolean probe)
      throws ConfigException {
    Objects.requireNonNull(yaml, "yaml");
    Objects.requireNonNull(sourceName, "sourceName");
    Objects.requireNonNull(env, "env");
    FileProblems problems = new FileProblems(sourceName);
    String text = stripBom(yaml);
    YamlNode root = YamlComposer.compose(text, problems);
    if (!problems.isEmpty()) {
      // Not YAML, or over a limit: the walker never reads agent.strict, but the text up to the
      // first error may hold it, and then it was written as surely as in any other invalid file.
      throw problems.unparsed(probe ? StrictProbe.read(text, false, env) : null);
    }
    FileProblems warnings = new FileProblems(sourceName);
    ConfigWalker.ParsedFile parsed =
        new ConfigWalker(problems, warnings, new EnvSubstitution(env)).walk(root);
    AgentConfig config = new ConfigAssembler(problems, warnings).assemble(parsed, sourceName);
    if (!problems.isEmpty() || config == null) {
      if (problems.isEmpty()) {
        problems.at(root, "", "the configuration could not be built");
      }
      throw problems.toException(ConfigAssembler.strictRequested(parsed));
    }
    return warnings.isEmpty() ? config : config.withWarnings(warnings.sorted());
  }

  private static String stripBom(String s) {
    return !s.isEmpty() && s.charAt(0) == '\uFEFF' ? s.substring(1) : s;
  }

  /**
   * Strict UTF-8; the first byte that is not is reported at its line and column, with the file's
   * own {@code agent.strict} read from the text as the JDK decodes it (each bad byte one U+FFFD,
   * which changes no YAML structure and no {@code true}).
   */
  private static String decode(byte[] bytes, String source, Map<String, String> env, boolean probe)
      throws ConfigException {
    // The JDK's own decoding, for the common case, without a CharsetDecoder (two classes the JVM
    // loads from its module image): it turns every malformed sequence into U+FFFD, so a text
    // without one was well-formed UTF-8. A file with one (malformed, or a real U+FFFD) is decoded
    // again strictly, to find and name the first bad byte.
    String text = new String(bytes, StandardCharsets.UTF_8);
    if (text.indexOf('\uFFFD') < 0) {
      return text;
    }
    CharsetDecoder decoder =
        StandardCharsets.UTF_8
            .newDecoder()
            .onMalformedInput(CodingErrorAction.REPORT)
            .onUnmappableCharacter(CodingErrorAction.REPORT);
    ByteBuffer in = ByteBuffer.wrap(bytes);
    // UTF-8 never decodes to more chars than it has bytes.
    CharBuffer out = CharBuffer.allocate(bytes.length);
    CoderResult result = decoder.decode(in, out, true);
    if (!result.isError()) {
      result = decoder.flush(out);
    }
    if (result.isError()) {
      int at = in.position();
      int line = 1;
      int lineStart = 0;
      for (int i = 0; i < at; i++) {
        if (bytes[i] == '\n') {
          line++;
          lineStart = i + 1;
        }
      }
      int column =
          new String(bytes, lineStart, at - lineStart, StandardCharsets.UTF_8).length() + 1;
      Boolean fileStrict = probe ? StrictProbe.read(text, false, env) : null;
      throw new ConfigException(
          List.of(
              new ConfigProblem(
                  source,
                  line,
                  column,
                  "",
                  "found bytes that are not UTF-8 (0x"
                      + Integer.toHexString(bytes[at] & 0xff).toUpperCase(Locale.ROOT)
                      + "); allowed a UTF-8 text file")),
          Boolean.TRUE.equals(fileStrict),
          fileStrict == null,
          null);
    }
    out.flip();
    return out.toString();
  }

  /**
   * @param head the file's bytes, or its first ones, to read its own {@code agent.strict} from: at
   *     most {@link YamlComposer#MAX_CHARS} of them are decoded (leniently) and parsed; null when
   *     not read
   */
  private static ConfigException tooLarge(
      String source, String size, byte[] head, Map<String, String> env) {
    Boolean fileStrict = null;
    if (head != null && env != null) {
      // As many bytes as a file has characters at most: never more text than a loadable file's,
      // nor, for a huge one, more memory than a few times that.
      String text =
          new String(
              head, 0, Math.min(head.length, YamlComposer.MAX_CHARS), StandardCharsets.UTF_8);
      fileStrict = StrictProbe.read(text, true, env);
    }
    return new ConfigException(
        List.of(
            new ConfigProblem(
                source,
                0,
                0,
                "",
                "found a file of "
                    + size
                    + " bytes; allowed at most "
                    + MAX_FILE_BYTES
                    + " (a configuration is a few KiB)")),
        Boolean.TRUE.equals(fileStrict),
        fileStrict == null,
        null);
  }

  /** A file that could not be read: its own {@code agent.strict} was not either. */
  private static ConfigException fileProblem(String source, String message) {
    return new ConfigException(
        List.of(new ConfigProblem(source, 0, 0, "", message)), false, true, null);
  }

  private static String describe(IOException e) {
    String type = e.getClass().getSimpleName();
    return e.getMessage() == null ? type : type + " " + e.getMessage();
  }
}
