package dev.retryagent.it.harness;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;

/**
 * The OkHttp versions every OkHttp scenario runs on, each as the jar set an application would carry
 * (OkHttp, Okio, and for 4.x and 5.x the Kotlin standard library), copied by the build into {@code
 * target/okhttp3}, {@code okhttp4} and {@code okhttp5}.
 */
public enum OkHttpVersions {
  V3("3.14.9", "okhttp3"),
  V4("4.12.0", "okhttp4"),
  V5("5.5.1", "okhttp5");

  private final String version;
  private final String dir;

  OkHttpVersions(String version, String dir) {
    this.version = version;
    this.dir = dir;
  }

  /** The version, as the application reports it. */
  public String version() {
    return version;
  }

  /** The jars of this version, for a forked class path. */
  public Path[] jars() {
    Path base = Path.of(System.getProperty("retryagent.okhttp.dir", "target")).resolve(dir);
    try (Stream<Path> files = Files.list(base)) {
      Path[] jars = files.filter(p -> p.toString().endsWith(".jar")).sorted().toArray(Path[]::new);
      if (jars.length == 0) {
        throw new IllegalStateException("no jars in " + base.toAbsolutePath());
      }
      return jars;
    } catch (IOException e) {
      throw new UncheckedIOException("no OkHttp jars in " + base.toAbsolutePath(), e);
    }
  }

  public static List<OkHttpVersions> all() {
    return List.of(values());
  }

  @Override
  public String toString() {
    return "OkHttp " + version;
  }
}
