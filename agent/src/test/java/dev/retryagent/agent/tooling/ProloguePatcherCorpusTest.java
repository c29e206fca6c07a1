package dev.retryagent.agent.tooling;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.InputStream;
import java.net.URI;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileSystem;
import java.nio.file.FileSystems;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Enumeration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import java.util.jar.JarEntry;
import java.util.jar.JarFile;
import java.util.stream.Stream;
import net.bytebuddy.jar.asm.ClassReader;
import net.bytebuddy.jar.asm.ClassVisitor;
import net.bytebuddy.jar.asm.ClassWriter;
import net.bytebuddy.jar.asm.MethodVisitor;
import net.bytebuddy.jar.asm.Opcodes;
import net.bytebuddy.jar.asm.Type;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * {@link ProloguePatcher} and {@link BridgePrologue} (on ASM, its fallback and the Apache hook's
 * way) on every method they can take of real code, and the patcher's simpler hooks (OkHttp's: a
 * {@code tell} first, an {@code IOException} handler, a {@code tell} before a constructor returns)
 * on every method or constructor they fit: the JDK's own {@code java.net.http} implementation (what
 * the agent patches, compiled by the JDK's javac) and OkHttp 4.12 (Kotlin's compiler). Each class
 * gets the hook in every instance method it fits (a take-over: one that returns a reference or
 * nothing), is defined by a loader of its own beside its package's other patched classes, and is
 * linked, which verifies it: one wrong offset anywhere (a frame, a handler, an {@code
 * Uninitialized} entry) is a {@code VerifyError} or {@code ClassFormatError} here, where in the
 * agent it would have broken the application's class. {@link ProloguePatcherTest} runs the shapes
 * one by one; this finds the shapes no one thought of.
 */
class ProloguePatcherCorpusTest {
  private static final int HOOK = 31; // not a real hook's number

  @BeforeAll
  static void defineTheBridge() {
    TestBridge.define();
  }

  /** The JDK's client (17, 25): ~330 classes; java.* cannot be defined by a loader of ours. */
  private static Map<String, byte[]> jdkClient() throws IOException {
    Map<String, byte[]> classes = new LinkedHashMap<>();
    FileSystem jrt = FileSystems.getFileSystem(URI.create("jrt:/"));
    Path module = jrt.getPath("/modules/java.net.http");
    try (Stream<Path> files = Files.walk(module)) {
      for (Path p : (Iterable<Path>) files::iterator) {
        String path = module.relativize(p).toString();
        if (path.endsWith(".class") && path.startsWith("jdk/internal/net/http/")) {
          classes.put(nameOf(path), Files.readAllBytes(p));
        }
      }
    }
    return classes;
  }

  /** OkHttp 4.12 (Kotlin's compiler): ~200 classes. */
  private static Map<String, byte[]> okhttp() throws IOException, URISyntaxException {
    Map<String, byte[]> classes = new LinkedHashMap<>();
    Path jar =
        Path.of(
            okhttp3.OkHttpClient.class.getProtectionDomain().getCodeSource().getLocation().toURI());
    try (JarFile j = new JarFile(jar.toFile())) {
      Enumeration<JarEntry> entries = j.entries();
      while (entries.hasMoreElements()) {
        JarEntry e = entries.nextElement();
        if (e.getName().endsWith(".class") && e.getName().startsWith("okhttp3/")) {
          try (InputStream in = j.getInputStream(e)) {
            classes.put(nameOf(e.getName()), in.readAllBytes());
          }
        }
      }
    }
    return classes;
  }

  private static final ClassLoader JDK_PARENT = ClassLoader.getPlatformClassLoader();
  private static final ClassLoader OKHTTP_PARENT = ProloguePatcherCorpusTest.class.getClassLoader();

  @Test
  void everyMethodOfTheJdksHttpClientVerifiesWithThePrologue() throws IOException {
    Map<String, byte[]> classes = jdkClient();
    for (Way way : Way.values()) {
      Result r = patchAndLink(classes, JDK_PARENT, way, ProloguePatcherCorpusTest::takeOvers);
      // of ~330 classes, ~200 with ~1,500 methods taken (JDK 17, 25)
      assertThat(r.classesPatched).as(way + ": classes patched").isGreaterThan(200);
      assertThat(r.methodsPatched).as(way + ": methods patched").isGreaterThan(1000);
      assertThat(r.failures).as(way.toString()).isEmpty();
    }
  }

  @Test
  void everyMethodOfOkHttpVerifiesWithThePrologue() throws IOException, URISyntaxException {
    Map<String, byte[]> classes = okhttp();
    for (Way way : Way.values()) {
      Result r = patchAndLink(classes, OKHTTP_PARENT, way, ProloguePatcherCorpusTest::takeOvers);
      // of ~200 classes, ~140 with ~900 methods taken
      assertThat(r.classesPatched).as(way + ": classes patched").isGreaterThan(100);
      assertThat(r.methodsPatched).as(way + ": methods patched").isGreaterThan(500);
      assertThat(r.failures).as(way.toString()).isEmpty();
    }
  }

