package dev.retryagent.config;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.retryagent.policy.Mode;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Agent argument > system property > environment variable > file > built-in defaults. */
class ConfigSourcesTest {
  private static final Properties NO_PROPS = new Properties();

  @TempDir Path dir;

  private static Properties props(String... keyValues) {
    Properties p = new Properties();
    for (int i = 0; i < keyValues.length; i += 2) {
      p.setProperty(keyValues[i], keyValues[i + 1]);
    }
    return p;
  }

  private static List<ConfigProblem> problems(
      String args, Properties props, Map<String, String> env) {
    AtomicReference<ConfigException> caught = new AtomicReference<>();
    assertThatThrownBy(() -> ConfigSources.resolve(args, props, env))
        .isInstanceOfSatisfying(ConfigException.class, caught::set);
    return caught.get().problems();
  }

  @Test
  void nothingNamedAnywhereMeansTheBuiltInDefaults() throws Exception {
    ConfigSources s = ConfigSources.resolve(null, NO_PROPS, Map.of());
    assertThat(s.configFile()).isNull();
    assertThat(s.configOrigin()).isEqualTo("none");
    assertThat(s.mode()).isNull();
    assertThat(s.strict()).isNull();
    AgentConfig c = s.load(Map.of());
    assertThat(c).isEqualTo(AgentConfig.defaults());
    assertThat(c.source()).isEqualTo("built-in defaults");
    assertThat(ConfigSources.resolve("  ", NO_PROPS, Map.of()).configFile()).isNull();
  }

  @Test
  void aBareArgumentIsThePath() throws Exception {
    ConfigSources s = ConfigSources.resolve("conf/retry.yml", NO_PROPS, Map.of());
    assertThat(s.configFile()).isEqualTo(Path.of("conf/retry.yml"));
    assertThat(s.configOrigin()).isEqualTo("agent argument");
  }

  @Test
  void aBarePathMayHoldCommasAndEqualsSignsAfterASlash() throws Exception {
    assertThat(ConfigSources.resolve("/etc/a,b/x=y.yml", NO_PROPS, Map.of()).configFile())
        .isEqualTo(Path.of("/etc/a,b/x=y.yml"));
  }

  /**
   * A file in the working directory: an argument that starts with a key-like word names no other
   * (deleted after the test; a unique name, so no file of the project's is touched).
   */
  private Path inWorkingDir(String name, String yaml) throws Exception {
    Path file =
        Path.of(name + "-" + ProcessHandle.current().pid() + "-" + System.nanoTime() + ".yml");
    inWorkingDir.add(file);
    return Files.writeString(file, yaml);
  }

  private final List<Path> inWorkingDir = new ArrayList<>();

  @AfterEach
  void deleteFromWorkingDir() throws Exception {
    for (Path p : inWorkingDir) {
      Files.deleteIfExists(p);
    }
  }

  /**
   * A file whose name holds {@code =} after a key-like word ({@code prod=eu.yml}) given alone is
   * that file when it exists: an argument not made of known keys means nothing else. Every argument
   * of known keys keeps its meaning.
   */
  @Test
  void anExistingFileWhoseNameHoldsAnEqualsSignIsThePath() throws Exception {
    Path prod = inWorkingDir("prod=eu", "agent: {mode: observe}\n");
    ConfigSources s = ConfigSources.resolve(prod.toString(), NO_PROPS, Map.of());
    assertThat(s.configFile()).isEqualTo(prod);
    assertThat(s.configOrigin()).isEqualTo("agent argument");
    assertThat(s.mode()).isNull();
    assertThat(s.load(Map.of()).mode()).isEqualTo(Mode.OBSERVE);
    Path dotted = inWorkingDir("app.v2=eu,west", "version: 1\n");
    assertThat(ConfigSources.resolve(dotted.toString(), NO_PROPS, Map.of()).configFile())
        .isEqualTo(dotted);
    // a separator before the `=`: a bare path already, existing or not
    assertThat(ConfigSources.resolve("/etc/app/a=b.yml", NO_PROPS, Map.of()).configFile())
        .isEqualTo(Path.of("/etc/app/a=b.yml"));
  }

