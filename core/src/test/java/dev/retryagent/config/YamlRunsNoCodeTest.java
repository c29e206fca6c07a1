package dev.retryagent.config;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.Map;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Nothing in a configuration file makes the agent instantiate a class or load code (issue 14,
 * Security): tags of any kind are refused. ({@code retryOn.exceptions} names are compared with the
 * names of an exception's classes, never loaded: {@code engine.ExceptionNamesTest}.)
 */
class YamlRunsNoCodeTest {
  @ParameterizedTest
  @ValueSource(
      strings = {
        "agent: !!javax.script.ScriptEngineManager []",
        "agent: !<tag:yaml.org,2002:java.net.URL> http://127.0.0.1/",
        "agent: !local {mode: observe}",
        "agent: {mode: !!python/object:os.system observe}",
        "defaults: {retry: {retryOn: {exceptions: !!set {a: null}}}}",
        "defaults: {retry: {attemptHeader: !!binary eA==}}",
        "!!java.io.File /tmp: 1",
        "%TAG !j! tag:java.lang,2000:\n---\nagent: !j!Runtime {}",
      })
  void everyTagIsRefusedWithALocatedProblem(String yaml) {
    List<ConfigProblem> problems = Yaml.problemsWithEnv(Map.of(), yaml);
    assertThat(problems).isNotEmpty();
    assertThat(problems).allSatisfy(p -> assertThat(p.line()).isPositive());
  }
}
