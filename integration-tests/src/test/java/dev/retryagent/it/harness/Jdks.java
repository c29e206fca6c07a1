package dev.retryagent.it.harness;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/** The JDKs every agent scenario runs on. */
public final class Jdks {
  private Jdks() {}

  /**
   * JDK 17: the JDK running the tests when that is 17 (the default build), else system property
   * {@code retryagent.jdk17.home}, which the build sets from the root pom's {@code jdk17.home}.
   */
  public static Path jdk17() {
    return find(17, "retryagent.jdk17.home");
  }

  /**
   * JDK 25: the JDK running the tests when that is 25, else system property {@code
   * retryagent.jdk25.home}, which the build sets from the root pom's {@code jdk25.home}.
   */
  public static Path jdk25() {
    return find(25, "retryagent.jdk25.home");
  }

  // The paths live in one place, the root pom; a test run outside Maven passes them itself.
  private static Path find(int feature, String property) {
    if (Runtime.version().feature() == feature) {
      return Path.of(System.getProperty("java.home"));
    }
    String home = System.getProperty(property);
    if (home == null || home.isBlank()) {
      throw new IllegalStateException(
          "JDK "
              + feature
              + ": system property "
              + property
              + " is not set (the build sets it from the root pom's jdk"
              + feature
              + ".home, or the environment variable JDK"
              + feature
              + "_HOME)");
    }
    Path path = Path.of(home);
    if (!Files.isExecutable(path.resolve("bin/java"))) {
      throw new IllegalStateException(
          "JDK " + feature + " not found at " + path + " (" + property + ")");
    }
    return path;
  }

  /** JDK 17 and JDK 25, for parameterised tests. */
  public static List<Path> all() {
    return List.of(jdk17(), jdk25());
  }

  /** The feature version of the JDK at {@code home}, from its {@code release} file. */
  public static int featureOf(Path home) {
    try {
      for (String line : Files.readAllLines(home.resolve("release"))) {
        if (line.startsWith("JAVA_VERSION=")) {
          String v = line.substring("JAVA_VERSION=".length()).replace("\"", "");
          return Integer.parseInt(v.split("[.+-]")[0]);
        }
      }
    } catch (java.io.IOException | NumberFormatException e) {
      throw new IllegalStateException("cannot read the version of " + home, e);
    }
    throw new IllegalStateException("no JAVA_VERSION in " + home.resolve("release"));
  }
}
