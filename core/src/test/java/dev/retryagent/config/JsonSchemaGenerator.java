package dev.retryagent.config;

import dev.retryagent.config.ConfigSchema.Leaf;
import dev.retryagent.config.ConfigSchema.Section;
import dev.retryagent.config.ConfigSchema.SectionList;
import dev.retryagent.config.ValueType.Bounded;
import dev.retryagent.config.ValueType.EnumType;
import dev.retryagent.config.ValueType.ListType;
import dev.retryagent.config.ValueType.StringType;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.yaml.snakeyaml.LoaderOptions;
import org.yaml.snakeyaml.constructor.SafeConstructor;
import tools.jackson.databind.json.JsonMapper;

/**
 * Writes config/retry-agent.schema.json for editors: keys, types and bounds from {@link
 * ConfigSchema}, defaults and descriptions from docs/configuration.md. Run {@link #main} after
 * changing either; {@code JsonSchemaAgreementTest} fails until the file is regenerated, and checks
 * it against the loader and the document independently of this generator.
 */
final class JsonSchemaGenerator {
  static final Path FILE = ConfigFiles.CONFIG_DIR.resolve("retry-agent.schema.json");

  static final String DURATION_PATTERN =
      "^\\s*(((\\d+(\\.\\d+)?|\\.\\d+)\\s*(ns|us|µs|ms|s|m|h|d)\\s*)+"
          + "|[Pp](?=[0-9Tt])(\\d+[Dd])?([Tt](?=\\d)(\\d+[Hh])?(\\d+[Mm])?(\\d+(\\.\\d+)?[Ss])?)?)\\s*$";
  static final String PERCENT_PATTERN = "^\\s*(\\d+(\\.\\d+)?|\\.\\d+)\\s*%\\s*$";
  static final String SIZE_PATTERN = "^\\s*\\d+(\\.\\d+)?\\s*([Bb]|[KkMmGg][Ii][Bb])?\\s*$";
  static final String STATUS_PATTERN =
      "^\\s*([1-9][xX][xX]|[1-9]\\d\\d(\\s*-\\s*[1-9]\\d\\d)?)\\s*$";

  /**
   * Booleans in any case, as the loader reads them: a YAML 1.1 reader gives {@code True} as text.
   */
  static final String BOOLEAN_PATTERN = "^\\s*(?:[Tt][Rr][Uu][Ee]|[Ff][Aa][Ll][Ss][Ee])\\s*$";

  /** What a key that accepts none takes for it besides YAML's null: none, null, ~ or nothing. */
  static final String NONE_PATTERN = "^\\s*(?:[Nn][Oo][Nn][Ee]|[Nn][Uu][Ll][Ll]|~)?\\s*$";

  static final String PLACEHOLDER_PATTERN = "\\$\\{[A-Za-z_][A-Za-z0-9_]*(:-[^}]*)?\\}";
  static final String PLACEHOLDER_REF = "#/$defs/placeholder";

  private static final List<Section> SHARED = ConfigSchema.POLICY_SECTIONS;

  private JsonSchemaGenerator() {}

  public static void main(String[] args) throws Exception {
    Files.writeString(FILE, text());
    System.out.println("wrote " + FILE.toAbsolutePath().normalize());
  }

  static String text() {
    return JsonMapper.builder()
            .build()
            .writerWithDefaultPrettyPrinter()
            .writeValueAsString(generate())
        + "\n";
  }

  static Map<String, Object> generate() {
    Map<String, Object> root = new LinkedHashMap<>();
    root.put("$schema", "https://json-schema.org/draft/2020-12/schema");
    root.put("title", "retry-agent configuration");
    root.put(
        "description",
        "retry-agent configuration, version 1. Generated from the loader's schema"
            + " (dev.retryagent.config.ConfigSchema) and the contract, docs/configuration.md;"
            + " see config/reference.yml.");
    root.putAll(section(ConfigSchema.ROOT, false));
    Map<String, Object> defs = new LinkedHashMap<>();
    for (Section s : SHARED) {
      defs.put(s.name, section(s, true));
    }
    defs.put("route", section(ConfigSchema.ROUTE, false));
    Map<String, Object> placeholder = new LinkedHashMap<>();
    placeholder.put(
        "description", "${NAME} or ${NAME:-fallback}, replaced from the environment when loading");
    placeholder.put("type", "string");
    placeholder.put("pattern", PLACEHOLDER_PATTERN);
    defs.put("placeholder", placeholder);
    root.put("$defs", defs);
    return root;
  }

  private static Map<String, Object> section(Section section, boolean nullable) {
    Map<String, Object> out = new LinkedHashMap<>();
    if (!section.name.isEmpty()) {
      out.put("description", section.doc);
    }
    out.put("type", nullable ? List.of("object", "null") : "object");
    out.put("additionalProperties", false);
    Map<String, Object> properties = new LinkedHashMap<>();
    for (ConfigSchema.Node child : section.children.values()) {
      properties.put(child.name, node(child));
    }
    out.put("properties", properties);
    return out;
  }

  private static Object node(ConfigSchema.Node node) {
    if (node instanceof Section) {
      Section s = (Section) node;
      if (SHARED.contains(s)) {
        return obj("$ref", "#/$defs/" + s.name);
      }
      return section(s, true);
    }
    if (node instanceof SectionList) {
      SectionList list = (SectionList) node;
      Map<String, Object> out = new LinkedHashMap<>();
      out.put("description", list.doc);
      out.put("type", List.of("array", "null"));
      out.put("maxItems", list.maxItems);
      out.put("items", obj("$ref", "#/$defs/" + list.element.name));
      return out;
    }
    return leaf((Leaf) node);
  }

