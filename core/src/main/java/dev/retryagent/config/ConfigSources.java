package dev.retryagent.config;

import dev.retryagent.policy.Mode;
import java.nio.file.InvalidPathException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Properties;

/**
 * Where the configuration comes from, and the overrides of {@code mode} and {@code strict}. Each
 * setting is taken from the first source that gives it: agent argument, then system property, then
 * environment variable; the file's own value comes next, and the built-in default last. Immutable;
 * the inputs are injected so that the agent passes the real ones and tests pass their own.
 *
 * <p>The agent argument is either a bare path ({@code =conf.yml}) or {@code key=value} pairs
 * separated by commas ({@code =config=conf.yml,mode=observe,strict=true}); a value may be quoted
 * with {@code '} or {@code "} to hold a comma.
 */
public final class ConfigSources {
  public static final String ARG_CONFIG = "config";
  public static final String ARG_MODE = "mode";
  public static final String ARG_STRICT = "strict";
  public static final String PROPERTY_CONFIG = "retryagent.config";
  public static final String PROPERTY_MODE = "retryagent.mode";
  public static final String PROPERTY_STRICT = "retryagent.strict";
  public static final String ENV_CONFIG = "RETRY_AGENT_CONFIG";
  public static final String ENV_MODE = "RETRY_AGENT_MODE";
  public static final String ENV_STRICT = "RETRY_AGENT_STRICT";

  /** Origin of a setting no source gave. */
  public static final String NOWHERE = "none";

  static final String AGENT_ARGUMENT = "agent argument";

  private final Path configFile;
  private final String configOrigin;
  private final Mode mode;
  private final String modeOrigin;
  private final Boolean strict;
  private final String strictOrigin;

  private ConfigSources(
      Path configFile,
      String configOrigin,
      Mode mode,
      String modeOrigin,
      Boolean strict,
      String strictOrigin) {
    this.configFile = configFile;
    this.configOrigin = configOrigin;
    this.mode = mode;
    this.modeOrigin = modeOrigin;
    this.strict = strict;
    this.strictOrigin = strictOrigin;
  }

  /**
   * Resolves the sources. Blank property and variable values count as unset.
   *
   * @param agentArgs the {@code premain} argument, possibly null or empty
   * @param sysProps system properties (the agent passes System.getProperties())
   * @param env environment (the agent passes System.getenv())
   * @throws ConfigException for a malformed argument or an invalid mode/strict value, naming its
   *     source; {@link ConfigException#strict()} is the strict override when that one was valid,
   *     else the named file's own {@code agent.strict} (a file that can be read is then loaded with
   *     {@code env}, and its problems follow the override's)
   */
  public static ConfigSources resolve(
      String agentArgs, Properties sysProps, Map<String, String> env) throws ConfigException {
    Objects.requireNonNull(sysProps, "sysProps");
    Objects.requireNonNull(env, "env");
    List<ConfigProblem> problems = new ArrayList<>();
    Map<String, String> args = AgentArguments.parse(agentArgs, problems);

    Raw config = pick(args, ARG_CONFIG, sysProps, PROPERTY_CONFIG, env, ENV_CONFIG);
    Path file = null;
    if (config != null) {
      try {
        file = Path.of(config.value);
      } catch (InvalidPathException e) {
        problems.add(config.problem("found an invalid path " + ConfigProblem.shown(config.value)));
      }
    }

    Raw modeRaw = pick(args, ARG_MODE, sysProps, PROPERTY_MODE, env, ENV_MODE);
    Mode mode = null;
    if (modeRaw != null) {
      mode = Mode.fromConfigName(modeRaw.value);
      if (mode == null) {
        problems.add(
            modeRaw.problem(
                "found "
                    + ConfigProblem.shown(modeRaw.value)
                    + "; allowed one of enforce, observe, off"));
      }
    }

    Raw strictRaw = pick(args, ARG_STRICT, sysProps, PROPERTY_STRICT, env, ENV_STRICT);
    Boolean strict = null;
    if (strictRaw != null) {
      if (strictRaw.value.equalsIgnoreCase("true")) {
        strict = Boolean.TRUE;
      } else if (strictRaw.value.equalsIgnoreCase("false")) {
        strict = Boolean.FALSE;
      } else {
        problems.add(
            strictRaw.problem(
                "found " + ConfigProblem.shown(strictRaw.value) + "; allowed true or false"));
      }
    }

    if (!problems.isEmpty()) {
      ConfigProblem alsoAFile = AgentArguments.alsoAFile(agentArgs);
      if (alsoAFile != null) {
        problems.add(0, alsoAFile);
      }
      if (strict != null) {
        throw new ConfigException(problems, strict, false, strictRaw.origin);
      }
      // An invalid strict override (strict=maybe) hides none below it: a valid one there
      // (RETRY_AGENT_STRICT=false, set for a whole fleet, say) still decides, before the file.
      Raw below = strictRaw == null ? null : validStrictBelow(strictRaw, sysProps, env);
      if (below != null) {
        throw new ConfigException(
            problems, below.value.equalsIgnoreCase("true"), false, below.origin);
      }
      if (file == null) {
        // No file named: no agent.strict anywhere. A path that is no path: it could not be read.
        throw config == null
            ? ConfigException.withoutFile(problems)
            : new ConfigException(problems, false, true, null);
      }
      throw withTheFilesStrict(problems, file, env);
    }
    return new ConfigSources(
        file,
        config == null ? NOWHERE : config.origin,
        mode,
        modeRaw == null ? NOWHERE : modeRaw.origin,
        strict,
        strictRaw == null ? NOWHERE : strictRaw.origin);
  }

