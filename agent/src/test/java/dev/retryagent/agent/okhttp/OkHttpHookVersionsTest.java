package dev.retryagent.agent.okhttp;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retryagent.agent.tooling.DefiningLoader;
import dev.retryagent.agent.tooling.TestBridge;
import java.io.IOException;
import java.io.InputStream;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Enumeration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import java.util.jar.JarEntry;
import java.util.jar.JarFile;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The OkHttp hooks ({@link OkHttpHook}) on the real classes of every OkHttp line the agent claims:
 * 3.12 and 3.14, 4.9 to 4.12, 5.1 to 5.5, each release's own jar (copied by the build into {@code
 * target/okhttp-versions}). In each, every class the agent rewrites is rewritten and then linked
 * beside its unchanged neighbours in a loader of its own, so the JVM verifies it: a hook whose
 * frames or handler did not fit one release would break that release's applications at their first
 * {@code OkHttpClient}, and fails here instead. {@link OkHttpHookTest} runs the hooks' behaviour on
 * 3.14; the integration tests run 3.14, 4.12 and 5.5 with the agent.
 */
class OkHttpHookVersionsTest {
  private static final List<String> HOOKED_KINDS =
      List.of(OkHttpHook.BUILDER, "call", OkHttpHook.DISPATCHER, OkHttpHook.SEND);

  @BeforeAll
  static void defineTheBridge() {
    TestBridge.define();
  }

  private static final Path DIR =
      Path.of(System.getProperty("okhttp.versions.dir", "target/okhttp-versions"));

  private static List<Path> jarsIn(Path dir) throws IOException {
    try (Stream<Path> files = Files.list(dir)) {
      return files.filter(p -> p.toString().endsWith(".jar")).sorted().collect(Collectors.toList());
    }
  }

  /**
   * okio 3 and Kotlin 2, which every release links against well enough to be verified (okio kept
   * its class names from 1.x), over the platform loader: not the test's own OkHttp 3.14 and okio 1.
   */
  private static ClassLoader dependencies() throws IOException {
    List<URL> urls = new ArrayList<>();
    for (Path jar : jarsIn(DIR.resolve("deps"))) {
      urls.add(jar.toUri().toURL());
    }
    return new URLClassLoader(urls.toArray(new URL[0]), ClassLoader.getPlatformClassLoader());
  }

  @Test
  void everyHookedClassOfEveryReleaseVerifiesRewritten() throws IOException {
    List<Path> jars = jarsIn(DIR);
    assertThat(jars).as("the releases the build copied").hasSizeGreaterThanOrEqualTo(9);
    ClassLoader dependencies = dependencies();
    List<String> failures = new ArrayList<>();
    for (Path jar : jars) {
      String release = jar.getFileName().toString();
      Map<String, byte[]> classes = classesOf(jar);
      Map<String, byte[]> rewritten = new HashMap<>(classes);
      TreeSet<String> kinds = new TreeSet<>();
      for (Map.Entry<String, byte[]> e : classes.entrySet()) {
        String internalName = e.getKey().replace('.', '/');
        if (OkHttpTransformer.isTarget(internalName)) {
          rewritten.put(e.getKey(), OkHttpHook.instrument(internalName, e.getValue()));
          boolean call =
              internalName.equals(OkHttpHook.CALL_3) || internalName.equals(OkHttpHook.CALL_4);
          kinds.add(call ? "call" : internalName);
        }
      }
      assertThat(kinds)
          .as(release + ": the classes hooked")
          .containsExactlyInAnyOrderElementsOf(HOOKED_KINDS);
      ClassLoader own = new DefiningLoader(dependencies, rewritten);
      for (String name : classes.keySet()) {
        if (!OkHttpTransformer.isTarget(name.replace('.', '/'))) {
          continue;
        }
        try {
          // links (and so verifies) without initialising
          Class.forName(name, false, own).getDeclaredMethods();
        } catch (LinkageError | ClassNotFoundException e) {
          failures.add(release + " " + name + ": " + e);
        }
      }
    }
    assertThat(failures).isEmpty();
  }

  /** Every class of OkHttp's own packages in {@code jar}, by binary name. */
  private static Map<String, byte[]> classesOf(Path jar) throws IOException {
    Map<String, byte[]> classes = new HashMap<>();
    try (JarFile j = new JarFile(jar.toFile())) {
      Enumeration<JarEntry> entries = j.entries();
      while (entries.hasMoreElements()) {
        JarEntry e = entries.nextElement();
        String n = e.getName();
        if (n.startsWith("okhttp3/") && n.endsWith(".class")) {
          try (InputStream in = j.getInputStream(e)) {
            classes.put(n.substring(0, n.length() - 6).replace('/', '.'), in.readAllBytes());
          }
        }
      }
    }
    return classes;
  }
}
