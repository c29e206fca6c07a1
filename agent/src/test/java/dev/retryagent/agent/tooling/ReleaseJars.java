package dev.retryagent.agent.tooling;

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
import java.util.function.BiFunction;
import java.util.function.Predicate;
import java.util.jar.JarEntry;
import java.util.jar.JarFile;
import java.util.stream.Collectors;
import java.util.stream.Stream;

/**
 * For tests of a hook on many releases of a library (the jars the build copies): each release's
 * classes, the hooked ones rewritten, linked beside the others in a loader of their own, so that
 * the JVM verifies what the hook wrote for that very release.
 */
public final class ReleaseJars {
  private ReleaseJars() {}

  /** The jars directly in {@code dir}, by name. */
  public static List<Path> jarsIn(Path dir) throws IOException {
    try (Stream<Path> files = Files.list(dir)) {
      return files.filter(p -> p.toString().endsWith(".jar")).sorted().collect(Collectors.toList());
    }
  }

  /** The jars of {@code dir} over the platform loader: not the test's own copies of anything. */
  public static ClassLoader loaderOf(Path dir) throws IOException {
    List<URL> urls = new ArrayList<>();
    for (Path jar : jarsIn(dir)) {
      urls.add(jar.toUri().toURL());
    }
    return new URLClassLoader(urls.toArray(new URL[0]), ClassLoader.getPlatformClassLoader());
  }

  /** Every class of {@code jar} whose entry name starts with {@code prefix}, by binary name. */
  public static Map<String, byte[]> classesOf(Path jar, String prefix) throws IOException {
    Map<String, byte[]> classes = new HashMap<>();
    try (JarFile j = new JarFile(jar.toFile())) {
      Enumeration<JarEntry> entries = j.entries();
      while (entries.hasMoreElements()) {
        JarEntry e = entries.nextElement();
        String n = e.getName();
        if (n.startsWith(prefix) && n.endsWith(".class") && !n.startsWith("META-INF/")) {
          try (InputStream in = j.getInputStream(e)) {
            classes.put(n.substring(0, n.length() - 6).replace('/', '.'), in.readAllBytes());
          }
        }
      }
    }
    return classes;
  }

  /**
   * Rewrites the classes of {@code classes} that {@code hooked} names (by internal name) with
   * {@code rewrite} (internal name, bytes), defines the release in a loader over {@code
   * dependencies}, and links each rewritten class.
   *
   * @return the internal names rewritten; what the JVM refused is added to {@code failures}
   */
  public static List<String> rewriteAndLink(
      Map<String, byte[]> classes,
      Predicate<String> hooked,
      BiFunction<String, byte[], byte[]> rewrite,
      ClassLoader dependencies,
      String release,
      List<String> failures) {
    Map<String, byte[]> defined = new HashMap<>(classes);
    List<String> rewritten = new ArrayList<>();
    for (Map.Entry<String, byte[]> e : classes.entrySet()) {
      String internalName = e.getKey().replace('.', '/');
      if (hooked.test(internalName)) {
        defined.put(e.getKey(), rewrite.apply(internalName, e.getValue()));
        rewritten.add(internalName);
      }
    }
    ClassLoader own = new DefiningLoader(dependencies, defined);
    for (String internalName : rewritten) {
      String name = internalName.replace('/', '.');
      try {
        // links (and so verifies) without initialising
        Class.forName(name, false, own).getDeclaredMethods();
      } catch (LinkageError | ClassNotFoundException e) {
        failures.add(release + " " + name + ": " + e);
      }
    }
    return rewritten;
  }
}