  @Test
  void aTellFirstInEveryMethodVerifies() throws IOException, URISyntaxException {
    eachVerifies(Each.TELL, 800, 600);
  }

  /**
   * The handler after the code, over all of it, in every instance method whose first parameter is
   * an object (~370 and ~250 methods): a class with a method that stores into {@code this} or that
   * parameter is declined, every other one must verify.
   */
  @Test
  void anIoExceptionHandlerOverEveryMethodVerifies() throws IOException, URISyntaxException {
    eachVerifies(Each.HANDLER, 300, 200);
  }

  /**
   * A tell before every constructor returns: a class whose constructors each end in their only
   * {@code return} (~285 of ~330, ~175 of ~200; one target a class) is patched and must verify; one
   * with another shape is declined (for ASM).
   */
  @Test
  void aTellBeforeEveryConstructorReturnsVerifies() throws IOException, URISyntaxException {
    eachVerifies(Each.RETURN, 200, 120);
  }

  /** {@code kind} in both corpora: at least so many targets patched, and every class verified. */
  private static void eachVerifies(Each kind, int jdkAtLeast, int okhttpAtLeast)
      throws IOException, URISyntaxException {
    Result jdk = patchAndLink(jdkClient(), JDK_PARENT, Way.PATCHER, c -> each(c, kind));
    Result ok = patchAndLink(okhttp(), OKHTTP_PARENT, Way.PATCHER, c -> each(c, kind));
    assertThat(jdk.methodsPatched).as("java.net.http").isGreaterThan(jdkAtLeast);
    assertThat(ok.methodsPatched).as("OkHttp").isGreaterThan(okhttpAtLeast);
    assertThat(jdk.failures).isEmpty();
    assertThat(ok.failures).isEmpty();
  }

  private static String nameOf(String path) {
    return path.substring(0, path.length() - ".class".length()).replace('/', '.');
  }

  /**
   * The two ways the agent writes a prologue: {@link ProloguePatcher} (the fast path, for the JDK's
   * facade) and {@link BridgePrologue} on ASM (its fallback, and the OkHttp and Apache hooks' way),
   * the class read and written as the hooks do (frames not expanded, the reader's pool kept).
   */
  private enum Way {
    PATCHER {
      @Override
      byte[] patch(byte[] classfile, List<ProloguePatcher.Target> targets) {
        return ProloguePatcher.patch(classfile, targets);
      }
    },
    ASM {
      @Override
      byte[] patch(byte[] classfile, List<ProloguePatcher.Target> targets) {
        ClassReader reader = new ClassReader(classfile);
        ClassWriter writer = new ClassWriter(reader, 0);
        reader.accept(
            new ClassVisitor(Opcodes.ASM9, writer) {
              @Override
              public MethodVisitor visitMethod(
                  int access, String name, String desc, String signature, String[] exceptions) {
                MethodVisitor mv = super.visitMethod(access, name, desc, signature, exceptions);
                for (ProloguePatcher.Target t : targets) {
                  if (t.name.equals(name) && t.desc.equals(desc)) {
                    return new BridgePrologue(mv, t.hook, t.argumentSlots.length, t.returnType) {
                      @Override
                      protected void pushArguments(MethodVisitor m) {
                        for (int slot : t.argumentSlots) {
                          if (slot < 0) {
                            m.visitInsn(Opcodes.ACONST_NULL);
                          } else {
                            m.visitVarInsn(Opcodes.ALOAD, slot);
                          }
                        }
                      }
                    };
                  }
                }
                return mv;
              }
            },
            0);
        return writer.toByteArray();
      }
    };

    /** {@code classfile} with the prologue in each of {@code targets}; null when declined. */
    abstract byte[] patch(byte[] classfile, List<ProloguePatcher.Target> targets);
  }

  /** What a corpus came to. */
  private static final class Result {
    int classesPatched;
    int methodsPatched;
    final List<String> failures = new ArrayList<>();
  }

