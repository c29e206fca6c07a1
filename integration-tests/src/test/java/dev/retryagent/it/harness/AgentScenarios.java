package dev.retryagent.it.harness;

import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Named;
import org.junit.jupiter.params.provider.Arguments;

/** Sources for {@code @MethodSource}: every scenario runs on each of these JDKs. */
public final class AgentScenarios {
  private AgentScenarios() {}

  /** JDK 17 and JDK 25, named for test reports. */
  public static Stream<Named<Path>> jdks() {
    return Stream.of(Named.of("JDK 17", Jdks.jdk17()), Named.of("JDK 25", Jdks.jdk25()));
  }

  /** Each JDK (as {@link #jdks()}) with each of {@code values} (named by its toString). */
  public static Stream<Arguments> jdksWith(List<?> values) {
    return jdks().flatMap(jdk -> values.stream().map(v -> Arguments.of(jdk, v)));
  }
}
