package dev.retryagent.launcher;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** The launcher's check of the JVM's version (issue 14: a JVM the agent does not support). */
class JavaVersionCheckTest {
  @ParameterizedTest
  @ValueSource(strings = {"1.6", "1.7", "1.8", "9", "10", "10.0.2"})
  void olderThanJava11IsOneLineThatSaysWhy(String version) {
    assertThat(RetryAgent.unsupported(version))
        .isEqualTo(
            "not installed, the application runs without retries: Java "
                + version
                + " is not supported (the agent needs Java 11 or later)");
  }

  @ParameterizedTest
  @ValueSource(strings = {"11", "17", "21", "25", "26", "99", "17.0.1", "junk", ""})
  void java11AndLaterOrAnUnreadableVersionRun(String version) {
    assertThat(RetryAgent.unsupported(version)).isNull();
  }
}
