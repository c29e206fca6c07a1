package dev.retryagent.config;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/**
 * A configuration that cannot be used, with every problem found in it. Thrown instead of returning
 * a partly applied configuration: a file is applied whole or not at all. Made by the configuration
 * classes only; {@link #problems()} is never empty and {@link #getMessage()} lists them.
 */
public final class ConfigException extends Exception {
  /** The message lists at most this many problems; {@link #problems()} has them all. */
  static final int MAX_MESSAGE_LINES = 100;

  private final List<ConfigProblem> problems;
  private final boolean strict;
  private final boolean strictUnread;
  private final String strictOrigin;
  private final boolean noFile;

  /**
   * @param problems at least one
   */
  ConfigException(List<ConfigProblem> problems) {
    this(problems, false);
  }

  /**
   * @param problems at least one
   * @param strict whether this failure should stop the JVM (see {@link #strict()})
   */
  ConfigException(List<ConfigProblem> problems, boolean strict) {
    this(problems, strict, false, null);
  }

  /**
   * @param problems at least one
   * @param strict whether this failure should stop the JVM (see {@link #strict()})
   * @param strictUnread see {@link #strictUnread()}
   * @param strictOrigin see {@link #strictOrigin()}
   */
  ConfigException(
      List<ConfigProblem> problems, boolean strict, boolean strictUnread, String strictOrigin) {
    this(problems, strict, strictUnread, strictOrigin, false);
  }

  private ConfigException(
      List<ConfigProblem> problems,
      boolean strict,
      boolean strictUnread,
      String strictOrigin,
      boolean noFile) {
    super(message(problems));
    this.problems = Collections.unmodifiableList(new ArrayList<>(problems));
    this.strict = strict;
    this.strictUnread = strictUnread;
    this.strictOrigin = strictOrigin;
    this.noFile = noFile;
  }

  /**
   * Invalid overrides where no file was named (the built-in defaults): there is no {@code
   * agent.strict}, and {@link #strict()} is false, as no valid override said otherwise.
   */
  static ConfigException withoutFile(List<ConfigProblem> problems) {
    return new ConfigException(problems, false, false, null, true);
  }

  private static String message(List<ConfigProblem> problems) {
    if (problems.isEmpty()) {
      throw new IllegalArgumentException("a ConfigException needs at least one problem");
    }
    StringBuilder out = new StringBuilder();
    int shown = Math.min(problems.size(), MAX_MESSAGE_LINES);
    for (int i = 0; i < shown; i++) {
      if (i > 0) {
        out.append('\n');
      }
      out.append(problems.get(i));
    }
    if (problems.size() > shown) {
      out.append("\n... and ").append(problems.size() - shown).append(" more problems");
    }
    return out.toString();
  }

  /** Every problem, in file order; never empty. */
  public List<ConfigProblem> problems() {
    return problems;
  }

  /**
   * True when the configuration asked that an invalid configuration stop the JVM: {@code
   * agent.strict: true} in the file, when that key itself could be read (also in a file that is not
   * YAML further on: {@link StrictProbe}), or a {@code strict} override from the agent argument,
   * system property or environment, which wins.
   */
  public boolean strict() {
    return strict;
  }

  /**
   * True when the file's own {@code agent.strict} could not be read: the file could not be read, or
   * its text is not YAML (or was cut at a size limit) before that key. Then {@link #strict()} is
   * false unless an override ({@link #strictOrigin()}) says otherwise.
   */
  public boolean strictUnread() {
    return strictUnread;
  }

  /**
   * Where the {@code strict} override that decided {@link #strict()} came from ({@code agent
   * argument}, {@code system property retryagent.strict}, {@code environment variable
   * RETRY_AGENT_STRICT}), or null when the file's own {@code agent.strict} (or its default) did.
   */
  public String strictOrigin() {
    return strictOrigin;
  }

  /**
   * True when no configuration file was named anywhere: the problems are the overrides', and only a
   * {@code strict} override could have stopped the JVM.
   */
  public boolean noFile() {
    return noFile;
  }

  /** The same problems with {@link #strict()} decided by the override from {@code origin}. */
  ConfigException withStrict(boolean strict, String origin) {
    return new ConfigException(problems, strict, strictUnread, origin, noFile);
  }
}
