package dev.retryagent.it;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retryagent.it.apps.MainStartApp;
import dev.retryagent.it.harness.ForkedJvm;
import dev.retryagent.it.harness.Jdks;
import java.io.IOException;
import java.io.InputStream;
import java.lang.reflect.Method;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.jar.JarEntry;
import java.util.jar.JarFile;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Named;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.objectweb.asm.ClassReader;
import org.objectweb.asm.ClassVisitor;
import org.objectweb.asm.Handle;
import org.objectweb.asm.MethodVisitor;
import org.objectweb.asm.Opcodes;

/**
 * "No lambdas, no {@code invokedynamic} before {@code main}" as a check rather than a comment.
 * Lambdas, method references and indy string concatenation each spin method-handle classes when
 * first run (tens of ms at start-up, docs/BENCHMARKS.md), and a class that holds one is one call
 * away from running it. So every class of ours (the relocated libraries included) that a real
 * start-up loads before the application's {@code main} is read from the agent jar and must hold no
 * {@code invokedynamic} instruction.
 *
 * <p>The class list comes from {@code -Xlog:class+load} of a JVM started with the built jar, with
 * the built-in defaults and with {@code config/llm-provider.yml}; {@link MainStartApp} marks the
 * moment {@code main} starts.
 */
class NoInvokedynamicBeforeMainIT {
  private static final Pattern LOADED = Pattern.compile("\\[class,load\\s*\\]\\s+(\\S+)\\s");

  @TempDir Path dir;

  static Stream<Arguments> startUps() {
    Path file = Path.of(System.getProperty("retryagent.config.dir"), "llm-provider.yml");
    List<Arguments> all = new ArrayList<>();
    for (Named<Path> jdk :
        List.of(Named.of("JDK 17", Jdks.jdk17()), Named.of("JDK 25", Jdks.jdk25()))) {
      all.add(Arguments.of(jdk, Named.of("built-in defaults", null)));
      all.add(Arguments.of(jdk, Named.of("config/llm-provider.yml", file.toString())));
    }
    return all.stream();
  }

  @ParameterizedTest(name = "{0}, {1}")
  @MethodSource("startUps")
  void noClassOfOursLoadedBeforeMainHoldsInvokedynamic(Path jdk, String config) throws IOException {
    Path log = dir.resolve("class-load.log");
    ForkedJvm.Result r =
        ForkedJvm.builder(jdk)
            .agentArgs(config)
            .jvmArgs("-Xlog:class+load=info:file=" + log)
            .mainClass(MainStartApp.class)
            .run();
    assertThat(r.value("started")).as(r.describe()).isEqualTo("true");
    assertThat(r.stderr()).as(r.describe()).doesNotContain("not installed");

    List<String> ours = oursLoadedBefore(log, MainStartApp.Started.class.getName());
    // the log was read: the start-up path is in it
    assertThat(ours)
        .contains(
            "dev.retryagent.launcher.RetryAgent",
            "dev.retryagent.launcher.AgentStarter",
            "dev.retryagent.agent.tooling.BridgeInstaller",
            "java.lang.RetryAgentBridge",
            "dev.retryagent.agent.Installer",
            "dev.retryagent.agent.runtime.AgentRuntime",
            "dev.retryagent.agent.jdk.JdkHttpTransformer",
            "dev.retryagent.agent.okhttp.OkHttpTransformer");
    if (config != null) {
      // The file was read, by our own reader: SnakeYAML is loaded only for a file outside the
      // subset that reader knows (or one with a problem), and llm-provider.yml is neither.
      assertThat(ours)
          .contains("dev.retryagent.config.YamlSubsetReader")
          .noneMatch(c -> c.startsWith("dev.retryagent.shaded.snakeyaml."));
      // The watcher's start, 10 s ahead, waits on a thread of its own, not on the shared
      // scheduler's pool: ~43 classes fewer before main (issue 13, twelfth pass).
      assertThat(ours)
          .contains("dev.retryagent.agent.runtime.StartUpTimer")
          .doesNotContain("dev.retryagent.engine.SharedScheduler");
      // The watcher itself is made when the watching starts, on that thread (issue 13,
      // thirty-first pass).
      assertThat(ours)
          .doesNotContain(
              "dev.retryagent.agent.runtime.ConfigReloader",
              "dev.retryagent.agent.runtime.FileFingerprint");
    }

    Set<String> found = new TreeSet<>();
    try (AgentJarClasses jar = new AgentJarClasses(ForkedJvm.agentJar())) {
      for (String name : ours) {
        found.addAll(invokedynamics(jar.bytes(name), name));
      }
    }
    assertThat(found)
        .as(
            "invokedynamic in classes loaded before main (use a named class instead of a lambda"
                + " or method reference; the agent compiles with -XDstringConcat=inline)")
        .isEmpty();
  }

