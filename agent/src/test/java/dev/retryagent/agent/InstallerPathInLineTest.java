package dev.retryagent.agent;

import static org.assertj.core.api.Assertions.assertThat;

import java.lang.instrument.Instrumentation;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.Properties;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The start-up line names the configuration file; {@code attach} reads the line back (from the
 * target's {@code retryagent.status}) to tell whether that file is watched. A path that holds the
 * line's own separators must not be able to answer for the agent.
 */
class InstallerPathInLineTest {
  @TempDir Path dir;

  /** An Instrumentation that holds no class and accepts everything (no client is hooked here). */
  private static Instrumentation nothingLoaded() {
    return (Instrumentation)
        Proxy.newProxyInstance(
            Instrumentation.class.getClassLoader(),
            new Class<?>[] {Instrumentation.class},
            (proxy, method, args) ->
                method.getName().equals("getAllLoadedClasses") ? new Class<?>[0] : null);
  }

  /** {@code AttachCommand.watchesItsFile}, on the launcher side (package-private there). */
  private static boolean watchesItsFile(String line) throws Exception {
    Method m =
        Class.forName("dev.retryagent.launcher.AttachCommand")
            .getDeclaredMethod("watchesItsFile", String.class);
    m.setAccessible(true);
    return (Boolean) m.invoke(null, line);
  }

  @Test
  void aPathThatSaysReloadOnDoesNotMakeAnUnwatchedFileLookWatched() throws Exception {
    Path sub = Files.createDirectory(dir.resolve("x, reload=on; y"));
    Path file =
        Files.writeString(
            sub.resolve("config.yml"),
            "agent:\n"
                + "  reload: false\n"
                + "  clients: {jdk-http: false, okhttp: false, apache-httpclient: false,"
                + " url-connection: false}\n");

    // as attach passes a path with a comma
    String line =
        Installer.installAgent(
            "config='" + file + "'", nothingLoaded(), new Properties(), Map.of(), false);

    assertThat(watchesItsFile(line)).isFalse();
    assertThat(line).contains("; config=\"" + file + "\", mode=enforce, reload=off");
  }

  @Test
  void aPathThatSaysReloadOffDoesNotHideAWatchedFile() throws Exception {
    Path path = dir.resolve("x, reload=off; y").resolve("config.yml");
    String line =
        "jdk-http armed (send, sendAsync); config="
            + Installer.pathInLine(path)
            + ", mode=enforce, reload=on";

    assertThat(watchesItsFile(line)).isTrue();
    assertThat(watchesItsFile(line + "; 1 warning (loaded; each says what applies): x")).isTrue();
    assertThat(
            watchesItsFile(
                "jdk-http armed (send, sendAsync); config="
                    + Installer.pathInLine(dir.resolve("a\"b, reload=on; \\c").resolve("d.yml"))
                    + ", mode=enforce, reload=off"))
        .isFalse();
  }

  @Test
  void aPathIsQuotedOnlyWhenItHoldsTheLinesSeparatorsAndTheLineStaysOneLine() {
    assertThat(Installer.pathInLine(Path.of("/etc/retry-agent/config.yml")))
        .isEqualTo("/etc/retry-agent/config.yml");
    assertThat(Installer.pathInLine("C:\\etc\\a,b;c.yml")).isEqualTo("C:\\etc\\a,b;c.yml");
    assertThat(Installer.pathInLine("/a, b/c.yml")).isEqualTo("\"/a, b/c.yml\"");
    assertThat(Installer.pathInLine("/a/b;")).isEqualTo("\"/a/b;\"");
    assertThat(Installer.pathInLine("\"/a\\b\"")).isEqualTo("\"\\\"/a\\\\b\\\"\"");
    assertThat(Installer.pathInLine("/a\nb\u2028c.yml"))
        .isEqualTo("\"/a\\u000ab\\u2028c.yml\"")
        .doesNotContain("\n");
  }
}
