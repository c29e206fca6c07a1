package dev.retryagent.config;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Collectors;
import java.util.stream.Stream;

/** The repository's config/ directory, found from the core module. */
final class ConfigFiles {
  static final Path CONFIG_DIR = Path.of("..", "config");
  static final Path REFERENCE = CONFIG_DIR.resolve("reference.yml");

  private ConfigFiles() {}

  /** Every YAML file in config/, sorted by name. */
  static List<Path> yamlFiles() {
    try (Stream<Path> files = Files.list(CONFIG_DIR)) {
      return files
          .filter(p -> p.getFileName().toString().matches(".*\\.ya?ml"))
          .sorted()
          .collect(Collectors.toList());
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  static String read(Path file) {
    try {
      return Files.readString(file);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
