package dev.retryagent.config;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * {@code agent.deadLetter.path} as lines show it ({@link AgentConfig#shownPath}): a URL written
 * there by mistake ({@code ${DLQ_URL}}) without its password, a file path as written.
 */
class DeadLetterPathShownTest {
  private static final String CANARY = "CANARY7z";

  @Test
  void aFilePathIsShownAsWritten() {
    for (String p :
        new String[] {
          "/var/log/retry-dead-letters.jsonl",
          "dead letters.jsonl",
          "/data/user@host/dead.jsonl",
          "C:/logs/dead.jsonl",
          "C:\\logs\\dead.jsonl",
          "/data/a:b/dead?.jsonl",
          "/data/file:/x.jsonl",
          "~/dead#1.jsonl",
          // An '@' in a file path is legal; a ':' after it or a drive's is no user-info.
          "/var/log/app@1/dlq",
          "/var/app@1/10:00/dlq",
          "C:\\logs\\app@1\\dead.jsonl",
          "C:/logs/app@1/dead.jsonl",
          "\\\\?\\C:\\logs\\app@1\\dead.jsonl",
          "D:"
        }) {
      assertThat(AgentConfig.shownPath(p)).as(p).isEqualTo(p);
    }
    assertThat(AgentConfig.shownPath(null)).isEqualTo("none");
    assertThat(AgentConfig.shownPath("/tmp/dead\nforged.jsonl"))
        .isEqualTo("/tmp/dead forged.jsonl");
  }

  @Test
  void aUrlIsShownWithoutItsPasswordAlsoAsAPathWritesIt() {
    String[][] cases = {
      {"https://u:" + CANARY + "@host/x", "https://***@host/x"},
      {"https://u:" + CANARY, "https://***"},
      {"https://u:" + CANARY + "/x", "https://***"},
      {"https://host/x?token=" + CANARY, "https://host/x?***"},
      {"/var/log/https://u:" + CANARY + "@host/x", "/var/log/https://***@host/x"},
      // Path.of writes "//" as "/": a writer's line and an exception's message name it so.
      {"https:/u:" + CANARY + "@host/x", "https://***@host/x"},
      {"https:/u:" + CANARY, "https://***"},
    };
    for (String[] c : cases) {
      assertThat(AgentConfig.shownPath(c[0])).as(c[0]).isEqualTo(c[1]).doesNotContain(CANARY);
    }
    assertThat(AgentConfig.shownPath(Path.of("https://u:" + CANARY + "@host/x").toString()))
        .doesNotContain(CANARY);
  }

  @Test
  void aUserInfoWrittenWithoutASchemeIsShownWithoutItsPassword() {
    String[][] cases = {
      // scp's form, and the same without the ':' before the path
      {"u:" + CANARY + "@host:/dlq", "***@host:/dlq"},
      {"u:" + CANARY + "@host/dlq", "***@host/dlq"},
      {"u:" + CANARY + "@host:dlq", "***@host:dlq"},
      // a password holding a '/' or an '@'; the user after a directory
      {"u:pa/" + CANARY + "@host/dlq", "***@host/dlq"},
      {"u:pa@" + CANARY + "@host/dlq", "***@host/dlq"},
      {"/data/u:" + CANARY + "@host/dlq", "/data/***@host/dlq"},
      {"C:\\dlq\\u:" + CANARY + "@host", "C:\\dlq\\***@host"},
      // the safe side: an '@' further on takes the path up to it along
      {"u:" + CANARY + "@host:/var/app@1/dlq", "***@1/dlq"},
    };
    for (String[] c : cases) {
      assertThat(AgentConfig.shownPath(c[0])).as(c[0]).isEqualTo(c[1]).doesNotContain(CANARY);
    }
    assertThat(AgentConfig.shownPath(Path.of("u:" + CANARY + "@host:/dlq").toString()))
        .isEqualTo("***@host:/dlq");
  }

  @Test
  void aUrlsPasswordOfDigitsWithoutAnAtIsNotShownAsAPort() {
    // A port has no place in a file path: https://user:1234 is a password more likely than a port.
    String pin = "73519";
    String[][] cases = {
      {"https://u:" + pin, "https://***"},
      {"https:/u:" + pin, "https://***"},
      {"https://u:" + pin + "/x", "https://***"},
      {"/var/log/https:/u:" + pin, "/var/log/https://***"},
      {"https://host:8443/dlq", "https://***"},
    };
    for (String[] c : cases) {
      assertThat(AgentConfig.shownPath(c[0])).as(c[0]).isEqualTo(c[1]).doesNotContain(pin);
    }
    assertThat(AgentConfig.shownPath(Path.of("https://u:" + pin).toString()))
        .isEqualTo("https://***");
  }

  @Test
  void theStartUpLineShowsAUrlFromAVariableWithoutItsPasswordAndAPathAsWritten()
      throws ConfigException {
    String yaml = "version: 1\nagent:\n  deadLetter:\n    path: ${DLQ_URL}\n";
    for (String url : new String[] {"https://u:" + CANARY + "@host/x", "https://u:" + CANARY}) {
      AgentConfig c = ConfigLoader.parse(yaml, "a.yml", Map.of("DLQ_URL", url));
      assertThat(c.deadLetterPath()).as("the key accepts it as before").isEqualTo(url);
      assertThat(c.toString()).contains(", deadLetter=https://***").doesNotContain(CANARY);
    }
    for (String[] c :
        new String[][] {
          {"u:" + CANARY + "@host:/dlq", "***@host:/dlq"}, {"https://u:73519", "https://***"}
        }) {
      AgentConfig shown = ConfigLoader.parse(yaml, "a.yml", Map.of("DLQ_URL", c[0]));
      assertThat(shown.toString())
          .contains(", deadLetter=" + c[1] + ", ")
          .doesNotContain(CANARY)
          .doesNotContain("73519");
    }
    AgentConfig plain =
        ConfigLoader.parse(yaml, "a.yml", Map.of("DLQ_URL", "/var/log/dead letters.jsonl"));
    assertThat(plain.toString()).contains(", deadLetter=/var/log/dead letters.jsonl, ");
  }

  @Test
  void aPasswordInAFormNoFileSystemReadsAsAPathIsNotShownByAnyLineNorProblem()
      throws ConfigException {
    // Each was shown whole: a drive where another ':' follows (Windows refuses one), a scheme
    // after a digit or with backslashes, a host alone (a password whose @host was left out), a
    // colon encoded.
    String[][] cases = {
      {"u:/" + CANARY + "@host:/dlq", "***@host:/dlq"},
      {"C:\\" + CANARY + "@host:/dlq", "***@host:/dlq"},
      {"1https:/u:" + CANARY, "1https://***"},
      {"https:\\\\u:" + CANARY, "https://***"},
      {"https:\\u:" + CANARY, "https://***"},
      {"https://" + CANARY, "https://***"},
      {"https:/" + CANARY, "https://***"},
      {"u%3A" + CANARY + "@host:/dlq", "***@host:/dlq"},
      {"u%3a" + CANARY + "@host/dlq", "***@host/dlq"},
    };
    assertShownEverywhere(cases);
    // The writer's lines name the Path, which wrote "//" as "/" (a Unix file system here).
    for (String p : new String[] {"https://" + CANARY, "u:/" + CANARY + "@host:/dlq"}) {
      assertThat(AgentConfig.shownPath(Path.of(p).toString())).as(p).doesNotContain(CANARY);
    }
  }

  @Test
  void aHostAloneAfterASpaceIsNotShownByAnyLineNorProblem() throws ConfigException {
    // The key trims a space before the value; a problem quotes the value as written, and
    // https://secret after a space did not read as a host alone: the password was shown.
    String yaml = "version: 1\nagent:\n  deadLetter:\n    path: ${DLQ}\n";
    for (String[] c :
        new String[][] {
          {" https://" + CANARY, " https://***"}, {"\thttps:/" + CANARY, " https://***"}
        }) {
      assertThat(AgentConfig.shownPath(c[0])).as(c[0]).isEqualTo(c[1]);
      AgentConfig config = ConfigLoader.parse(yaml, "a.yml", Map.of("DLQ", c[0]));
      assertThat(config.toString()).as(c[0]).doesNotContain(CANARY);
      ConfigProblem problem = Yaml.problemWithEnv(Map.of("DLQ", c[0] + "\0x"), yaml);
      assertThat(problem.path()).isEqualTo("agent.deadLetter.path");
      assertThat(problem.message()).as(c[0]).doesNotContain(CANARY);
    }
  }

  @Test
  void aPathAFileSystemReadsIsShownAsWrittenWhereAPasswordCouldAlsoReadSo() {
    // A real Windows path: a file named pw@host at C:'s root; a drive and no other ':'. A file URL
    // and a URL with a path name a path; a '%' not of %3A.
    assertShownAsWritten(
        "C:\\pw@host",
        "C:/pw@host/dlq",
        "C:\\dir\\file",
        "file://dead.jsonl",
        "/data/file:/x.jsonl",
        "https://host/dlq",
        "/data/50%/app@1/dlq",
        "/data/2024backup:/dlq");
  }

  @Test
  void aHostAloneNotStartingTheValueOrBeforeAQueryOrFragmentIsNotShown() throws ConfigException {
    // The authority-alone rule matched only the whole value: after x: (a variable's junk) or
    // before a '#' or '?' (which showed https://CANARY?***), the password was shown.
    String[][] cases = {
      {"x:https://" + CANARY, "x:https://***"},
      {"x:https:/" + CANARY, "x:https://***"},
      {"https://" + CANARY + "#", "https://***"},
      {"https://" + CANARY + "?a=1", "https://***"},
      {"1https://" + CANARY, "1https://***"},
      {"/var/log/https://" + CANARY, "/var/log/https://***"},
    };
    assertShownEverywhere(cases);
  }

  @Test
  void aUserInfoWithItsAtEncodedIsNotShown() throws ConfigException {
    // No literal '@': %40 is a URL-encoded user-info's '@'; the password was shown.
    String[][] cases = {
      {"u%3A" + CANARY + "%40h/x", "***%40h/x"},
      {"u:" + CANARY + "%40h/x", "***%40h/x"},
      {"/data/u%3a" + CANARY + "%40h", "/data/***%40h"},
    };
    assertShownEverywhere(cases);
  }

  @Test
  void aLocalPathThatOnlyLookedLikeAUrlOrAnEncodedUserInfoIsShownAsWritten() {
    // logs:/dlq and ab:\dlq are a directory "logs:" or a file named so, not a URL's host (shown
    // logs://***); an encoded user-info encodes its '/' too, so a %3A in a directory before the
    // '@' is a file name (shown /srv/***@1).
    assertShownAsWritten(
        "logs:/dlq",
        "ab:\\dlq",
        "ab:\\\\dlq",
        "/data/logs:/dlq",
        "/srv/a%3Ab/app@1",
        "/srv/a%3Ab/c%40d/app@1");
  }

  @Test
  void anNtfsStreamAfterAnAtKeepsItsDriveAndDirectories() throws ConfigException {
    // C:\data@x\f:stream is a file's alternate data stream; it also reads as user C's password
    // "\data": the password's side wins, but only the '@''s segment is hidden (it was ***@x...).
    String[][] cases = {
      {"C:\\data@x\\f:stream", "C:\\***@x\\f:stream"},
      {"D:/dlq/a@b:c", "D:/dlq/***@b:c"},
      {"D:/dlq/" + CANARY + "@b:c:$DATA", "D:/dlq/***@b:c:$DATA"},
    };
    assertShownEverywhere(cases);
  }

  private static void assertShownAsWritten(String... paths) {
    for (String p : paths) {
      assertThat(AgentConfig.shownPath(p)).as(p).isEqualTo(p);
    }
  }

  /**
   * Each {@code {value, shown}}: shownPath shows it so, the start-up line too, and neither it nor a
   * problem about the key (a NUL) shows the canary.
   */
  private static void assertShownEverywhere(String[][] cases) throws ConfigException {
    String yaml = "version: 1\nagent:\n  deadLetter:\n    path: ${DLQ}\n";
    for (String[] c : cases) {
      assertThat(AgentConfig.shownPath(c[0])).as(c[0]).isEqualTo(c[1]);
      // The start-up line (and validate's, explain's), from the key that still takes it as before.
      AgentConfig config = ConfigLoader.parse(yaml, "a.yml", Map.of("DLQ", c[0]));
      assertThat(config.deadLetterPath()).isEqualTo(c[0]);
      assertThat(config.toString())
          .as(c[0])
          .contains(", deadLetter=" + c[1] + ", ")
          .doesNotContain(CANARY);
      // A problem about the value (a NUL the key refuses), as validate and the start-up say it.
      ConfigProblem problem = Yaml.problemWithEnv(Map.of("DLQ", c[0] + "\0x"), yaml);
      assertThat(problem.path()).isEqualTo("agent.deadLetter.path");
      assertThat(problem.message()).as(c[0]).doesNotContain(CANARY);
    }
  }
}