  @Test
  void withoutAFileNeitherThePoliciesNorTheSchedulerAreMadeBeforeMain() throws IOException {
    // The built-in default policy is made at the first call, as the engine is (AgentConfig), and
    // the shared scheduler when something is first scheduled (AgentRuntime): ~25 classes fewer
    // before main for a service without a file (issue 13, tenth pass).
    Path log = dir.resolve("class-load.log");
    ForkedJvm.Result r =
        ForkedJvm.builder(Jdks.jdk17())
            .jvmArgs("-Xlog:class+load=info:file=" + log)
            .mainClass(MainStartApp.class)
            .run();
    assertThat(r.value("started")).as(r.describe()).isEqualTo("true");

    List<String> ours = oursLoadedBefore(log, MainStartApp.Started.class.getName());
    assertThat(ours)
        .contains("dev.retryagent.config.AgentConfig", "dev.retryagent.policy.Mode")
        .noneMatch(c -> c.startsWith("dev.retryagent.engine."))
        .noneMatch(
            c ->
                c.startsWith("dev.retryagent.policy.")
                    && !c.equals("dev.retryagent.policy.Mode")
                    && !c.equals("dev.retryagent.policy.ConfigNamed"));
  }

  /**
   * Our classes (the bridge {@code java.lang.RetryAgentBridge} included) in the order the log has
   * them, up to (without) {@code mark}. The hidden classes the JVM spins for a lambda ({@code
   * Foo$$Lambda/0x...}) are left out: they are not in the jar, and the class that holds the lambda
   * is in the list.
   */
  static List<String> oursLoadedBefore(Path log, String mark) throws IOException {
    Set<String> ours = new LinkedHashSet<>();
    boolean marked = false;
    for (String line : Files.readAllLines(log)) {
      Matcher m = LOADED.matcher(line);
      if (!m.find()) {
        continue;
      }
      String name = m.group(1);
      if (name.equals(mark)) {
        marked = true;
        break;
      }
      boolean bridge = name.equals("java.lang.RetryAgentBridge");
      if (bridge
          || name.startsWith("dev.retryagent.")
              && !name.startsWith("dev.retryagent.it.")
              && !name.contains("$$Lambda")) {
        ours.add(name);
      }
    }
    assertThat(marked).as(mark + " in " + log).isTrue();
    return new ArrayList<>(ours);
  }

  /**
   * The agent jar's classes as the agent's loaders read them: a top-level {@code .class} (the
   * launcher and the start-up), or a hidden class of the jar's class pack, read with the launcher's
   * own {@code ClassPack}, loaded from the jar itself (nothing of the agent is on this module's
   * class path). The pack is opened once.
   */
  static final class AgentJarClasses implements AutoCloseable {
    private final JarFile jar;
    private final URLClassLoader launcher;
    private final Object pack;
    private final Method read;

    AgentJarClasses(Path agentJar) throws IOException {
      jar = new JarFile(agentJar.toFile());
      launcher = new URLClassLoader(new URL[] {agentJar.toUri().toURL()}, null);
      try {
        Class<?> type = Class.forName("dev.retryagent.launcher.ClassPack", true, launcher);
        pack = type.getMethod("open", JarFile.class).invoke(null, jar);
        read = type.getMethod("read", String.class);
      } catch (ReflectiveOperationException e) {
        throw new AssertionError("opening the agent jar's class pack", e);
      }
      assertThat(pack).as("the agent jar's class pack").isNotNull();
    }

    /** The bytes of {@code className}; fails the test when the jar lacks it. */
    byte[] bytes(String className) throws IOException {
      String path = className.replace('.', '/');
      JarEntry entry = jar.getJarEntry(path + ".class");
      byte[] bytes;
      if (entry != null) {
        try (InputStream in = jar.getInputStream(entry)) {
          bytes = in.readAllBytes();
        }
      } else {
        try {
          bytes = (byte[]) read.invoke(pack, path);
        } catch (ReflectiveOperationException e) {
          throw new AssertionError("reading " + path + " from the agent jar's class pack", e);
        }
      }
      assertThat(bytes).as(className + " loaded before main, but not in the agent jar").isNotNull();
      return bytes;
    }

    @Override
    public void close() throws IOException {
      try (JarFile j = jar) {
        launcher.close();
      }
    }
  }

  /**
   * Every {@code invokedynamic} of the class file {@code bytes} of {@code className}, as {@code
   * Class.method(descriptor): name bootstrap-owner}.
   */
  static List<String> invokedynamics(byte[] bytes, String className) {
    List<String> found = new ArrayList<>();
    new ClassReader(bytes)
        .accept(
            new ClassVisitor(Opcodes.ASM9) {
              @Override
              public MethodVisitor visitMethod(
                  int access, String method, String desc, String signature, String[] exceptions) {
                return new MethodVisitor(Opcodes.ASM9) {
                  @Override
                  public void visitInvokeDynamicInsn(
                      String name, String descriptor, Handle bootstrap, Object... arguments) {
                    found.add(
                        className
                            + "."
                            + method
                            + desc
                            + ": invokedynamic "
                            + name
                            + " ("
                            + bootstrap.getOwner().replace('/', '.')
                            + "."
                            + bootstrap.getName()
                            + ")");
                  }
                };
              }
            },
            ClassReader.SKIP_FRAMES);
    return found;
  }
}