  /** Not a file, not pairs of known keys: the problems say how the argument was read. */
  @Test
  void anArgumentThatIsNeitherPairsNorAFileSaysHowItWasRead() {
    List<ConfigProblem> all = problems("prod=eu.yml", NO_PROPS, Map.of());
    assertThat(all).extracting(ConfigProblem::path).containsExactly("(argument)", "prod");
    assertThat(all.get(0))
        .hasToString(
            "agent argument: (argument): read as key=value pairs (config, mode, strict) since no"
                + " file named as the whole argument exists; a path that holds `=` is written"
                + " config=PATH or ./PATH");
    // The argument is not repeated: a pair of an unknown key may hold a secret.
    assertThat(problems("config=app.yml,password=hunter2", NO_PROPS, Map.of()))
        .extracting(ConfigProblem::toString)
        .isNotEmpty()
        .noneMatch(p -> p.contains("hunter2"));
  }

  /**
   * Pairs of known keys stay pairs even when a file of that name exists ({@code mode=eu.yml}); when
   * they are invalid, the error says so and how to name the file.
   */
  @Test
  void pairsOfKnownKeysStayPairsAndSayWhenAFileOfThatNameExists() throws Exception {
    Path modeFile = inWorkingDir("mode=eu", "version: 1\n");
    ConfigException e = resolveFailure(modeFile.toString(), NO_PROPS, Map.of());
    assertThat(e.problems()).extracting(ConfigProblem::path).containsExactly("(argument)", "mode");
    assertThat(e.problems().get(0).message())
        .isEqualTo(
            "read as key=value pairs (config, mode, strict); a file named as the whole argument"
                + " exists too: to name it, write config=PATH or ./PATH");
    assertThat(ConfigSources.resolve("./" + modeFile, NO_PROPS, Map.of()).configFile())
        .isEqualTo(Path.of("./" + modeFile));
    assertThat(ConfigSources.resolve("config=" + modeFile, NO_PROPS, Map.of()).configFile())
        .isEqualTo(modeFile);

    // valid pairs keep their meaning though a file of the whole argument's name exists
    Path named = inWorkingDir("named", "agent: {mode: off}\n");
    Path whole = Path.of("config=" + named);
    inWorkingDir.add(whole);
    Files.writeString(whole, "agent: {mode: observe}\n");
    ConfigSources pairs = ConfigSources.resolve(whole.toString(), NO_PROPS, Map.of());
    assertThat(pairs.configFile()).isEqualTo(named);
    assertThat(pairs.load(Map.of()).mode()).isEqualTo(Mode.OFF);
  }

  @Test
  void keyValuePairsNameTheFileModeAndStrict() throws Exception {
    ConfigSources s =
        ConfigSources.resolve(" config = conf.yml , mode=OBSERVE,strict=true ", NO_PROPS, Map.of());
    assertThat(s.configFile()).isEqualTo(Path.of("conf.yml"));
    assertThat(s.mode()).isEqualTo(Mode.OBSERVE);
    assertThat(s.modeOrigin()).isEqualTo("agent argument");
    assertThat(s.strict()).isTrue();
    assertThat(s.strictOrigin()).isEqualTo("agent argument");
  }

  @Test
  void aQuotedValueMayHoldACommaAndAnEmptyPairIsIgnored() throws Exception {
    ConfigSources s = ConfigSources.resolve("config='a,b.yml',,mode=off,", NO_PROPS, Map.of());
    assertThat(s.configFile()).isEqualTo(Path.of("a,b.yml"));
    assertThat(s.mode()).isEqualTo(Mode.OFF);
  }

