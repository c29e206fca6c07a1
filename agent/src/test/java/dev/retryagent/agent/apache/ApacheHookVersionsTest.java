package dev.retryagent.agent.apache;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retryagent.agent.tooling.ReleaseJars;
import dev.retryagent.agent.tooling.TestBridge;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.function.BiFunction;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The Apache HttpClient hooks ({@link ApacheHook}) on the real classes of the releases the agent
 * rewrites: 4.5.3 to 4.5.14 and 5.0 to 5.6 (5.0.x's builder is rewritten, and then left alone by
 * {@link ApacheLoaders}), each release's own jar (copied by the build into {@code
 * target/apache-versions}, with one httpcore per line). In each, every class the agent rewrites is
 * rewritten and linked beside its unchanged neighbours in a loader of its own, so the JVM verifies
 * it (4.5.x's class files are version 50, which the JVM, here as in production, verifies again by
 * type inference when a stack map does not fit; 5.x's are checked frame by frame). The integration
 * tests run 4.5.14, 5.1.3 and 5.6.5 with the agent, and 4.5.3 in {@code ApacheKeptSocketTimeoutIT}.
 */
class ApacheHookVersionsTest {
  private static final Path DIR =
      Path.of(System.getProperty("apache.versions.dir", "target/apache-versions"));

  @BeforeAll
  static void defineTheBridge() {
    TestBridge.define();
  }

  @Test
  void everyHookedClassOfEveryReleaseVerifiesPatched() throws IOException {
    // The patcher, without ASM: the path every release takes (none left to ASM).
    everyHookedClassVerifies(
        (internalName, bytes) -> {
          byte[] patched = ApacheHook.patch(internalName, bytes);
          if (patched == null) {
            throw new IllegalStateException("the patcher left " + internalName + " to ASM");
          }
          return patched;
        });
  }

  @Test
  void everyHookedClassOfEveryReleaseVerifiesWrittenByAsm() throws IOException {
    everyHookedClassVerifies(ApacheHook.WithAsm::instrument);
  }

  private static void everyHookedClassVerifies(BiFunction<String, byte[], byte[]> rewrite)
      throws IOException {
    List<Path> jars = ReleaseJars.jarsIn(DIR);
    assertThat(jars).as("the releases the build copied").hasSizeGreaterThanOrEqualTo(11);
    ClassLoader core4 = ReleaseJars.loaderOf(DIR.resolve("deps4"));
    ClassLoader core5 = ReleaseJars.loaderOf(DIR.resolve("deps5"));
    List<String> failures = new ArrayList<>();
    for (Path jar : jars) {
      String release = jar.getFileName().toString();
      boolean five = release.startsWith("httpclient5-");
      List<String> rewritten =
          ReleaseJars.rewriteAndLink(
              ReleaseJars.classesOf(jar, five ? "org/apache/hc/" : "org/apache/http/"),
              ApacheTransformer::isTarget,
              rewrite,
              five ? core5 : core4,
              release,
              failures);
      if (five) {
        assertThat(rewritten)
            .as(release)
            .containsExactlyInAnyOrder(
                ApacheHook.BUILDER_5, ApacheHook.BUILDER_5_ASYNC, ApacheHook.BUILDER_5_H2);
      } else {
        assertThat(rewritten)
            .as(release)
            .containsExactlyInAnyOrder(
                ApacheHook.BUILDER_4,
                ApacheHook.INTERNAL_4,
                ApacheHook.MINIMAL_4,
                ApacheHook.ABSTRACT_4);
      }
    }
    assertThat(failures).isEmpty();
  }
}