  /**
   * Patches every class of {@code classes} (name to bytes) that has a method to take {@code way},
   * defines them all in one loader (the rest from {@code parent}) and links each: a patched class
   * the JVM refuses is a failure, naming the class and what was thrown.
   */
  private static Result patchAndLink(
      Map<String, byte[]> classes,
      ClassLoader parent,
      Way way,
      Function<byte[], List<ProloguePatcher.Target>> targetsOf) {
    Result r = new Result();
    Map<String, byte[]> defined = new LinkedHashMap<>();
    for (Map.Entry<String, byte[]> e : classes.entrySet()) {
      List<ProloguePatcher.Target> targets = targetsOf.apply(e.getValue());
      byte[] patched = targets.isEmpty() ? null : way.patch(e.getValue(), targets);
      if (patched != null) {
        if (!new String(patched, StandardCharsets.ISO_8859_1).contains(BridgePrologue.BRIDGE)) {
          r.failures.add(e.getKey() + ": no call to the bridge written");
        }
        r.classesPatched++;
        r.methodsPatched += targets.size();
      }
      defined.put(e.getKey(), patched != null ? patched : e.getValue());
    }
    ClassLoader own = new DefiningLoader(parent, defined);
    for (String name : defined.keySet()) {
      try {
        // getDeclaredMethods links the class (HotSpot), and linking verifies it; nothing runs
        Class.forName(name, false, own).getDeclaredMethods();
      } catch (VerifyError | ClassFormatError e) {
        r.failures.add(name + ": " + e);
      } catch (LinkageError | ClassNotFoundException e) {
        // not ours: a class that needs what this loader cannot give it (another module's
        // internals, an optional dependency absent here) fails the same way unpatched
        if (!failsUnpatched(name, classes, parent)) {
          r.failures.add(name + ": " + e);
        }
      }
    }
    return r;
  }

  private static boolean failsUnpatched(
      String name, Map<String, byte[]> classes, ClassLoader parent) {
    ClassLoader plain = new DefiningLoader(parent, classes);
    try {
      Class.forName(name, false, plain).getDeclaredMethods();
      return false;
    } catch (LinkageError | ClassNotFoundException e) {
      return true;
    }
  }

  /**
   * Every method of the class that the patcher can take (as the agent's hooks are): an instance
   * method with code and a reference or {@code void} result, not a constructor; the bridge gets
   * {@code this} and the first argument when it is a reference.
   */
  private static List<ProloguePatcher.Target> takeOvers(byte[] classfile) {
    List<ProloguePatcher.Target> targets = new ArrayList<>();
    new ClassReader(classfile)
        .accept(
            new ClassVisitor(Opcodes.ASM9) {
              @Override
              public MethodVisitor visitMethod(
                  int access, String name, String desc, String signature, String[] exceptions) {
                if ((access & (Opcodes.ACC_ABSTRACT | Opcodes.ACC_NATIVE | Opcodes.ACC_STATIC)) != 0
                    || name.startsWith("<")) {
                  return null;
                }
                Type result = Type.getReturnType(desc);
                String returnType;
                if (result.getSort() == Type.VOID) {
                  returnType = null;
                } else if (result.getSort() == Type.OBJECT || result.getSort() == Type.ARRAY) {
                  returnType = result.getInternalName();
                } else {
                  return null;
                }
                boolean isStatic = (access & Opcodes.ACC_STATIC) != 0;
                Type[] args = Type.getArgumentTypes(desc);
                int first = isStatic ? 0 : 1;
                int argument =
                    args.length > 0
                            && (args[0].getSort() == Type.OBJECT || args[0].getSort() == Type.ARRAY)
                        ? first
                        : -1;
                targets.add(
                    new ProloguePatcher.Target(
                        name, desc, HOOK, new int[] {isStatic ? -1 : 0, argument}, returnType));
                return null;
              }
            },
            ClassReader.SKIP_CODE);
    return targets;
  }

  /** The simpler hooks, each in every method of a class it fits. */
  private enum Each {
    TELL,
    HANDLER,
    RETURN
  }

  private static List<ProloguePatcher.Target> each(byte[] classfile, Each kind) {
    List<ProloguePatcher.Target> targets = new ArrayList<>();
    boolean[] constructor = new boolean[1];
    new ClassReader(classfile)
        .accept(
            new ClassVisitor(Opcodes.ASM9) {
              @Override
              public MethodVisitor visitMethod(
                  int access, String name, String desc, String signature, String[] exceptions) {
                if (name.equals("<init>")) {
                  constructor[0] = true;
                  return null;
                }
                if ((access & (Opcodes.ACC_ABSTRACT | Opcodes.ACC_NATIVE | Opcodes.ACC_STATIC)) != 0
                    || name.startsWith("<")) {
                  return null;
                }
                if (kind == Each.TELL) {
                  targets.add(ProloguePatcher.Target.tell(name, desc, HOOK, 0));
                } else if (kind == Each.HANDLER && desc.startsWith("(L")) {
                  targets.add(
                      ProloguePatcher.Target.tellAndOnIoException(name, desc, HOOK, 1, HOOK));
                }
                return null;
              }
            },
            ClassReader.SKIP_CODE);
    if (kind == Each.RETURN && constructor[0]) {
      targets.add(ProloguePatcher.Target.tellBeforeReturn(HOOK));
    }
    return targets;
  }
}
