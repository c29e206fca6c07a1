package dev.retryagent.agent;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.lang.instrument.Instrumentation;
import java.lang.reflect.Proxy;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code mode=off} given outside the file (agent argument, system property, environment) is applied
 * to every reload, so nothing could ever switch the agent on: it must leave every class alone
 * whatever {@code agent.reload} says, as the README's kill switch promises.
 */
class InstallerModeOffTest {
  @TempDir Path dir;

  private final List<String> calls = new ArrayList<>();

  /** An Instrumentation that records every call made on it and holds no class. */
  private Instrumentation recording() {
    return (Instrumentation)
        Proxy.newProxyInstance(
            Instrumentation.class.getClassLoader(),
            new Class<?>[] {Instrumentation.class},
            (proxy, method, args) -> {
              calls.add(method.getName());
              if (method.getName().equals("getAllLoadedClasses")) {
                return new Class<?>[0];
              }
              return method.getReturnType() == boolean.class ? Boolean.FALSE : null;
            });
  }

  private Path watchedFile() throws IOException {
    // reload is on by default: the file is one an operator could edit later
    return Files.writeString(dir.resolve("config.yml"), "agent: { mode: enforce }\n");
  }

  @Test
  void modeOffInTheAgentArgumentHooksNothingEvenWithReloadOn() throws IOException {
    Path file = watchedFile();

    String line =
        Installer.installAgent(
            "config=" + file + ",mode=off", recording(), new Properties(), Map.of(), true);

    assertThat(calls).as("calls on Instrumentation").isEmpty();
    assertThat(line)
        .startsWith(
            "nothing hooked (mode=off from the agent argument, which every reload keeps); config="
                + file
                + " (not read)");
  }

  /**
   * The kill switch works whatever the file holds: a file broken since, with {@code strict: true},
   * stopped the JVM before main though the agent was turned off (r34).
   */
  @Test
  void modeOffAsAnOverrideDoesNotReadABrokenStrictFile() throws IOException {
    Path file =
        Files.writeString(
            dir.resolve("broken.yml"), "agent: { strict: true }\nretry: { maxAttempts: x }\n");

    String line =
        Installer.installAgent(
            "config=" + file,
            recording(),
            new Properties(),
            Map.of("RETRY_AGENT_MODE", "off"),
            true);

    assertThat(calls).as("calls on Instrumentation").isEmpty();
    assertThat(line)
        .isEqualTo(
            "nothing hooked (mode=off from the environment variable RETRY_AGENT_MODE, which every"
                + " reload keeps); config="
                + file
                + " (not read)");
  }

  @Test
  void modeOffFromASystemPropertyOrTheEnvironmentHooksNothingEither() throws IOException {
    Path file = watchedFile();
    Properties props = new Properties();
    props.setProperty("retryagent.mode", "off");

    String fromProperty =
        Installer.installAgent("config=" + file, recording(), props, Map.of(), true);
    String fromEnv =
        Installer.installAgent(
            "config=" + file,
            recording(),
            new Properties(),
            Map.of("RETRY_AGENT_MODE", "off"),
            true);

    assertThat(calls).as("calls on Instrumentation").isEmpty();
    assertThat(fromProperty).startsWith("nothing hooked (mode=off from the system property");
    assertThat(fromEnv).startsWith("nothing hooked (mode=off from the environment variable");
  }
}
