package dev.retryagent.config;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retryagent.policy.CircuitBreakerPolicy;
import dev.retryagent.policy.Policy;
import dev.retryagent.policy.RetryPolicy;
import dev.retryagent.policy.TransportFailure;
import dev.retryagent.policy.UnsafeMethods;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/** The files in config/: the reference equals the defaults and names every key; all load. */
class ConfigFilesTest {

  static List<Path> configFiles() {
    List<Path> files = ConfigFiles.yamlFiles();
    assertThat(files)
        .extracting(p -> p.getFileName().toString())
        .contains("reference.yml", "llm-provider.yml", "payments.yml");
    return files;
  }

  @ParameterizedTest
  @MethodSource("configFiles")
  void everyYamlFileInConfigLoads(Path file) throws Exception {
    AgentConfig config = ConfigLoader.load(file, Map.of());
    assertThat(config.source()).isEqualTo(file.toString());
  }

  @Test
  void theReferenceFileLoadsToExactlyTheBuiltInDefaults() throws Exception {
    assertThat(ConfigLoader.load(ConfigFiles.REFERENCE, Map.of()))
        .isEqualTo(AgentConfig.defaults());
  }

  @Test
  void theReferenceFileWritesEveryKeyOfTheFileAndDefaultsWithItsDocumentedDefault() {
    Map<String, String> written = new LinkedHashMap<>();
    YamlNode root =
        YamlComposer.compose(ConfigFiles.read(ConfigFiles.REFERENCE), new FileProblems("ref"));
    collect(root, "", written);
    Map<String, String> expected = documentedDefaults();
    assertThat(written).containsAllEntriesOf(expected);
    written.keySet().removeAll(expected.keySet());
    assertThat(written).containsOnlyKeys("routes");
  }

  @Test
  void theReferenceFilesCommentedRouteExampleUsesEveryRouteKeyAndLoads() throws Exception {
    String text = ConfigFiles.read(ConfigFiles.REFERENCE);
    String example =
        text.substring(text.indexOf("# routes:"))
            .lines()
            .map(l -> l.startsWith("# ") ? l.substring(2) : l.startsWith("#") ? l.substring(1) : l)
            .collect(Collectors.joining("\n"));
    AgentConfig config = ConfigLoader.parse(example, "reference example", Map.of());
    assertThat(config.routes()).extracting(Route::name).containsExactly("payments", "auth");
    Map<String, String> written = new LinkedHashMap<>();
    collect(YamlComposer.compose(example, new FileProblems("x")), "", written);
    List<String> routeKeys = new ArrayList<>();
    for (String key : ConfigSchema.ROUTE.leaves().keySet()) {
      if (key.equals("name") || key.startsWith("match.")) {
        routeKeys.add("routes[]." + key);
      }
    }
    assertThat(written.keySet()).containsAll(routeKeys);
  }

  @Test
  void aFileOfEveryDocumentedDefaultIsTheBuiltInDefaults() throws Exception {
    StringBuilder yaml = new StringBuilder();
    for (Map.Entry<String, String> e : documentedDefaults().entrySet()) {
      String[] parts = e.getKey().split("\\.");
      for (int i = 0; i < parts.length; i++) {
        yaml.append("  ".repeat(i)).append(parts[i]).append(':');
        yaml.append(i == parts.length - 1 ? " " + e.getValue() : "").append('\n');
      }
    }
    // Each leaf is written with its whole chain of keys, so each top-level chunk is one leaf.
    for (String doc : yaml.toString().split("\n(?=\\S)")) {
      assertThat(ConfigLoader.parse(doc, "documented defaults", Map.of()))
          .as(doc)
          .isEqualTo(AgentConfig.defaults());
    }
  }

  @Test
  void theLlmProviderFileHonoursRetryAfterAndKeepsRetriesBudgeted() throws Exception {
    AgentConfig c = ConfigLoader.load(ConfigFiles.CONFIG_DIR.resolve("llm-provider.yml"), Map.of());
    Policy llm = c.resolve("POST", "api.openai.com", 443, "/v1/chat/completions");
    assertThat(llm.routeName()).isEqualTo("llm");
    assertThat(llm.retry().retryOnStatuses().contains(429)).isTrue();
    assertThat(llm.retry().retryOnStatuses().contains(500)).isFalse();
    assertThat(llm.retry().retryOnTransport()).containsExactly(TransportFailure.CONNECT);
    assertThat(llm.retry().retryAfterEnabled()).isTrue();
    assertThat(llm.retry().retryAfterMax()).isEqualTo(Duration.ofSeconds(60));
    assertThat(llm.budget().enabled()).isTrue();
    assertThat(llm.budget().ratio()).isEqualTo(0.1);
    assertThat(llm.circuitBreaker().failOnStatuses().contains(429)).isFalse();
    assertThat(llm.circuitBreaker().windowType()).isEqualTo(CircuitBreakerPolicy.WindowType.TIME);
    assertThat(llm.rateLimit().enabled()).isTrue();
    assertThat(llm.rateLimit().pauseOn429()).isTrue();
    assertThat(llm.rateLimit().perSecond()).isEqualTo(5.0);
    assertThat(c.resolve("GET", "api.openai.com", 443, "/v1/models").routeName())
        .isEqualTo("default");
  }

