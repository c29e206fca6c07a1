package dev.retryagent.engine;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retryagent.config.AgentConfig;
import dev.retryagent.config.ConfigLoader;
import dev.retryagent.policy.RetryPolicy;
import java.io.IOException;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * {@code retryOn.exceptions} names a configuration file gives are compared with the names of an
 * exception's classes and supertypes, never looked up, loaded or initialised (issue 14, Security:
 * nothing from the YAML runs code).
 */
class ExceptionNamesTest {
  private static final String TRIPWIRE = "dev.retryagent.engine.TripwireException";

  @Test
  void exceptionNamesAreComparedNeverLoaded() throws Exception {
    AgentConfig config =
        ConfigLoader.parse(
            String.join(
                "\n",
                "defaults: {retry: {retryOn: {exceptions: [" + TRIPWIRE + ", com.nowhere.Gone]}}}",
                "routes:",
                "  - name: r",
                "    match: {hosts: [a.example]}",
                "    retry: {retryOn: {exceptions: [" + TRIPWIRE + "]}}"),
            "t.yml",
            Map.of());
    RetryPolicy retry = config.resolve("GET", "a.example", 443, "/").retry();
    assertThat(retry.retryOnExceptions()).contains(TRIPWIRE);
    assertThat(config.defaultPolicy().retry().retryOnExceptions()).contains("com.nowhere.Gone");

    // Classifying exceptions of other classes walks their class chains by name only.
    assertThat(
            Classifier.isRetryableException(retry, Outcome.OTHER_EXCEPTION, new IOException("x")))
        .isFalse();
    assertThat(
            Classifier.isRetryableException(
                retry, Outcome.OTHER_EXCEPTION, new IllegalStateException(new IOException())))
        .isFalse();

    assertThat(TripwireException.Tripwire.TRIPPED).as("the named class was initialised").isFalse();
  }

  @Test
  void exceptionNamesAreNeverAskedOfAClassLoader() throws Exception {
    // The agent's classes defined by a loader that records every name asked of it: a lookup of a
    // named exception class, initialising or not, by any API, would be recorded.
    try (RecordingClassLoader loader =
        new RecordingClassLoader(
            Classifier.class.getProtectionDomain().getCodeSource().getLocation(),
            TripwireException.class.getProtectionDomain().getCodeSource().getLocation())) {
      Class<?> configLoader = loader.loadClass("dev.retryagent.config.ConfigLoader");
      Object config =
          configLoader
              .getMethod("parse", String.class, String.class, Map.class)
              .invoke(
                  null,
                  "defaults: {retry: {retryOn: {exceptions: ["
                      + TRIPWIRE
                      + ", com.nowhere.Gone, java.net.UnknownHostException]}}}",
                  "t.yml",
                  Map.of());
      Object policy = config.getClass().getMethod("defaultPolicy").invoke(config);
      Object retry = policy.getClass().getMethod("retry").invoke(policy);
      Class<?> outcome = loader.loadClass("dev.retryagent.engine.Outcome");
      Class<?> classifier = loader.loadClass("dev.retryagent.engine.Classifier");
      java.lang.reflect.Method classify =
          classifier.getMethod("isRetryableException", retry.getClass(), outcome, Throwable.class);
      classify.setAccessible(true); // Classifier is package-private, and this is another loader
      for (Object o : outcome.getEnumConstants()) {
        for (Throwable t :
            List.of(
                new IOException("x"),
                new java.net.UnknownHostException("h"),
                new IllegalStateException(new IOException()))) {
          classify.invoke(null, retry, o, t);
        }
      }

      assertThat(loader.asked())
          .as("the loader was asked for the agent's classes")
          .contains("dev.retryagent.engine.Classifier", "dev.retryagent.config.ConfigLoader")
          .as("never for a class the YAML names")
          .doesNotContain(TRIPWIRE, "com.nowhere.Gone");
    }
    assertThat(TripwireException.Tripwire.TRIPPED).isFalse();
  }
}