  @Test
  void theArgumentBeatsThePropertyWhichBeatsTheEnvironment() throws Exception {
    Properties p =
        props(
            "retryagent.config",
            "prop.yml",
            "retryagent.mode",
            "observe",
            "retryagent.strict",
            "true");
    Map<String, String> env =
        Map.of(
            "RETRY_AGENT_CONFIG",
            "env.yml",
            "RETRY_AGENT_MODE",
            "off",
            "RETRY_AGENT_STRICT",
            "false");
    ConfigSources all = ConfigSources.resolve("config=arg.yml,mode=enforce", p, env);
    assertThat(all.configFile()).isEqualTo(Path.of("arg.yml"));
    assertThat(all.mode()).isEqualTo(Mode.ENFORCE);
    assertThat(all.strict()).isTrue();
    assertThat(all.strictOrigin()).isEqualTo("system property retryagent.strict");

    ConfigSources noArg = ConfigSources.resolve(null, p, env);
    assertThat(noArg.configFile()).isEqualTo(Path.of("prop.yml"));
    assertThat(noArg.configOrigin()).isEqualTo("system property retryagent.config");
    assertThat(noArg.mode()).isEqualTo(Mode.OBSERVE);

    ConfigSources envOnly = ConfigSources.resolve(null, NO_PROPS, env);
    assertThat(envOnly.configFile()).isEqualTo(Path.of("env.yml"));
    assertThat(envOnly.configOrigin()).isEqualTo("environment variable RETRY_AGENT_CONFIG");
    assertThat(envOnly.mode()).isEqualTo(Mode.OFF);
    assertThat(envOnly.modeOrigin()).isEqualTo("environment variable RETRY_AGENT_MODE");
    assertThat(envOnly.strict()).isFalse();
  }

  @Test
  void blankPropertiesAndVariablesCountAsUnset() throws Exception {
    ConfigSources s =
        ConfigSources.resolve(
            null,
            props("retryagent.config", " "),
            Map.of("RETRY_AGENT_CONFIG", "env.yml", "RETRY_AGENT_MODE", ""));
    assertThat(s.configFile()).isEqualTo(Path.of("env.yml"));
    assertThat(s.mode()).isNull();
  }

  @Test
  void overridesBeatTheFileWhichBeatsTheBuiltInDefaults() throws Exception {
    Path file = dir.resolve("c.yml");
    Files.writeString(file, "agent: {mode: observe, strict: false, reload: false}\n");
    AgentConfig fromFile =
        ConfigSources.resolve(file.toString(), NO_PROPS, Map.of()).load(Map.of());
    assertThat(fromFile.mode()).isEqualTo(Mode.OBSERVE);
    assertThat(fromFile.reload()).isFalse();
    assertThat(fromFile.source()).isEqualTo(file.toString());

    AgentConfig overridden =
        ConfigSources.resolve(
                "config=" + file,
                props("retryagent.mode", "off"),
                Map.of("RETRY_AGENT_STRICT", "true"))
            .load(Map.of());
    assertThat(overridden.mode()).isEqualTo(Mode.OFF);
    assertThat(overridden.strict()).isTrue();
    assertThat(overridden.reload()).isFalse();
  }

  @Test
  void overridesApplyToTheBuiltInDefaultsToo() throws Exception {
    AgentConfig c = ConfigSources.resolve("mode=observe", NO_PROPS, Map.of()).load(Map.of());
    assertThat(c.mode()).isEqualTo(Mode.OBSERVE);
    assertThat(c.defaultPolicy()).isEqualTo(AgentConfig.defaults().defaultPolicy());
  }

  @Test
  void theFileIsReadWithTheInjectedEnvironment() throws Exception {
    Path file = dir.resolve("env.yml");
    Files.writeString(file, "defaults: {retry: {maxAttempts: '${N}'}}\n");
    AgentConfig c =
        ConfigSources.resolve(null, NO_PROPS, Map.of("RETRY_AGENT_CONFIG", file.toString()))
            .load(Map.of("N", "4"));
    assertThat(c.defaultPolicy().retry().maxAttempts()).isEqualTo(4);
  }

  @Test
  void aStrictOverrideDecidesWhetherAnInvalidFileStopsTheJvm() throws Exception {
    Path file = dir.resolve("bad.yml");
    Files.writeString(file, "agent: {strict: true}\ndefaults: {retry: {maxAttempts: 0}}\n");
    assertThatThrownBy(
            () -> ConfigSources.resolve(file.toString(), NO_PROPS, Map.of()).load(Map.of()))
        .isInstanceOfSatisfying(ConfigException.class, e -> assertThat(e.strict()).isTrue());
    assertThatThrownBy(
            () ->
                ConfigSources.resolve("config=" + file + ",strict=false", NO_PROPS, Map.of())
                    .load(Map.of()))
        .isInstanceOfSatisfying(ConfigException.class, e -> assertThat(e.strict()).isFalse());
  }

  private Path write(String name, String yaml) throws Exception {
    return Files.writeString(dir.resolve(name), yaml);
  }