  @Test
  void theLlmProviderFileTakesItsHostAndRateFromTheEnvironment() throws Exception {
    AgentConfig c =
        ConfigLoader.load(
            ConfigFiles.CONFIG_DIR.resolve("llm-provider.yml"),
            Map.of("LLM_API_HOST", "llm.internal", "LLM_REQUESTS_PER_SECOND", "0.5"));
    Policy llm = c.resolve("POST", "llm.internal", 443, "/v1/messages");
    assertThat(llm.routeName()).isEqualTo("llm");
    assertThat(llm.rateLimit().perSecond()).isEqualTo(0.5);
  }

  @Test
  void thePaymentsFileRetriesPostOnlyWithAnIdempotencyKey() throws Exception {
    AgentConfig c = ConfigLoader.load(ConfigFiles.CONFIG_DIR.resolve("payments.yml"), Map.of());
    assertThat(c.strict()).isTrue();
    assertThat(c.deadLetterPath()).isNull();
    Policy writes = c.resolve("POST", "api.payments.example.com", 443, "/v1/charges");
    assertThat(writes.routeName()).isEqualTo("payments-writes");
    assertThat(writes.retry().isIdempotent("POST")).isFalse();
    assertThat(writes.retry().unsafeMethods()).isEqualTo(UnsafeMethods.IF_IDEMPOTENCY_KEY);
    assertThat(writes.retry().idempotencyKeyHeader()).isEqualTo("Idempotency-Key");
    assertThat(writes.retry().perAttemptTimeout()).isEqualTo(Duration.ofSeconds(8));
    assertThat(writes.retry().attemptHeader()).isEqualTo("X-Retry-Attempt");
    Policy reads = c.resolve("GET", "eu.pay.internal", 8443, "/v1/charges/ch_1");
    assertThat(reads.routeName()).isEqualTo("payments-reads");
    assertThat(reads.retry().maxAttempts()).isEqualTo(4);
    // Its deadline (10s) does not pull retryAfter.max down: the contract's default bounds its
    // pauseOn429 pause; a longer Retry-After still could not start before the deadline.
    assertThat(reads.retry().retryAfterMax()).isEqualTo(RetryPolicy.DEFAULT_RETRY_AFTER_MAX);
    assertThat(c.resolve("POST", "api.payments.example.com", 443, "/v1/customers").routeName())
        .isEqualTo("default");
    AgentConfig withDeadLetters =
        ConfigLoader.load(
            ConfigFiles.CONFIG_DIR.resolve("payments.yml"),
            Map.of("PAYMENTS_DEAD_LETTER", "/var/log/payments-dead.jsonl"));
    assertThat(withDeadLetters.deadLetterPath()).isEqualTo("/var/log/payments-dead.jsonl");
  }

  // ---------------------------------------------------------------- helpers

  /**
   * Path in a file ({@code defaults.retry.deadline}) -> default text from docs/configuration.md,
   * for every key outside routes.
   */
  private static Map<String, String> documentedDefaults() {
    Map<String, ConfigDocument.Row> documented = ConfigDocument.byKey();
    Map<String, String> out = new LinkedHashMap<>();
    for (String path : ConfigSchema.ROOT.leaves().keySet()) {
      if (!path.startsWith("routes[]")) {
        ConfigDocument.Row row = documented.get(ConfigDocument.keyOf(path));
        assertThat(row).as(path + " in docs/configuration.md").isNotNull();
        out.put(path, row.defaultText);
      }
    }
    return out;
  }

  /** Key path -> value text as written; lists as [a, b]; routes items as routes[]. */
  private static void collect(YamlNode node, String prefix, Map<String, String> out) {
    for (YamlNode.Entry t : ((YamlNode.Mapping) node).getValue()) {
      String key = prefix + ((YamlNode.Scalar) t.getKeyNode()).getValue();
      YamlNode value = t.getValueNode();
      if (value instanceof YamlNode.Mapping) {
        collect(value, key + ".", out);
      } else if (value instanceof YamlNode.Sequence) {
        List<YamlNode> items = ((YamlNode.Sequence) value).getValue();
        if (!items.isEmpty() && items.get(0) instanceof YamlNode.Mapping) {
          for (YamlNode item : items) {
            collect(item, key + "[].", out);
          }
        } else {
          List<String> texts = new ArrayList<>();
          for (YamlNode item : items) {
            texts.add(((YamlNode.Scalar) item).getValue());
          }
          out.put(key, "[" + String.join(", ", texts) + "]");
        }
      } else {
        out.put(key, ((YamlNode.Scalar) value).getValue());
      }
    }
  }
}