  /**
   * The override's problems, with the strictness of the file they name: no valid override said
   * whether to stop, so the file's own {@code agent.strict} does, as it will once the override is
   * fixed.
   */
  private static ConfigException withTheFilesStrict(
      List<ConfigProblem> problems, Path file, Map<String, String> env) {
    // A file that can be read is loaded for it, and its problems are reported too. One that cannot
    // be read is reported as well: it is why its agent.strict is not known (the start-up line says
    // so), and the next start would report it anyway.
    byte[] content;
    try {
      content = ConfigLoader.read(file, env);
    } catch (ConfigException unreadable) {
      // missing, a directory..., or too large (yet read up to its agent.strict)
      problems.addAll(unreadable.problems());
      return new ConfigException(problems, unreadable.strict(), unreadable.strictUnread(), null);
    }
    boolean fileStrict;
    boolean unread = false;
    try {
      fileStrict = ConfigLoader.parse(content, file.toString(), env).strict();
    } catch (ConfigException e) {
      problems.addAll(e.problems());
      fileStrict = e.strict();
      unread = e.strictUnread();
    }
    return new ConfigException(problems, fileStrict, unread, null);
  }

  /** The file to load, or null: no file named anywhere means the built-in defaults. */
  public Path configFile() {
    return configFile;
  }

  /**
   * Where {@link #configFile()} was named: {@code agent argument}, {@code system property
   * retryagent.config}, {@code environment variable RETRY_AGENT_CONFIG}, or {@value #NOWHERE}.
   */
  public String configOrigin() {
    return configOrigin;
  }

  /** The mode override, or null to keep the file's {@code agent.mode}. */
  public Mode mode() {
    return mode;
  }

  public String modeOrigin() {
    return modeOrigin;
  }

  /** The strict override, or null to keep the file's {@code agent.strict}. */
  public Boolean strict() {
    return strict;
  }

  public String strictOrigin() {
    return strictOrigin;
  }

  /**
   * Loads the effective configuration: the file (or the built-in defaults when none was named) with
   * the overrides applied.
   *
   * @param env the environment for {@code ${NAME}} substitution in the file
   * @throws ConfigException when the file is unreadable or invalid; its {@link
   *     ConfigException#strict()} honours the strict override
   */
  public AgentConfig load(Map<String, String> env) throws ConfigException {
    return load(read(env), env);
  }

  /**
   * {@link #read(Map)} with the process's environment: kept for callers of the library written
   * before the environment was asked for.
   *
   * @throws ConfigException as {@link #read(Map)}
   */
  public byte[] read() throws ConfigException {
    return read(System.getenv());
  }

