package dev.retryagent.agent.okhttp;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retryagent.agent.tooling.ReleaseJars;
import dev.retryagent.agent.tooling.TestBridge;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.TreeSet;
import java.util.function.BiFunction;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The OkHttp hooks ({@link OkHttpHook}) on the real classes of every OkHttp line the agent claims,
 * 3.14, 4.9 to 4.12, 5.1 to 5.5, and of 3.12 (which the transformer leaves alone: {@link
 * OkHttpTransformerTest}; its classes still verify patched), each release's own jar (copied by the
 * build into {@code target/okhttp-versions}). In each, every class the agent rewrites is rewritten
 * and then linked beside its unchanged neighbours in a loader of its own, so the JVM verifies it: a
 * hook whose frames or handler did not fit one release would break that release's applications at
 * their first {@code OkHttpClient}, and fails here instead. {@link OkHttpHookTest} runs the hooks'
 * behaviour on 3.14; the integration tests run 3.14, 4.12 and 5.5 with the agent.
 */
class OkHttpHookVersionsTest {
  private static final Path DIR =
      Path.of(System.getProperty("okhttp.versions.dir", "target/okhttp-versions"));

  @BeforeAll
  static void defineTheBridge() {
    TestBridge.define();
  }

  @Test
  void everyHookedClassOfEveryReleaseVerifiesPatched() throws IOException {
    // The patcher, without ASM: the path every release takes (none left to ASM).
    everyHookedClassVerifies(
        (internalName, bytes) -> {
          byte[] patched = OkHttpHook.patch(internalName, bytes);
          if (patched == null) {
            throw new IllegalStateException("the patcher left " + internalName + " to ASM");
          }
          return patched;
        });
  }

  @Test
  void everyHookedClassOfEveryReleaseVerifiesWrittenByAsm() throws IOException {
    everyHookedClassVerifies(OkHttpHook.WithAsm::instrument);
  }

  private static void everyHookedClassVerifies(BiFunction<String, byte[], byte[]> rewrite)
      throws IOException {
    List<Path> jars = ReleaseJars.jarsIn(DIR);
    assertThat(jars).as("the releases the build copied").hasSizeGreaterThanOrEqualTo(9);
    // okio 3 and Kotlin 2: every release links against them well enough to be verified (okio
    // kept its class names from 1.x)
    ClassLoader dependencies = ReleaseJars.loaderOf(DIR.resolve("deps"));
    List<String> failures = new ArrayList<>();
    for (Path jar : jars) {
      String release = jar.getFileName().toString();
      List<String> rewritten =
          ReleaseJars.rewriteAndLink(
              ReleaseJars.classesOf(jar, "okhttp3/"),
              OkHttpTransformer::isTarget,
              rewrite,
              dependencies,
              release,
              failures);
      TreeSet<String> kinds = new TreeSet<>();
      for (String internalName : rewritten) {
        boolean call =
            internalName.equals(OkHttpHook.CALL_3) || internalName.equals(OkHttpHook.CALL_4);
        kinds.add(call ? "call" : internalName);
      }
      assertThat(kinds)
          .as(release + ": the classes hooked")
          .containsExactlyInAnyOrder(
              OkHttpHook.BUILDER, "call", OkHttpHook.DISPATCHER, OkHttpHook.SEND);
    }
    assertThat(failures).isEmpty();
  }
}
