package dev.retryagent.launcher;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retryagent.agent.CapturedStderr;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/** The once-per-JVM start (the only test of this module that starts the agent). */
class AgentStarterTest {
  @RegisterExtension final CapturedStderr stderr = new CapturedStderr();

  @Test
  void aStartAfterOneThatWasNotInstalledDoesNotClaimTheAgentIsInstalled(@TempDir Path dir) {
    // Two -javaagent copies (one from JAVA_TOOL_OPTIONS, say) and the first one cannot install:
    // the application runs without retries, and the second line must not say otherwise.
    String missing = dir.resolve("no-such-retry-agent.jar").toString();

    AgentStarter.start("config.yml", null, true, missing, "9.9");
    AgentStarter.start("other.yml", null, true, missing, "9.9");

    String[] lines = stderr.text().split("\\R");
    assertThat(lines).hasSize(2);
    assertThat(lines[0]).startsWith("retry-agent 9.9: not installed, the application runs without");
    assertThat(lines[1])
        .startsWith("retry-agent 9.9: ")
        .doesNotContain("already installed")
        .contains("not installed")
        .contains("ignoring another start");
  }

  @Test
  void aStartWhileTheFirstIsStillUnderWayDoesNotClaimTheAgentIsInstalled() {
    // two attaches at once: the first may still fail
    assertThat(AgentStarter.anotherStart(null))
        .doesNotContain("already installed")
        .contains("another start is under way");
    assertThat(AgentStarter.anotherStart("jdk-http armed (send, sendAsync); config=built-in"))
        .startsWith("already installed");
    assertThat(AgentStarter.anotherStart("not installed, the application runs without retries"))
        .startsWith("not installed by an earlier start");
  }
}
