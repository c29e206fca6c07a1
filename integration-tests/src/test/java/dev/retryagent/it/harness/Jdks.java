package dev.retryagent.it.harness;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/** The JDKs every agent scenario runs on. */
public final class Jdks {
  private Jdks() {}

  /** The JDK running the tests (the build's JDK 17). */
  public static Path jdk17() {
    Path home = Path.of(System.getProperty("java.home"));
    if (Runtime.version().feature() != 17) {
      throw new IllegalStateException("tests must run on JDK 17, this is " + Runtime.version());
    }
    return home;
  }

  /** Temurin 25, from system property {@code retryagent.jdk25.home} (set by the build). */
  public static Path jdk25() {
    String home = System.getProperty("retryagent.jdk25.home", "/usr/lib/jvm/temurin-25-jdk-amd64");
    Path path = Path.of(home);
    if (!Files.isExecutable(path.resolve("bin/java"))) {
      throw new IllegalStateException("JDK 25 not found at " + home + " (retryagent.jdk25.home)");
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
