package dev.retryagent.config;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retryagent.engine.Classifier;
import dev.retryagent.engine.Outcome;
import dev.retryagent.policy.RetryPolicy;
import java.io.IOException;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Nothing in a configuration file makes the agent instantiate a class or load code (issue 14,
 * Security): tags of any kind are refused, and {@code retryOn.exceptions} names are compared with
 * the names of an exception's classes, never loaded.
 */
class YamlRunsNoCodeTest {
  private static final String TRIPWIRE = "dev.retryagent.config.TripwireException";

  @Test
  void exceptionNamesAreComparedNeverLoaded() throws Exception {
    AgentConfig config =
        ConfigLoader.parse(
            Yaml.lines(
                "defaults: {retry: {retryOn: {exceptions: [" + TRIPWIRE + ", com.nowhere.Gone]}}}",
                "routes:",
                "  - name: r",
                "    match: {hosts: [a.example]}",
                "    retry: {retryOn: {exceptions: [" + TRIPWIRE + "]}}"),
            "t.yml",
            Map.of());
    RetryPolicy retry = config.resolve("GET", "a.example", 443, "/").retry();
    assertThat(retry.retryOnExceptions()).contains(TRIPWIRE);
    assertThat(config.defaultPolicy().retry().retryOnExceptions()).contains("com.nowhere.Gone");

    // Classifying exceptions of other classes walks their class chains by name only.
    assertThat(
            Classifier.isRetryableException(retry, Outcome.OTHER_EXCEPTION, new IOException("x")))
        .isFalse();
    assertThat(
            Classifier.isRetryableException(
                retry, Outcome.OTHER_EXCEPTION, new IllegalStateException(new IOException())))
        .isFalse();

    assertThat(TripwireException.Tripwire.TRIPPED).as("the named class was initialised").isFalse();
  }

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