  /** The exception of loading {@code file} with {@code args} after it ({@code ,strict=true}). */
  private ConfigException failure(Path file, String args) {
    AtomicReference<ConfigException> caught = new AtomicReference<>();
    assertThatThrownBy(
            () ->
                ConfigSources.resolve("config=" + file + args, NO_PROPS, Map.of("S", "true"))
                    .load(Map.of("S", "true")))
        .as(file.getFileName() + args)
        .isInstanceOfSatisfying(ConfigException.class, caught::set);
    return caught.get();
  }

  /**
   * docs/configuration.md (Errors): a file's own {@code agent.strict: true} stops the JVM also when
   * the file is not YAML further on (a tab, an unclosed bracket, a second document), is not UTF-8
   * or is too large, as long as it was written before the first error.
   */
  @Test
  void aFileThatIsNotYamlAfterItsOwnStrictStopsTheJvm() throws Exception {
    String big = "agent: {strict: true}\n" + "#".repeat(YamlComposer.MAX_CHARS) + "\n";
    List<Path> files =
        List.of(
            write("tab.yml", "agent: {strict: true}\ndefaults:\n\tretry: {}\n"),
            write("tab-block.yml", "agent:\n  strict: true\ndefaults:\n\tretry: {}\n"),
            write("bracket.yml", "agent: {strict: true}\ndefaults: {retry: [\n"),
            write("bracket-in-agent.yml", "agent: {strict: true, mode: [\n"),
            write("two.yml", "agent: {strict: true}\n---\ndefaults: {}\n"),
            write("env.yml", "agent: {strict: '${S}'}\n---\n"),
            write("dup.yml", "agent: {strict: true}\ndefaults: {}\ndefaults: {}\n"),
            write("chars.yml", big),
            Files.write(
                dir.resolve("latin1.yml"),
                "agent: {strict: true}\n# caf\u00e9\n".getBytes(StandardCharsets.ISO_8859_1)),
            Files.write(
                dir.resolve("bytes.yml"),
                ("agent:\n  strict: true\n  mode: observe\n"
                        + "#".repeat((int) ConfigLoader.MAX_FILE_BYTES))
                    .getBytes(StandardCharsets.UTF_8)));
    for (Path file : files) {
      ConfigException e = failure(file, "");
      assertThat(e.strict()).as(file.toString()).isTrue();
      assertThat(e.strictOrigin()).isNull();
      // the override still wins, and says so
      ConfigException overridden = failure(file, ",strict=false");
      assertThat(overridden.strict()).as(file.toString()).isFalse();
      assertThat(overridden.strictOrigin()).isEqualTo("agent argument");
    }
  }

