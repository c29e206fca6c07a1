package dev.retryagent.agent;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.lang.instrument.Instrumentation;
import java.lang.reflect.Constructor;
import java.lang.reflect.Proxy;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.Properties;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Once the hooks are live, what the JVM refuses afterwards (the exit hook while it shuts down under
 * a late attach, a thread when it has none left, either under a SecurityManager) does not turn the
 * start into "not installed": the calls are retried, and the line says so, and what did not start.
 */
class InstallerLateFailuresTest {
  @TempDir Path dir;

  @AfterEach
  void clear() {
    Installer.exitHookFault = null;
    Installer.backgroundFault = null;
    System.clearProperty(Installer.STATUS_PROPERTY);
  }

  /** An Instrumentation that holds no class and accepts everything (no client is hooked here). */
  private static Instrumentation nothingLoaded() {
    return (Instrumentation)
        Proxy.newProxyInstance(
            Instrumentation.class.getClassLoader(),
            new Class<?>[] {Instrumentation.class},
            (proxy, method, args) ->
                method.getName().equals("getAllLoadedClasses") ? new Class<?>[0] : null);
  }

  /** A configuration that arms every step after the hooks, with no client (no bridge needed). */
  private String config() throws IOException {
    Path file =
        Files.writeString(
            dir.resolve("config.yml"),
            "agent:\n"
                + "  reload: false\n"
                + "  clients: {jdk-http: false, okhttp: false, apache-httpclient: false,"
                + " url-connection: false}\n");
    return "config=" + file;
  }

  @Test
  void anExitHookRefusedAfterTheHooksAreLiveIsSaidAndTheStatusIsStillSet() throws Exception {
    Installer.exitHookFault = new IllegalStateException("Shutdown in progress");
    Constructor<Installer> c = Installer.class.getDeclaredConstructor();
    c.setAccessible(true);

    String line = c.newInstance().install(config(), nothingLoaded(), false);

    assertThat(line)
        .startsWith("jdk-http off")
        .doesNotContain("not installed")
        .contains("; no exit hook (java.lang.IllegalStateException)")
        .doesNotContain("exporters'");
    assertThat(System.getProperty(Installer.STATUS_PROPERTY)).isEqualTo(line);
  }

  @Test
  void noThreadForTheBackgroundIsSaidWithTheCausesClassOnly() throws Exception {
    Installer.exitHookFault = new SecurityException("denied for /secret/path");
    Installer.backgroundFault = new OutOfMemoryError("unable to create native thread: secret");

    String line =
        Installer.installAgent(config(), nothingLoaded(), new Properties(), Map.of(), true);

    assertThat(line)
        .startsWith("jdk-http off")
        .contains(
            "; no exit hook (java.lang.SecurityException): no summary, dead-letter flush or fleet"
                + " leave at exit")
        .contains(
            "; exporters' and config watcher's start not scheduled (java.lang.OutOfMemoryError)")
        .as("refused before the runtime recorded it: no first call will start it")
        .doesNotContain("tried again")
        .doesNotContain("secret");
  }
}
