package dev.retryagent.config;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.networknt.schema.Error;
import com.networknt.schema.InputFormat;
import com.networknt.schema.SchemaRegistry;
import com.networknt.schema.SpecificationVersion;
import dev.retryagent.config.ConfigSchema.Leaf;
import dev.retryagent.config.ValueType.EnumType;
import dev.retryagent.config.ValueType.ListType;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.ValueSource;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.dataformat.yaml.YAMLMapper;

/**
 * config/retry-agent.schema.json, the loader and docs/configuration.md agree: the same keys and
 * enums as the loader, the documented defaults, and the files in config/ pass both. The walk below
 * reads the committed file, not the generator.
 */
class JsonSchemaAgreementTest {
  private static JsonNode json;
  private static com.networknt.schema.Schema validator;

  @BeforeAll
  static void readSchema() {
    String text = ConfigFiles.read(JsonSchemaGenerator.FILE);
    json = JsonMapper.builder().build().readTree(text);
    validator =
        SchemaRegistry.withDefaultDialect(SpecificationVersion.DRAFT_2020_12).getSchema(text);
  }

  @Test
  void theCommittedSchemaIsTheGeneratedOne() {
    assertThat(ConfigFiles.read(JsonSchemaGenerator.FILE))
        .as("config/retry-agent.schema.json is stale: run JsonSchemaGenerator.main")
        .isEqualTo(JsonSchemaGenerator.text());
  }

  @Test
  void everyLoaderKeyIsInTheSchemaAndEverySchemaKeyIsInTheLoader() {
    Map<String, JsonNode> jsonLeaves = new LinkedHashMap<>();
    collect(json, "", jsonLeaves);
    assertThat(new TreeSet<>(jsonLeaves.keySet()))
        .isEqualTo(new TreeSet<>(ConfigSchema.ROOT.leaves().keySet()));
  }

  @Test
  void enumsAgree() {
    Map<String, JsonNode> jsonLeaves = new LinkedHashMap<>();
    collect(json, "", jsonLeaves);
    int checked = 0;
    for (Map.Entry<String, Leaf> e : ConfigSchema.ROOT.leaves().entrySet()) {
      ValueType type = e.getValue().type;
      if (type instanceof ListType) {
        type = ((ListType) type).element;
      }
      List<String> jsonEnum = enumIn(jsonLeaves.get(e.getKey()));
      if (type instanceof EnumType) {
        assertThat(jsonEnum).as(e.getKey()).isEqualTo(((EnumType) type).names);
        checked++;
      } else {
        assertThat(jsonEnum).as(e.getKey()).isNull();
      }
    }
    assertThat(checked).isGreaterThanOrEqualTo(7);
  }

  @Test
  void defaultsAreTheDocumentedOnes() {
    Map<String, JsonNode> jsonLeaves = new LinkedHashMap<>();
    collect(json, "", jsonLeaves);
    Map<String, ConfigDocument.Row> documented = ConfigDocument.byKey();
    YAMLMapper yaml = YAMLMapper.builder().build();
    for (String path : ConfigSchema.ROOT.leaves().keySet()) {
      JsonNode schemaDefault = jsonLeaves.get(path).get("default");
      String defaultText = documented.get(ConfigDocument.keyOf(path)).defaultText;
      if (defaultText == null) {
        assertThat(schemaDefault).as(path).isNull();
      } else {
        assertThat(schemaDefault).as(path).isEqualTo(yaml.readTree(defaultText));
      }
    }
  }

  static List<Path> configFiles() {
    return ConfigFiles.yamlFiles();
  }

  @ParameterizedTest
  @MethodSource("configFiles")
  void everyConfigFileIsValidAgainstTheSchema(Path file) {
    List<Error> errors = validator.validate(ConfigFiles.read(file), InputFormat.YAML);
    assertThat(errors).as(file.toString()).isEmpty();
  }