  /**
   * Never a guess: an {@code agent.strict: true} after the first error, in a second document,
   * through an alias, not true by the schema's rules, or cut off by the size limit does not stop
   * the JVM; the override does.
   */
  @Test
  void aFileThatCannotBeReadUpToItsOwnStrictStopsTheJvmOnlyWithTheOverride() throws Exception {
    // MAX_CHARS cuts "truely" after "true": what follows the cut could change the value
    String cut = "agent:\n  strict: true";
    String cutFile = "#".repeat(YamlComposer.MAX_CHARS - cut.length() - 1) + "\n" + cut + "ly\n";
    List<Path> unread =
        List.of(
            write("tab.yml", "defaults:\n\tretry: {}\nagent: {strict: true}\n"),
            write("bracket.yml", "defaults: {retry: [\nagent: {strict: true}\n"),
            write("alias.yml", "x: &t true\nagent: {strict: *t}\n---\n"),
            write("cut.yml", cutFile),
            // the parser refuses the map `true: x` starts at its `:`
            write("colon.yml", "agent:\n  strict: true: x\n"),
            write("colon-flow.yml", "agent: {strict: true: x}\n"),
            // over 1 MiB, its strict after the first MAX_CHARS bytes it is read on
            write(
                "after-cut.yml",
                "agent:\n  mode: observe\n  # "
                    + "#".repeat((int) ConfigLoader.MAX_FILE_BYTES)
                    + "\n  strict: true\n"),
            // no more than MAX_CHARS characters read of it (no more than a file may hold)
            write(
                "after-chars.yml",
                "agent:\n  mode: observe\n  # "
                    + "#".repeat(YamlComposer.MAX_CHARS)
                    + "\n  strict: true\n"),
            dir.resolve("missing.yml"));
    List<Path> notTrue =
        List.of(
            write("second.yml", "agent: {mode: observe}\n---\nagent: {strict: true}\n"),
            write("unset.yml", "agent: {strict: '${NO_SUCH_VARIABLE}'}\n---\n"),
            write("yes.yml", "agent: {strict: yes}\n---\n"),
            write("tag.yml", "agent: {strict: !flag true}\n---\n"),
            write("flow.yml", "agent: {strict: true\nx"));
    for (Path file : unread) {
      ConfigException e = failure(file, "");
      assertThat(e.strict()).as(file.toString()).isFalse();
      assertThat(e.strictUnread()).as(file.toString()).isTrue();
      assertThat(failure(file, ",strict=true").strict()).as(file.toString()).isTrue();
    }
    for (Path file : notTrue) {
      ConfigException e = failure(file, "");
      assertThat(e.strict()).as(file.toString()).isFalse();
      assertThat(e.strictUnread()).as(file.toString()).isFalse();
      assertThat(failure(file, ",strict=true").strict()).as(file.toString()).isTrue();
    }
    // the same cut, with a node after the value: the value ended before the cut
    String whole = "agent:\n  strict: true\n  mode: observe";
    Path read =
        write(
            "read.yml",
            "#".repeat(YamlComposer.MAX_CHARS - whole.length() - 1) + "\n" + whole + "\n#\n");
    assertThat(failure(read, "").strict()).isTrue();
  }

  /**
   * An invalid override ({@code mode=observ}) without a valid strict one: the named file's own
   * {@code agent.strict} decides, as it will once the override is fixed, and the file's problems
   * are reported with the override's.
   */
  @Test
  void anInvalidOverrideStopsTheJvmWhenTheFileItNamesIsStrict() throws Exception {
    Path strict = write("strict.yml", "agent: {strict: true}\n");
    Path strictInvalid = write("bad.yml", "agent: {strict: true}\ndefaults:\n\tretry: {}\n");
    Path lax = write("lax.yml", "agent: {mode: observe}\n");

    ConfigException e = failure(strict, ",mode=observ");
    assertThat(e.strict()).isTrue();
    assertThat(e.problems()).extracting(ConfigProblem::path).containsExactly("mode");

    e = failure(strictInvalid, ",mode=observ");
    assertThat(e.strict()).isTrue();
    assertThat(e.problems())
        .extracting(ConfigProblem::source)
        .containsExactly("agent argument", strictInvalid.toString());

    e = failure(lax, ",mode=observ");
    assertThat(e.strict()).isFalse();
    assertThat(e.strictUnread()).isFalse();

    // a file that cannot be read is reported with the override, and its strict is not known
    Path missing = dir.resolve("missing.yml");
    e = failure(missing, ",mode=observ");
    assertThat(e.strict()).isFalse();
    assertThat(e.strictUnread()).isTrue();
    assertThat(e.noFile()).isFalse();
    assertThat(e.problems())
        .extracting(ConfigProblem::source)
        .containsExactly("agent argument", missing.toString());
    assertThat(e.problems().get(1).message()).startsWith("cannot read the file: NoSuchFile");
    assertThat(failure(missing, ",mode=observ,strict=true").strict()).isTrue();

    // a file too large to load is still read up to its agent.strict
    Path large =
        Files.writeString(
            dir.resolve("large.yml"),
            "agent: {strict: true}\n" + "#".repeat((int) ConfigLoader.MAX_FILE_BYTES));
    e = failure(large, ",mode=observ");
    assertThat(e.strict()).isTrue();
    assertThat(e.problems()).hasSize(2);

    // a valid strict override decides alone, and the file is not read
    e = failure(strict, ",mode=observ,strict=false");
    assertThat(e.strict()).isFalse();
    assertThat(e.strictOrigin()).isEqualTo("agent argument");
    assertThat(e.problems()).hasSize(1);
    // an invalid one decides nothing: the file does
    e = failure(strict, ",mode=observ,strict=maybe");
    assertThat(e.strict()).isTrue();
    assertThat(e.problems()).extracting(ConfigProblem::path).containsExactly("mode", "strict");
  }

