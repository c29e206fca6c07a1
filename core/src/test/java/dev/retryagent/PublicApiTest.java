package dev.retryagent;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retryagent.engine.RetryEngine;
import java.io.IOException;
import java.lang.reflect.Constructor;
import java.lang.reflect.Executable;
import java.lang.reflect.Field;
import java.lang.reflect.Member;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.lang.reflect.Type;
import java.lang.reflect.TypeVariable;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.TreeSet;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Pins core's public API: every public type of a package outside {@code dev.retryagent.internal},
 * with its public and protected members, as written in {@code core/api/public-api.txt}. A type or
 * member added, removed or changed without that file changing fails here, so the API only grows on
 * purpose, in a diff a reviewer sees. After a deliberate change, rewrite the file with
 *
 * <pre>
 *   mvn -B -ntp -pl core test -Dtest=PublicApiTest -Dapi.update=true
 * </pre>
 *
 * and commit it with the change (docs/library.md says which of these types are API and which SPI).
 */
class PublicApiTest {
  private static final String INTERNAL = "dev.retryagent.internal";
  private static Path classes;
  private static Path module;

  @BeforeAll
  static void findTheCompiledClasses() throws URISyntaxException {
    classes =
        Path.of(RetryEngine.class.getProtectionDomain().getCodeSource().getLocation().toURI());
    // core/target/classes
    module = classes.getParent().getParent();
  }

  @Test
  void publicApiIsExactlyTheOneWrittenDown() throws IOException {
    String actual = dump();
    Path file = module.resolve("api/public-api.txt");
    if (Boolean.getBoolean("api.update")) {
      Files.createDirectories(file.getParent());
      Files.writeString(file, actual, StandardCharsets.UTF_8);
    }
    String expected = Files.readString(file, StandardCharsets.UTF_8);
    assertThat(actual)
        .as(
            "core's public API differs from %s; if the change is deliberate, run `mvn -B -ntp -pl"
                + " core test -Dtest=PublicApiTest -Dapi.update=true` and commit the file",
            file)
        .isEqualTo(expected);
  }

  @Test
  void noPublicSignatureNamesAnInternalType() throws IOException {
    List<String> leaks =
        dump().lines().filter(l -> l.contains(INTERNAL + ".")).collect(Collectors.toList());
    assertThat(leaks).as("API members whose signature names an internal type").isEmpty();
  }

  @Test
  void everyPackageOfCoreSaysWhatItIsAndWhatItPromises() throws IOException {
    Path sources = module.resolve("src/main/java");
    List<Path> undocumented;
    try (Stream<Path> dirs = Files.walk(sources)) {
      undocumented =
          dirs.filter(Files::isDirectory)
              .filter(PublicApiTest::holdsJava)
              .filter(d -> !Files.exists(d.resolve("package-info.java")))
              .map(sources::relativize)
              .collect(Collectors.toList());
    }
    assertThat(undocumented).as("packages without package-info.java").isEmpty();
  }

  private static boolean holdsJava(Path dir) {
    try (Stream<Path> files = Files.list(dir)) {
      return files.anyMatch(f -> f.toString().endsWith(".java"));
    } catch (IOException e) {
      throw new IllegalStateException(e);
    }
  }

  /** The API as text: one line per type, then one indented line per member, all sorted. */
  private static String dump() throws IOException {
    List<Class<?>> types = new ArrayList<>();
    try (Stream<Path> files = Files.walk(classes.resolve("dev/retryagent"))) {
      for (Path f : (Iterable<Path>) files::iterator) {
        String name = classes.relativize(f).toString().replace('\\', '/');
        if (!name.endsWith(".class") || name.endsWith("package-info.class")) {
          continue;
        }
        String binary = name.substring(0, name.length() - ".class".length()).replace('/', '.');
        if (binary.startsWith(INTERNAL + ".")) {
          continue;
        }
        Class<?> type = load(binary);
        if (isApi(type)) {
          types.add(type);
        }
      }
    }
    types.sort((a, b) -> a.getName().compareTo(b.getName()));
    StringBuilder out = new StringBuilder();
    out.append("# core's public API, pinned by PublicApiTest (see there to update). Generated.\n");
    for (Class<?> type : types) {
      out.append('\n').append(header(type)).append('\n');
      TreeSet<String> members = new TreeSet<>();
      for (Field f : type.getDeclaredFields()) {
        if (visible(f)) {
          members.add(modifiers(f) + f.getGenericType().getTypeName() + " " + f.getName());
        }
      }
      for (Constructor<?> c : type.getDeclaredConstructors()) {
        if (visible(c)) {
          members.add(signature(c, "", type.getSimpleName()));
        }
      }
      for (Method m : type.getDeclaredMethods()) {
        if (visible(m) && !m.isBridge()) {
          members.add(signature(m, m.getGenericReturnType().getTypeName() + " ", m.getName()));
        }
      }
      for (String m : members) {
        out.append("  ").append(m).append('\n');
      }
    }
    return out.toString();
  }

