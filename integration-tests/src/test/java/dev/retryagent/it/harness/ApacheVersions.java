package dev.retryagent.it.harness;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;

/**
 * The Apache HttpClient versions every Apache scenario runs on, each as the jar set an application
 * would carry, copied by the build into {@code target/apache45}, {@code apache51} and {@code
 * apache56}: 4.5, the oldest 5.x supported and the newest 5.x tested.
 */
public enum ApacheVersions {
  V4_5("4.5.14", "apache45"),
  V5_1("5.1.3", "apache51"),
  V5_6("5.6.5", "apache56");

  private final String version;
  private final String dir;

  ApacheVersions(String version, String dir) {
    this.version = version;
    this.dir = dir;
  }

  /** The version, as the application reports it. */
  public String version() {
    return version;
  }

  /** 4 or 5. */
  public int major() {
    return version.charAt(0) - '0';
  }

  /** The jars of this version, for a forked class path. */
  public Path[] jars() {
    return jarsIn(dir);
  }

  /** The jars the build copied into {@code target/DIR}. */
  public static Path[] jarsIn(String dir) {
    Path base = Path.of(System.getProperty("retryagent.okhttp.dir", "target")).resolve(dir);
    try (Stream<Path> files = Files.list(base)) {
      Path[] jars = files.filter(p -> p.toString().endsWith(".jar")).sorted().toArray(Path[]::new);
      if (jars.length == 0) {
        throw new IllegalStateException("no jars in " + base.toAbsolutePath());
      }
      return jars;
    } catch (IOException e) {
      throw new UncheckedIOException("no jars in " + base.toAbsolutePath(), e);
    }
  }

  public static List<ApacheVersions> all() {
    return List.of(values());
  }

  @Override
  public String toString() {
    return "Apache HttpClient " + version;
  }
}