  /**
   * Invalid overrides without a file: no {@code agent.strict} exists to set (noFile), unless the
   * path itself is the problem (then the file could not be read).
   */
  @Test
  void anInvalidOverrideWithoutAFileSaysThereIsNoFile() {
    ConfigException e = resolveFailure("mode=observ", NO_PROPS, Map.of());
    assertThat(e.strict()).isFalse();
    assertThat(e.noFile()).isTrue();
    assertThat(e.strictUnread()).isFalse();
    assertThat(e.strictOrigin()).isNull();

    e = resolveFailure("strict=maybe", NO_PROPS, Map.of());
    assertThat(e.strict()).isFalse();
    assertThat(e.noFile()).isTrue();

    e = resolveFailure("config=a\u0000b.yml", NO_PROPS, Map.of());
    assertThat(e.problems().get(0).message()).startsWith("found an invalid path");
    assertThat(e.noFile()).isFalse();
    assertThat(e.strictUnread()).isTrue();
  }

  /**
   * An invalid strict override hides no valid one below it (r15's review of bd7cb835): a fleet-wide
   * {@code RETRY_AGENT_STRICT=false} or {@code -Dretryagent.strict=false} still keeps the JVM
   * running under an argument's {@code strict=maybe}, whatever the file says, as before that
   * commit.
   */
  @Test
  void anInvalidStrictOverrideLeavesTheDecisionToAValidOneBelowIt() throws Exception {
    Path strict = write("strict.yml", "agent: {strict: true}\n");
    String args = "config=" + strict + ",strict=maybe";

    ConfigException e = resolveFailure(args, NO_PROPS, Map.of("RETRY_AGENT_STRICT", "false"));
    assertThat(e.strict()).isFalse();
    assertThat(e.strictOrigin()).isEqualTo("environment variable RETRY_AGENT_STRICT");

    Properties props = new Properties();
    props.setProperty("retryagent.strict", "false");
    e = resolveFailure(args, props, Map.of("RETRY_AGENT_STRICT", "true"));
    assertThat(e.strict()).isFalse();
    assertThat(e.strictOrigin()).isEqualTo("system property retryagent.strict");

    // the property invalid too: the variable below both decides
    props.setProperty("retryagent.strict", "nope");
    e = resolveFailure("config=" + strict, props, Map.of("RETRY_AGENT_STRICT", "false"));
    assertThat(e.strict()).isFalse();

    // nothing valid below: the file decides
    e = resolveFailure(args, NO_PROPS, Map.of("RETRY_AGENT_STRICT", "sometimes"));
    assertThat(e.strict()).isTrue();
  }

  private static ConfigException resolveFailure(
      String args, Properties props, Map<String, String> env) {
    AtomicReference<ConfigException> caught = new AtomicReference<>();
    assertThatThrownBy(() -> ConfigSources.resolve(args, props, env))
        .as(args + " " + props + " " + env)
        .isInstanceOfSatisfying(ConfigException.class, caught::set);
    return caught.get();
  }

  @Test
  void aMissingFileIsAConfigException() throws Exception {
    Path missing = dir.resolve("missing.yml");
    ConfigSources s = ConfigSources.resolve(missing.toString(), NO_PROPS, Map.of());
    assertThatThrownBy(() -> s.load(Map.of()))
        .isInstanceOfSatisfying(
            ConfigException.class,
            e -> {
              assertThat(e.problems()).hasSize(1);
              assertThat(e.problems().get(0).source()).isEqualTo(missing.toString());
              assertThat(e.problems().get(0).message())
                  .startsWith("cannot read the file: NoSuchFileException");
            });
  }

  @Test
  void anUnknownArgumentKeyIsAnErrorWithASuggestion() {
    List<ConfigProblem> all = problems("conf=x.yml,mode=observe", NO_PROPS, Map.of());
    assertThat(all).hasSize(2);
    assertThat(all.get(0).message())
        .startsWith("read as key=value pairs (config, mode, strict) since no file named as");
    assertThat(all.get(1).source()).isEqualTo("agent argument");
    assertThat(all.get(1).path()).isEqualTo("conf");
    assertThat(all.get(1).message())
        .isEqualTo("unknown key conf; did you mean `config`? (allowed: config, mode, strict)");
  }

