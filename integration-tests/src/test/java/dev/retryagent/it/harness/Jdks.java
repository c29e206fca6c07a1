package dev.retryagent.it.harness;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/** The JDKs every agent scenario runs on. */
public final class Jdks {
  private Jdks() {}

  /**
   * JDK 17: the JDK running the tests when that is 17 (the default build), else system property
   * {@code retryagent.jdk17.home} (set by the build).
   */
  public static Path jdk17() {
    return find(17, "retryagent.jdk17.home", "/usr/lib/jvm/java-17-openjdk-amd64");
  }

  /**
   * Temurin 25: the JDK running the tests when that is 25, else system property {@code
   * retryagent.jdk25.home} (set by the build).
   */
  public static Path jdk25() {
    return find(25, "retryagent.jdk25.home", "/usr/lib/jvm/temurin-25-jdk-amd64");
  }

  private static Path find(int feature, String property, String fallback) {
    if (Runtime.version().feature() == feature) {
      return Path.of(System.getProperty("java.home"));
    }
    Path path = Path.of(System.getProperty(property, fallback));
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