  /**
   * The bytes of the file, read as {@link ConfigLoader#read(Path)} reads them, or null when no file
   * was named: what {@link #load(byte[], Map)} parses, and what the reload watcher then compares
   * the file with (an edit made after this read is one to apply, however soon after).
   *
   * @param env the environment for {@code ${NAME}} substitution, where a file too large to load is
   *     read up to its own {@code agent.strict}
   * @throws ConfigException when the file is unreadable; its {@link ConfigException#strict()}
   *     honours the strict override
   */
  public byte[] read(Map<String, String> env) throws ConfigException {
    if (configFile == null) {
      return null;
    }
    try {
      return ConfigLoader.read(configFile, env);
    } catch (ConfigException e) {
      throw strict == null ? e : e.withStrict(strict, strictOrigin);
    }
  }

  /**
   * As {@link #load(Map)}, from the file's bytes as {@link #read} returned them (null: no file, the
   * built-in defaults).
   */
  public AgentConfig load(byte[] content, Map<String, String> env) throws ConfigException {
    if (content == null) {
      return apply(AgentConfig.defaults());
    }
    try {
      return apply(ConfigLoader.parse(content, configFile.toString(), env));
    } catch (ConfigException e) {
      throw strict == null ? e : e.withStrict(strict, strictOrigin);
    }
  }

  /** Applies the overrides to a loaded configuration (also to each reload). */
  public AgentConfig apply(AgentConfig config) {
    AgentConfig out = config;
    if (mode != null) {
      out = out.withMode(mode);
    }
    if (strict != null) {
      out = out.withStrict(strict);
    }
    return out;
  }

  /** One line for the start-up log: which file, and where each override came from. */
  @Override
  public String toString() {
    return "config="
        + (configFile == null ? AgentConfig.BUILT_IN : configFile + " (" + configOrigin + ")")
        + ", mode="
        + (mode == null ? "from the file" : mode.configName() + " (" + modeOrigin + ")")
        + ", strict="
        + (strict == null ? "from the file" : strict + " (" + strictOrigin + ")");
  }

  // ---------------------------------------------------------------- parsing

  /** A value and where it came from. */
  private static final class Raw {
    final String value;
    final String origin;
    final String key;

    Raw(String value, String origin, String key) {
      this.value = value;
      this.origin = origin;
      this.key = key;
    }

    ConfigProblem problem(String message) {
      return new ConfigProblem(origin, 0, 0, key, message);
    }
  }

  /**
   * The first valid ({@code true} or {@code false}) strict override of a lower precedence than the
   * invalid {@code above}: the system property below the agent argument, the environment variable
   * below both; null when there is none.
   */
  private static Raw validStrictBelow(Raw above, Properties sysProps, Map<String, String> env) {
    // pick() without the argument (and without the property below the property): the first
    // non-blank source below; if that one is invalid too, the variable alone.
    Raw r =
        above.origin.equals(AGENT_ARGUMENT)
            ? pick(Map.of(), ARG_STRICT, sysProps, PROPERTY_STRICT, env, ENV_STRICT)
            : null;
    if ((r == null || !isBoolean(r.value)) && !above.key.equals(ENV_STRICT)) {
      r = pick(Map.of(), ARG_STRICT, new Properties(), PROPERTY_STRICT, env, ENV_STRICT);
    }
    return r != null && isBoolean(r.value) ? r : null;
  }

  private static boolean isBoolean(String value) {
    return value.equalsIgnoreCase("true") || value.equalsIgnoreCase("false");
  }

  private static Raw pick(
      Map<String, String> args,
      String argKey,
      Properties sysProps,
      String property,
      Map<String, String> env,
      String variable) {
    String v = args.get(argKey);
    if (v != null) {
      return new Raw(v, AGENT_ARGUMENT, argKey);
    }
    v = sysProps.getProperty(property);
    if (v != null && !v.isBlank()) {
      return new Raw(v.trim(), "system property " + property, property);
    }
    v = env.get(variable);
    if (v != null && !v.isBlank()) {
      return new Raw(v.trim(), "environment variable " + variable, variable);
    }
    return null;
  }
}