  private static Class<?> load(String binaryName) {
    try {
      return Class.forName(binaryName, false, PublicApiTest.class.getClassLoader());
    } catch (ClassNotFoundException e) {
      throw new IllegalStateException(e);
    }
  }

  /** Reachable from another package: public, and so is every type it is nested in. */
  private static boolean isApi(Class<?> type) {
    if (type.isSynthetic() || type.isAnonymousClass() || type.isLocalClass()) {
      return false;
    }
    for (Class<?> t = type; t != null; t = t.getDeclaringClass()) {
      if (!Modifier.isPublic(t.getModifiers())) {
        return false;
      }
    }
    return true;
  }

  private static boolean visible(Member m) {
    int mod = m.getModifiers();
    if (m.isSynthetic()) {
      return false;
    }
    // protected members of a final class cannot be reached by a subclass
    return Modifier.isPublic(mod)
        || (Modifier.isProtected(mod) && !Modifier.isFinal(m.getDeclaringClass().getModifiers()));
  }

  private static String header(Class<?> type) {
    String kind =
        type.isAnnotation()
            ? "@interface"
            : type.isInterface() ? "interface" : type.isEnum() ? "enum" : "class";
    int mod = type.getModifiers();
    if (type.isInterface()) {
      mod &= ~(Modifier.ABSTRACT | Modifier.INTERFACE);
    }
    if (type.isEnum()) {
      mod &= ~Modifier.FINAL;
    }
    StringBuilder s = new StringBuilder();
    s.append(Modifier.toString(mod & ~Modifier.STATIC)).append(' ').append(kind).append(' ');
    s.append(type.getName()).append(typeParameters(type.getTypeParameters()));
    Type superclass = type.getGenericSuperclass();
    if (superclass != null && superclass != Object.class && !type.isEnum()) {
      s.append(" extends ").append(superclass.getTypeName());
    }
    Type[] interfaces = type.getGenericInterfaces();
    if (interfaces.length > 0) {
      s.append(type.isInterface() ? " extends " : " implements ").append(names(interfaces));
    }
    return s.toString();
  }

  private static String signature(Executable e, String returns, String name) {
    String s =
        modifiers(e)
            + (e.getTypeParameters().length == 0 ? "" : typeParameters(e.getTypeParameters()) + " ")
            + returns
            + name
            + "("
            + names(e.getGenericParameterTypes())
            + ")";
    if (e.isVarArgs()) {
      s = s.substring(0, s.lastIndexOf("[])")) + "...)";
    }
    Type[] exceptions = e.getGenericExceptionTypes();
    return exceptions.length == 0 ? s : s + " throws " + names(exceptions);
  }

  /** The member's modifiers followed by a space, or nothing; {@code default} for those methods. */
  private static String modifiers(Member m) {
    int mod = m.getModifiers();
    boolean inInterface = m.getDeclaringClass().isInterface();
    String prefix = "";
    if (m instanceof Method) {
      // synchronized is how a method keeps its contract, not part of it
      mod &= Modifier.methodModifiers() & ~Modifier.SYNCHRONIZED;
      if (inInterface) {
        mod &= ~Modifier.ABSTRACT;
        prefix = ((Method) m).isDefault() ? "default " : "";
      }
    } else if (m instanceof Field) {
      mod &= Modifier.fieldModifiers();
    } else {
      mod &= Modifier.constructorModifiers();
    }
    if (inInterface) {
      mod &= ~Modifier.PUBLIC;
    }
    String s = Modifier.toString(mod);
    return prefix + (s.isEmpty() ? "" : s + " ");
  }

  private static String typeParameters(TypeVariable<?>[] variables) {
    if (variables.length == 0) {
      return "";
    }
    return Arrays.stream(variables)
        .map(
            v ->
                v.getBounds().length == 1 && v.getBounds()[0] == Object.class
                    ? v.getName()
                    : v.getName() + " extends " + names(v.getBounds()).replace(", ", " & "))
        .collect(Collectors.joining(", ", "<", ">"));
  }

  private static String names(Type[] types) {
    return Arrays.stream(types).map(Type::getTypeName).collect(Collectors.joining(", "));
  }
}