  /** A valid file, so that an invalid override is the only problem (the file is read too). */
  private String validFile() throws Exception {
    return write("valid.yml", "version: 1\n").toString();
  }

  @Test
  void aBogusModeOrStrictIsAnErrorNamingItsSource() throws Exception {
    assertThat(problems("config=" + validFile() + ",mode=bogus", NO_PROPS, Map.of()))
        .singleElement()
        .satisfies(
            p -> {
              assertThat(p.source()).isEqualTo("agent argument");
              assertThat(p.path()).isEqualTo("mode");
              assertThat(p.message())
                  .isEqualTo("found bogus; allowed one of enforce, observe, off");
              assertThat(p)
                  .hasToString(
                      "agent argument: mode: found bogus; allowed one of enforce, observe, off");
            });
    assertThat(problems(null, props("retryagent.strict", "yes"), Map.of()))
        .singleElement()
        .satisfies(
            p -> {
              assertThat(p.source()).isEqualTo("system property retryagent.strict");
              assertThat(p.message()).isEqualTo("found yes; allowed true or false");
            });
    assertThat(problems(null, NO_PROPS, Map.of("RETRY_AGENT_MODE", "loud")))
        .singleElement()
        .satisfies(p -> assertThat(p.source()).isEqualTo("environment variable RETRY_AGENT_MODE"));
  }

  @Test
  void aLowerSourceIsNotCheckedWhenAHigherOneWins() throws Exception {
    ConfigSources s =
        ConfigSources.resolve("mode=observe", props("retryagent.mode", "bogus"), Map.of());
    assertThat(s.mode()).isEqualTo(Mode.OBSERVE);
  }

  @Test
  void malformedPairsAreErrors() throws Exception {
    assertThat(problems("config=" + validFile() + ",observe", NO_PROPS, Map.of()))
        .last()
        .satisfies(
            p -> assertThat(p.message()).startsWith("found observe; allowed key=value pairs"));
    assertThat(problems("config=" + validFile() + ",config=b.yml", NO_PROPS, Map.of()))
        .singleElement()
        .satisfies(
            p ->
                assertThat(p.message())
                    .isEqualTo("found config a second time; give each key once"));
    assertThat(problems("config=,mode=off", NO_PROPS, Map.of()))
        .singleElement()
        .satisfies(
            p -> assertThat(p.message()).isEqualTo("found an empty value; allowed a file path"));
    assertThat(problems("config='a.yml", NO_PROPS, Map.of()))
        .anySatisfy(p -> assertThat(p.message()).contains("unclosed"));
  }

  @Test
  void reportsEveryArgumentProblemAtOnceAndKeepsAValidStrict() {
    AtomicReference<ConfigException> caught = new AtomicReference<>();
    assertThatThrownBy(
            () -> ConfigSources.resolve("mode=x,strict=true,colour=red", NO_PROPS, Map.of()))
        .isInstanceOfSatisfying(ConfigException.class, caught::set);
    assertThat(caught.get().problems())
        .extracting(ConfigProblem::path)
        .containsExactly("(argument)", "colour", "mode");
    assertThat(caught.get().strict()).isTrue();
  }

  @Test
  void describesItselfForTheStartUpLog() throws Exception {
    assertThat(ConfigSources.resolve("config=a.yml,mode=observe", NO_PROPS, Map.of()))
        .hasToString(
            "config=a.yml (agent argument), mode=observe (agent argument), strict=from the file");
  }

  @Test
  void loadsAUtf8FileWithABomAndRefusesOtherBytes() throws Exception {
    Path bom = dir.resolve("bom.yml");
    Files.write(bom, ("\uFEFFagent: {mode: observe}\n").getBytes(StandardCharsets.UTF_8));
    assertThat(ConfigLoader.load(bom, Map.of()).mode()).isEqualTo(Mode.OBSERVE);
    Path latin1 = dir.resolve("latin1.yml");
    Files.write(latin1, "# caf\u00e9\nversion: 1\n".getBytes(StandardCharsets.ISO_8859_1));
    assertThatThrownBy(() -> ConfigLoader.load(latin1, Map.of()))
        .hasMessageContaining("found bytes that are not UTF-8");
  }
}
