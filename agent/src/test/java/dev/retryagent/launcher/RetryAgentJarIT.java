package dev.retryagent.launcher;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.jar.Attributes;
import java.util.jar.JarEntry;
import java.util.jar.JarFile;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** Reads the built {@code retry-agent.jar}: manifest and layout (nothing third-party exposed). */
class RetryAgentJarIT {
  private static JarFile jar;
  private static List<String> names;

  @BeforeAll
  static void open() throws IOException {
    String path = System.getProperty("retryagent.jar");
    assertThat(path).as("system property retryagent.jar").isNotNull();
    jar = new JarFile(path);
    names = new ArrayList<>();
    for (JarEntry e : Collections.list(jar.entries())) {
      if (!e.isDirectory()) {
        names.add(e.getName());
      }
    }
  }

  @AfterAll
  static void close() throws IOException {
    jar.close();
  }

  @Test
  void manifestDeclaresEveryEntryPointAndCapability() throws IOException {
    Attributes main = jar.getManifest().getMainAttributes();

    assertThat(main.getValue("Premain-Class")).isEqualTo("dev.retryagent.launcher.RetryAgent");
    assertThat(main.getValue("Agent-Class")).isEqualTo("dev.retryagent.launcher.RetryAgent");
    assertThat(main.getValue("Main-Class")).isEqualTo("dev.retryagent.launcher.RetryAgent");
    assertThat(main.getValue("Can-Retransform-Classes")).isEqualTo("true");
    assertThat(main.getValue("Can-Redefine-Classes")).isEqualTo("true");
    assertThat(main.getValue("Implementation-Version")).isNotBlank();
    assertThat(main.getValue("Multi-Release")).isNull();
    assertThat(main.getValue("Boot-Class-Path")).isNull();
  }

  @Test
  void everyTopLevelEntryIsOursOrMetaInfOrHidden() {
    List<String> foreign = new ArrayList<>();
    for (String name : names) {
      if (!name.startsWith("dev/retryagent/")
          && !name.startsWith("META-INF/")
          && !name.startsWith("inst/")) {
        foreign.add(name);
      }
    }
    assertThat(foreign).as("entries outside dev/retryagent/, META-INF/ and inst/").isEmpty();
  }

  @Test
  void onlyTheLauncherAndTheBootstrapBridgeAreVisibleClasses() {
    List<String> visible = new ArrayList<>();
    for (String name : names) {
      if (name.endsWith(".class")
          && !name.startsWith("dev/retryagent/launcher/")
          && !name.startsWith("dev/retryagent/bootstrap/")) {
        visible.add(name);
      }
    }
    assertThat(visible).as("class files a class loader could pick up").isEmpty();
    assertThat(names)
        .contains(
            "dev/retryagent/bootstrap/JdkHttpBridge.class",
            "dev/retryagent/bootstrap/OkHttpBridge.class",
            "dev/retryagent/bootstrap/ApacheBridge.class",
            "dev/retryagent/bootstrap/ApacheHandler.class");
  }

  @Test
  void hiddenClassesAreRelocatedUnderOurNamespace() {
    List<String> misplaced = new ArrayList<>();
    for (String name : names) {
      if (name.startsWith("inst/") && !name.startsWith("inst/dev/retryagent/")) {
        misplaced.add(name);
      }
    }
    assertThat(misplaced).as("hidden entries outside inst/dev/retryagent/").isEmpty();
    assertThat(names)
        .contains(
            "inst/dev/retryagent/shaded/bytebuddy/ByteBuddy.classdata",
            "inst/dev/retryagent/shaded/snakeyaml/Yaml.classdata",
            "inst/dev/retryagent/agent/Installer.classdata",
            "inst/dev/retryagent/policy/Policy.classdata");
  }

  @Test
  void eachPartOfTheAgentIsHiddenInItsOwnPackage() {
    assertThat(names)
        .contains(
            "inst/dev/retryagent/agent/tooling/HookTransformer.classdata",
            "inst/dev/retryagent/agent/tooling/BridgePrologue.classdata",
            "inst/dev/retryagent/agent/runtime/AgentRuntime.classdata",
            "inst/dev/retryagent/agent/jdk/JdkHttpHook.classdata",
            "inst/dev/retryagent/agent/okhttp/OkHttpHook.classdata",
            // read as bytes by OkHttpClassLoader and defined next to each OkHttp copy
            "inst/dev/retryagent/agent/okhttp/glue/OkHttpGlue.classdata",
            "inst/dev/retryagent/okhttp/RetryInterceptor.classdata",
            "inst/dev/retryagent/agent/apache/ApacheHook.classdata",
            "inst/dev/retryagent/agent/tooling/GlueClassLoader.classdata",
            // read as bytes by GlueClassLoader and defined next to each HttpClient copy
            "inst/dev/retryagent/agent/apache/glue/Apache4Glue.classdata",
            "inst/dev/retryagent/agent/apache/glue/Apache5Glue.classdata",
            "inst/dev/retryagent/apache/ExchangeLog.classdata",
            "inst/dev/retryagent/apache4/ApacheRetrying4.classdata",
            "inst/dev/retryagent/apache5/RetryExecHandler.classdata");
    // one package per part: the root package holds only the entry point
    assertThat(names)
        .filteredOn(n -> n.matches("inst/dev/retryagent/agent/[^/]+"))
        .containsExactlyInAnyOrder(
            "inst/dev/retryagent/agent/Installer.classdata",
            "inst/dev/retryagent/agent/package-info.classdata");
  }

