package dev.retryagent.agent.runtime;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retryagent.config.PathMask;
import dev.retryagent.internal.observe.DeadLetterWriter;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code agent.deadLetter.path} that this file system refuses. */
class DeadLettersPathTest {
  @TempDir Path dir;

  @Test
  void aPathTheFileSystemRefusesIsOneLineNamingTheKeyAndThePathAndTheRunGoesOn() {
    // The configuration refuses a NUL, but another system refuses more (Windows: <>:"|?*), and
    // the exception's message quotes the path with the refused character in it: a control
    // character broke the line the operator reads.
    List<String> errors = new ArrayList<>();
    DeadLetters deadLetters = new DeadLetters(errors::add, null);
    String valid = dir.resolve("a.jsonl").toString();
    assertThat(deadLetters.use(valid, 0, PathMask.NONE)).isNull();

    String refused = dir.resolve("b").toString() + "\u0000\n.jsonl";
    DeadLetterWriter replaced = deadLetters.use(refused, 0, PathMask.NONE);

    assertThat(replaced).as("the writer in use until now, for the caller to close").isNotNull();
    assertThat(replaced.path()).isEqualTo(Path.of(valid));
    assertThat(errors)
        .containsExactly(
            "retry-agent: agent.deadLetter.path is not a valid path on this system: \""
                + dir.resolve("b")
                + "  .jsonl\" (Nul character not allowed); dead letters are not written");
    replaced.close(Duration.ofSeconds(5));
    deadLetters.closeAtExit(Duration.ofSeconds(5));
  }
}
