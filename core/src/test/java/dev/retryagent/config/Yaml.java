package dev.retryagent.config;

import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicReference;

/**
 * Test helpers: YAML from lines (the tests compile for Java 11: no text blocks), load, problems.
 */
final class Yaml {
  static final String SOURCE = "test.yml";

  private Yaml() {}

  static String lines(String... lines) {
    return String.join("\n", lines) + "\n";
  }

  static AgentConfig load(String... lines) throws ConfigException {
    return ConfigLoader.parse(lines(lines), SOURCE, Map.of());
  }

  static AgentConfig loadWithEnv(Map<String, String> env, String... lines) throws ConfigException {
    return ConfigLoader.parse(lines(lines), SOURCE, env);
  }

  /** The problems of a file that must fail. */
  static List<ConfigProblem> problems(String... lines) {
    return problemsWithEnv(Map.of(), lines);
  }

  static List<ConfigProblem> problemsWithEnv(Map<String, String> env, String... lines) {
    AtomicReference<ConfigException> caught = new AtomicReference<>();
    assertThatThrownBy(() -> ConfigLoader.parse(lines(lines), SOURCE, env))
        .isInstanceOfSatisfying(ConfigException.class, caught::set);
    return caught.get().problems();
  }

  /** The only problem of a file that must fail with exactly one. */
  static ConfigProblem problem(String... lines) {
    return problemWithEnv(Map.of(), lines);
  }

  /** {@link #problem}, with {@code env} for {@code ${NAME}} substitution. */
  static ConfigProblem problemWithEnv(Map<String, String> env, String... lines) {
    List<ConfigProblem> all = problemsWithEnv(env, lines);
    if (all.size() != 1) {
      throw new AssertionError("expected one problem, got " + all);
    }
    return all.get(0);
  }
}
