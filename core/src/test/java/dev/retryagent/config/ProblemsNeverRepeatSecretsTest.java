package dev.retryagent.config;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * Found by review (r8): a value written one level too high (a plain value where a list, a section
 * or a route belongs), or a malformed {@code ${...}} reference in a host key, was repeated in the
 * problem with the password or query it held; the agent prints problems on stderr. Each message
 * still says where and what was found, with the secret as {@code ***}.
 */
class ProblemsNeverRepeatSecretsTest {

  private static String only(String... lines) {
    List<ConfigProblem> all = Yaml.problems(lines);
    assertThat(all).as(String.join("\n", lines)).hasSize(1);
    return all.get(0).toString();
  }

  @Test
  void aPlainValueWhereAListOfHostsBelongsIsShownWithoutItsUserInfoAlsoInTheHint() {
    String p = only("routes: [{name: x, match: {hosts: 'admin:hunter2@api.example.com'}}]");
    assertThat(p)
        .doesNotContain("hunter2")
        .contains("routes[0].match.hosts: found ***@api.example.com; allowed a list")
        .endsWith("(for one item write [***@api.example.com])");
    assertThat(only("routes: [{name: x, match: {hosts: 'svc:hunter2'}}]"))
        .doesNotContain("hunter2")
        .contains("found svc:***;");
  }

  @Test
  void aPlainValueWhereAListOfPathsBelongsIsShownWithoutItsQueryAlsoInTheHint() {
    String p = only("routes: [{name: x, match: {paths: '/v1/dl?token=abc123'}}]");
    assertThat(p)
        .doesNotContain("abc123")
        .contains("routes[0].match.paths: found \"/v1/dl?***\"; allowed a list")
        .endsWith("(for one item write [\"/v1/dl?***\"])");
  }

  @Test
  void aHostWithAQueryAndAPathWithUserInfoAreShownWithoutThem() {
    // Each key hid only its own kind of secret: a host pasted with its path and query, or a path
    // pasted with a URL's user-info, was shown whole (r11's review).
    assertThat(
            only("routes: [{name: x, match: {hosts: ['api.example.com/export?apiKey=SECRET1']}}]"))
        .doesNotContain("SECRET1")
        .contains("routes[0].match.hosts[0]");
    assertThat(only("routes: [{name: x, match: {hosts: 'api.example.com?token=SECRET2'}}]"))
        .doesNotContain("SECRET2");
    assertThat(only("routes: [{name: x, match: {paths: ['user:SECRET3@api.example.com/v1']}}]"))
        .doesNotContain("SECRET3")
        .contains("routes[0].match.paths[0]");
  }

  @Test
  void theHintForOneItemWritesTheValueInBrackets() {
    assertThat(only("defaults: {retry: {retryOn: {statuses: 503}}}"))
        .endsWith("(for one item write [503])");
    // Shown quoted as YAML reads it back, not the raw text with its quote and line break.
    assertThat(only("routes: [{name: x, match: {paths: \"/a b\\n\"}}]"))
        .endsWith("(for one item write [\"/a b\\u000a\"])");
  }

  @Test
  void aPlainValueWhereASectionBelongsIsShownWithoutWhatAnyKeyHides() {
    String[][] cases = {
      {"fleet: { redis: 'user:hunter2@cache:6379' }", "fleet.redis: found ***@cache:6379;"},
      {"fleet: { redis: 'default:hunter2' }", "fleet.redis: found default:***;"},
      {"fleet: 'user:hunter2@cache:6379'", "fleet: found ***@cache:6379;"},
      {"routes: [{name: x, match: 'admin:hunter2@api.example.com'}]", "found ***@api.example.com"},
      {"routes: [{name: x, match: '/v1/dl?token=hunter2'}]", "found \"/v1/dl?***\";"},
      {"routes: ['admin:hunter2@api.example.com']", "routes[0]: found ***@api.example.com;"},
      {"routes: 'admin:hunter2@api.example.com'", "routes: found ***@api.example.com;"},
      {"defaults: {retry: 'x?hunter2'}", "defaults.retry: found \"x?***\";"},
    };
    for (String[] c : cases) {
      assertThat(only(c[0])).as(c[0]).doesNotContain("hunter2").contains(c[1]);
    }
    // What holds nothing to hide is shown as written, to be found in the file.
    assertThat(only("agent: true")).contains("agent: found true;");
    assertThat(only("fleet: {redis: 'cache:6379'}")).contains("found cache:6379;");
  }

  @Test
  void aMalformedReferenceInAHostKeyShowsNoUserInfoNorInTheFixItSuggests() {
    String p = only("routes: [{name: x, match: {hosts: ['${H:user:hunter2@h}']}}]");
    assertThat(p)
        .doesNotContain("hunter2")
        .contains("invalid environment variable reference ${H:***@h}")
        .contains("for a fallback write ${H:-***@h}");
    assertThat(only("routes: [{name: x, match: {hosts: ['${H-svc:hunter2}']}}]"))
        .doesNotContain("hunter2")
        .contains("${H-svc:***}")
        .contains("${H:-svc:***}");
    assertThat(only("routes: [{name: x, match: {paths: ['${P:/v1/x?token=hunter2}']}}]"))
        .doesNotContain("hunter2")
        .contains("${P:/v1/x?***}");
    assertThat(only("routes: [{name: x, match: {hosts: ['${user:hunter2@h}']}}]"))
        .doesNotContain("hunter2");
  }

  @Test
  void anUnquotedMalformedReferenceInAFlowListShowsNoUserInfo() {
    // Read as if quoted (it was the parser's hint, before any key was known): the walker's problem.
    ConfigProblem p = Yaml.problem("routes: [{name: x, match: {hosts: [${H:user:hunter2@h}]}}]");
    assertThat(p.message()).doesNotContain("hunter2").contains("write ${H:-***@h}");
  }

  @Test
  void anEmptyValueFromAReferenceShowsTheReferenceAsItsKeyShowsValues() {
    String p =
        Yaml.problemWithEnv(
                Map.of("H", " "), "routes: [{name: x, match: {hosts: ['${H:-user:hunter2@h}']}}]")
            .toString();
    assertThat(p).doesNotContain("hunter2").contains("found an empty value (from ***@h})");
  }
}
