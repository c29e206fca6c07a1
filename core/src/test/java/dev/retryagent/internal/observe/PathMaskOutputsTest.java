package dev.retryagent.internal.observe;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.retryagent.config.LogLevel;
import dev.retryagent.config.PathMask;
import dev.retryagent.testing.FakeRequest;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code agent.redact.pathSegments} in every output that names a path: log lines, dead letters, and
 * the URLs inside the exception text both carry (issue 14, Security).
 */
class PathMaskOutputsTest {
  private static final String TOKEN = "0123456789abcdef0123456789abcdef";
  private static final PathMask MASK = PathMask.of(List.of("[0-9a-f]{32}"));

  @TempDir Path dir;
  private final List<String> lines = new CopyOnWriteArrayList<>();

  private static IOException failureNaming(String url) {
    return new IOException("unexpected end of stream on " + url);
  }

  @Test
  void logLinesMaskThePathAndTheUrlsInExceptionText() {
    LogListener log = new LogListener(LogLevel.DEBUG, lines::add, null);
    log.setPathMask(MASK);
    Rig rig = new Rig(Rig.policy("files"), log);

    rig.call(
        FakeRequest.get("files.example.com", "/v1/files/" + TOKEN + "/raw"),
        failureNaming("https://u:p@files.example.com/v1/files/" + TOKEN + "/raw?sig=s3cr3t"),
        200);

    assertThat(lines).isNotEmpty();
    assertThat(String.join("\n", lines))
        .doesNotContain(TOKEN)
        .doesNotContain("sig=")
        .doesNotContain("u:p")
        .contains("GET files.example.com/v1/files/<redacted>/raw attempt 1")
        .contains("unexpected end of stream on https://files.example.com/v1/files/<redacted>/raw");
  }

  @Test
  void aReloadedMaskAppliesToTheNextLinesAndNoneMasksNothing() {
    LogListener log = new LogListener(LogLevel.INFO, lines::add, null);
    Rig rig = new Rig(Rig.policy("files"), log);
    rig.call(FakeRequest.get("files.example.com", "/f/" + TOKEN), 503, 200);
    log.setPathMask(MASK);
    rig.call(FakeRequest.get("files.example.com", "/f/" + TOKEN), 503, 200);

    assertThat(lines.get(0)).contains("/f/" + TOKEN + " attempt 1 failed");
    assertThat(lines.get(2)).contains("/f/<redacted> attempt 1 failed");
  }

  @Test
  void deadLettersMaskThePathAndTheError() throws Exception {
    Path file = dir.resolve("dead.jsonl");
    try (DeadLetterWriter w = new DeadLetterWriter(file, lines::add)) {
      w.setPathMask(MASK);
      Rig rig = new Rig(Rig.policy("files", b -> b.maxAttempts(1)), w);

      rig.call(
          FakeRequest.get("files.example.com", "/v1/files/" + TOKEN),
          failureNaming("http://files.example.com/v1/files/" + TOKEN));
      await().atMost(Duration.ofSeconds(10)).until(() -> w.written() == 1);
    }
    String letter = Files.readString(file, StandardCharsets.UTF_8);
    assertThat(letter)
        .doesNotContain(TOKEN)
        .contains("\"path\":\"/v1/files/<redacted>\"")
        .contains("end of stream on http://files.example.com/v1/files/<redacted>");
  }

  @Test
  void theSanitizerMasksOnlyPathsNeverHostsOrPlainWords() {
    String text =
        "GET /a/" + TOKEN + " to " + TOKEN + ".example.com failed: " + TOKEN + " (see /" + TOKEN;
    assertThat(Sanitizer.message(text, null, MASK))
        .isEqualTo(
            "GET /a/<redacted> to "
                + TOKEN
                + ".example.com failed: "
                + TOKEN
                + " (see /<redacted>");
  }
}