  @Test
  void theHttpUrlConnectionBridgeIsHiddenBytesThatNameOnlyJavaBaseTypes() throws IOException {
    String entry = "inst/dev/retryagent/agent/urlconnection/RetryAgentUrlBridge.bytes";
    assertThat(names).contains(entry).noneMatch(n -> n.startsWith("sun/"));
    byte[] bytes;
    try (InputStream in = jar.getInputStream(jar.getJarEntry(entry))) {
      bytes = in.readAllBytes();
    }
    String text = new String(bytes, StandardCharsets.ISO_8859_1);
    assertThat(text)
        .contains("sun/net/www/RetryAgentUrlBridge")
        .doesNotContain("dev/retryagent")
        .doesNotContain("InnerClasses")
        .doesNotContain("java/lang/invoke/StringConcatFactory");
    // class file version 55: Java 11, the agent's bytecode level
    assertThat(bytes[7]).isEqualTo((byte) 55);
  }

  /**
   * A Java 8 JVM must load the {@code Premain-Class} (and {@code Main-Class}) to be told in one
   * line that the agent needs Java 11 (issue 14): the class is version 52, and each entry point
   * checks the JVM's version before anything else, with code that names only Java 8 classes and
   * itself.
   */
  @Test
  void theEntryPointLoadsOnJava8AndChecksTheVersionBeforeNamingAnythingNewer() throws IOException {
    byte[] bytes;
    try (InputStream in =
        jar.getInputStream(jar.getJarEntry("dev/retryagent/launcher/RetryAgent.class"))) {
      bytes = in.readAllBytes();
    }
    assertThat(((bytes[6] & 0xff) << 8) | (bytes[7] & 0xff)).as("class file version").isEqualTo(52);

    String self = "dev/retryagent/launcher/RetryAgent";
    java.util.Map<String, List<String>> calls = new java.util.HashMap<>();
    new net.bytebuddy.jar.asm.ClassReader(bytes)
        .accept(
            new net.bytebuddy.jar.asm.ClassVisitor(net.bytebuddy.jar.asm.Opcodes.ASM9) {
              @Override
              public net.bytebuddy.jar.asm.MethodVisitor visitMethod(
                  int access, String name, String desc, String signature, String[] exceptions) {
                List<String> refs = new ArrayList<>();
                calls.put(name, refs);
                return new net.bytebuddy.jar.asm.MethodVisitor(net.bytebuddy.jar.asm.Opcodes.ASM9) {
                  @Override
                  public void visitMethodInsn(
                      int op, String owner, String n, String d, boolean itf) {
                    refs.add(owner + "." + n);
                  }

                  @Override
                  public void visitFieldInsn(int op, String owner, String n, String d) {
                    refs.add(owner + "." + n);
                  }

                  @Override
                  public void visitTypeInsn(int op, String type) {
                    refs.add(type);
                  }

                  @Override
                  public void visitLdcInsn(Object value) {
                    if (value instanceof net.bytebuddy.jar.asm.Type) {
                      refs.add(((net.bytebuddy.jar.asm.Type) value).getInternalName());
                    }
                  }

                  @Override
                  public void visitInvokeDynamicInsn(
                      String n, String d, net.bytebuddy.jar.asm.Handle h, Object... args) {
                    refs.add("invokedynamic " + n);
                  }
                };
              }
            },
            0);
    for (String entry : List.of("premain", "agentmain", "main")) {
      assertThat(calls.get(entry)).as(entry).isNotEmpty();
      assertThat(calls.get(entry).get(0))
          .as("what " + entry + " does first")
          .isEqualTo(self + ".supported");
    }
    for (String check : List.of("supported", "unsupported", "version")) {
      assertThat(calls.get(check))
          .as("what the version check names")
          .isNotEmpty()
          .allSatisfy(
              ref ->
                  assertThat(
                          ref.startsWith("java/lang/")
                              || ref.startsWith("java/io/PrintStream.")
                              || ref.equals(self)
                              || ref.startsWith(self + "."))
                      .as(ref)
                      .isTrue());
    }
  }

  @Test
  void noClassReferencesAnUnrelocatedThirdPartyPackage() throws IOException {
    List<String> leaks = new ArrayList<>();
    for (String name : names) {
      if (!name.endsWith(".class") && !name.endsWith(".classdata")) {
        continue;
      }
      String text;
      try (InputStream in = jar.getInputStream(jar.getJarEntry(name))) {
        text = new String(in.readAllBytes(), StandardCharsets.ISO_8859_1);
      }
      if (text.contains("Lnet/bytebuddy/")
          || text.contains("Lorg/yaml/snakeyaml/")
          || text.contains("net/bytebuddy/jar/asm/")) {
        leaks.add(name);
      }
    }
    assertThat(leaks).as("classes naming net.bytebuddy or org.yaml.snakeyaml").isEmpty();
  }
}