  private static Map<String, Object> leaf(Leaf leaf) {
    ConfigDocument.Row row = ConfigDocument.rowOf(leaf);
    Map<String, Object> out = new LinkedHashMap<>();
    out.put("description", row.plainMeaning());
    if (row.defaultText != null) {
      out.put("default", defaultValue(row.defaultText));
    }
    if (leaf.type instanceof ListType) {
      ListType list = (ListType) leaf.type;
      out.put("type", "array");
      if (list.emptyProblem() != null) {
        out.put("minItems", 1); // an empty match list would match nothing: the loader refuses it
      }
      out.put("items", scalarOrPlaceholder(list.element, false));
      return out;
    }
    out.putAll(scalarOrPlaceholder(leaf.type, leaf.nullable));
    return out;
  }

  private static Map<String, Object> scalarOrPlaceholder(ValueType type, boolean nullable) {
    List<Object> anyOf = new ArrayList<>();
    anyOf.add(type(type));
    if (nullable) {
      anyOf.add(obj("type", "null"));
      anyOf.add(obj("type", "string", "pattern", NONE_PATTERN));
    }
    anyOf.add(obj("$ref", PLACEHOLDER_REF));
    return obj("anyOf", anyOf);
  }

  private static Map<String, Object> type(ValueType type) {
    Map<String, Object> out = new LinkedHashMap<>();
    if (type == ValueType.STATUS) {
      return anyOf(
          range("integer", 100, false, 999), obj("type", "string", "pattern", STATUS_PATTERN));
    }
    if (type == ValueType.HOST_GLOB) {
      out.put("type", "string");
      out.put("pattern", "^\\S+$");
      return out;
    }
    if (type == ValueType.PATH_GLOB) {
      out.put("type", "string");
      out.put("pattern", "^/\\S*$");
      return out;
    }
    switch (type.kind) {
      case BOOLEAN:
        return anyOf(obj("type", "boolean"), obj("type", "string", "pattern", BOOLEAN_PATTERN));
      case INTEGER:
        {
          Bounded b = (Bounded) type;
          return range("integer", b.min, b.minExclusive, b.max);
        }
      case NUMBER:
        {
          Bounded b = (Bounded) type;
          return range("number", b.min, b.minExclusive, b.max);
        }
      case RATIO:
        {
          Bounded b = (Bounded) type;
          return anyOf(
              range("number", b.min, b.minExclusive, b.max),
              obj("type", "string", "pattern", PERCENT_PATTERN));
        }
      case SIZE:
        {
          Bounded b = (Bounded) type;
          return anyOf(
              range("integer", b.min, false, b.max),
              obj("type", "string", "pattern", SIZE_PATTERN));
        }
      case DURATION:
        out.put("type", "string");
        out.put("pattern", DURATION_PATTERN);
        return out;
      case COUNT_OR_DURATION:
        return anyOf(
            range("integer", 1, false, dev.retryagent.policy.CircuitBreakerPolicy.MAX_COUNT_WINDOW),
            obj("type", "string", "pattern", DURATION_PATTERN));
      case ENUM:
        {
          // The enum first, for editors' completion; the pattern takes the other cases.
          List<String> names = ((EnumType) type).names;
          return anyOf(obj("enum", names), obj("type", "string", "pattern", anyCase(names)));
        }
      case STRING:
        out.put("type", "string");
        out.put("pattern", "^(?:" + ((StringType) type).regex + ")$");
        return out;
      default:
        throw new IllegalStateException("no JSON schema for " + type.kind);
    }
  }

  /** A pattern for any of {@code names} in any case, as the loader reads enumerations. */
  static String anyCase(List<String> names) {
    StringBuilder out = new StringBuilder("^\\s*(?:");
    for (int i = 0; i < names.size(); i++) {
      out.append(i == 0 ? "" : "|");
      for (char c : names.get(i).toCharArray()) {
        if (Character.isLetter(c)) {
          out.append('[')
              .append(Character.toUpperCase(c))
              .append(Character.toLowerCase(c))
              .append(']');
        } else if (Character.isLetterOrDigit(c) || c == '-' || c == '_') {
          out.append(c);
        } else {
          out.append('\\').append(c);
        }
      }
    }
    return out.append(")\\s*$").toString();
  }

  private static Map<String, Object> range(
      String type, double min, boolean minExclusive, double max) {
    Map<String, Object> out = new LinkedHashMap<>();
    out.put("type", type);
    out.put(minExclusive ? "exclusiveMinimum" : "minimum", number(min));
    out.put("maximum", number(max));
    return out;
  }

  private static Object number(double d) {
    return d == Math.rint(d) ? (Object) (long) d : (Object) d;
  }

  /** An ordered JSON object from key, value pairs (Map.of would order keys differently per run). */
  private static Map<String, Object> obj(Object... keyValues) {
    Map<String, Object> out = new LinkedHashMap<>();
    for (int i = 0; i < keyValues.length; i += 2) {
      out.put((String) keyValues[i], keyValues[i + 1]);
    }
    return out;
  }

  @SafeVarargs
  private static Map<String, Object> anyOf(Map<String, Object>... alternatives) {
    return obj("anyOf", Arrays.asList(alternatives));
  }

  /** The default as a JSON value, read from its YAML text with SnakeYAML's safe constructor. */
  static Object defaultValue(String yaml) {
    return new org.yaml.snakeyaml.Yaml(new SafeConstructor(new LoaderOptions())).load(yaml);
  }
}