  @ParameterizedTest
  @ValueSource(
      strings = {
        "retyr: {}",
        "version: 2",
        "agent: {mode: bogus}",
        "defaults: {retry: {maxAttempts: 0}}",
        "defaults: {retry: {maxAttempts: 11}}",
        "defaults: {retry: {deadline: 30}}",
        "defaults: {retry: {backoff: {jitter: ful}}}",
        "defaults: {retry: {retryOn: {statuses: [42]}}}",
        "defaults: {retry: {retryOn: {transport: [dns]}}}",
        "defaults: {retry: {replayBodyLimit: 64KB}}",
        "defaults: {circuitBreaker: {failureRateThreshold: 2}}",
        "defaults: {circuitBreaker: {window: {type: sliding}}}",
        "defaults: {rateLimit: {perSecond: 0}}",
        "agent: {metrics: {prometheus: {port: 0}}}",
        "agent: {deadLetter: {maxBytes: 0}}",
        "routes: [{name: \"bad\\tname\"}]",
        "routes: [{name: \"bad\\u2028name\"}]",
        "routes: [{name: \"\\u00a0bad\"}]",
        "routes: [{name: '12345678901234567890123456789012345678901234567890123456789012345'}]",
        "routes: [{name: x, match: {methods: POST}}]",
        "routes: [{name: x, match: {paths: [v1]}}]",
        "routes: {name: x}",
        "defaults: {retry: {deadline: P}}",
        "defaults: {retry: {deadline: PT}}",
        "defaults: {retry: {deadline: P1DT}}",
        "defaults: {retry: {backoff: {jitter: fulll}}}",
        "agent: {strict: yes}",
        "routes: [{name: x, match: {hosts: []}}]",
        "routes: [{name: x, match: {methods: []}}]"
      })
  void aFileTheLoaderRejectsTheSchemaRejectsToo(String yaml) {
    assertThatThrownBy(() -> ConfigLoader.parse(yaml, "t.yml", Map.of()))
        .isInstanceOf(ConfigException.class);
    assertThat(validator.validate(yaml, InputFormat.YAML)).as(yaml).isNotEmpty();
  }

  /**
   * Values written as docs/configuration.md allows ("Enumerations and booleans are read in any
   * case"; none, null, ~ or an empty value where a key accepts none): an editor using the schema
   * must not mark them as errors.
   */
  @ParameterizedTest
  @ValueSource(
      strings = {
        "agent: {mode: OFF}",
        "agent: {mode: Observe}",
        "agent: {strict: True}",
        "agent: {strict: 'FALSE'}",
        "agent: {log: {level: DEBUG}}",
        "defaults: {retry: {enabled: 'true'}}",
        "defaults: {retry: {backoff: {jitter: Full}}}",
        "defaults: {retry: {unsafeMethods: IF-NOT-SENT}}",
        "defaults: {retry: {retryOn: {transport: [Connect, RESET]}}}",
        "defaults: {retry: {perAttemptTimeout: NONE}}",
        "defaults: {retry: {perAttemptTimeout: ''}}",
        "defaults: {retry: {attemptHeader: Null}}",
        "defaults: {retry: {deadline: p0dT2h}}",
        "defaults: {circuitBreaker: {window: {type: TIME, size: 30s}}}",
        "agent: {deadLetter: {path: ''}}",
        "routes: [{name: x}]",
        "routes: [{name: 'Payments API'}]",
        "routes: [{name: 'openai:chat'}]",
        "routes: [{name: payments/v2}]",
        "routes: [{name: '_caf\u00e9 \"q\" \\\\ ,=*?%{}'}]",
        "routes: [{name: \"a\\u00a0b\"}]"
      })
  void aFileTheLoaderAcceptsTheSchemaAcceptsToo(String yaml) throws ConfigException {
    ConfigLoader.parse(yaml, "t.yml", Map.of());
    assertThat(validator.validate(yaml, InputFormat.YAML)).as(yaml).isEmpty();
  }

  // ---------------------------------------------------------------- walking the JSON schema

  private static JsonNode resolve(JsonNode node) {
    JsonNode ref = node.get("$ref");
    if (ref == null) {
      return node;
    }
    String[] parts = ref.asString().substring(2).split("/");
    JsonNode target = json;
    for (String p : parts) {
      target = target.get(p);
    }
    return resolve(target);
  }

  /** Leaf paths of the JSON schema: objects recurse, arrays of objects recurse with []. */
  private static void collect(JsonNode node, String prefix, Map<String, JsonNode> out) {
    JsonNode properties = resolve(node).get("properties");
    for (Map.Entry<String, JsonNode> e : properties.properties()) {
      JsonNode child = resolve(e.getValue());
      JsonNode items = child.get("items");
      if (child.has("properties")) {
        collect(child, prefix + e.getKey() + ".", out);
      } else if (items != null && resolve(items).has("properties")) {
        collect(resolve(items), prefix + e.getKey() + "[].", out);
      } else {
        out.put(prefix + e.getKey(), child);
      }
    }
  }

  /** The values of the one "enum" inside a leaf's schema, or null. */
  private static List<String> enumIn(JsonNode node) {
    if (node == null) {
      return null;
    }
    JsonNode values = node.get("enum");
    if (values != null) {
      List<String> out = new ArrayList<>();
      values.forEach(v -> out.add(v.asString()));
      return out;
    }
    for (JsonNode child : node) {
      if (child.isContainer()) {
        List<String> found = enumIn(child);
        if (found != null) {
          return found;
        }
      }
    }
    return null;
  }
}
