package dev.retryagent.launcher;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.jar.Attributes;
import java.util.jar.JarEntry;
import java.util.jar.JarFile;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import net.bytebuddy.jar.asm.ClassReader;
import net.bytebuddy.jar.asm.ClassVisitor;
import net.bytebuddy.jar.asm.Handle;
import net.bytebuddy.jar.asm.MethodVisitor;
import net.bytebuddy.jar.asm.Opcodes;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** Reads the built {@code retry-agent.jar}: manifest and layout (nothing third-party exposed). */
class RetryAgentJarIT {
  /** The bridge's bytes, defined into java.base at start-up: never a loadable class file. */
  private static final String BRIDGE = "inst/java/lang/RetryAgentBridge.classdata";

  /** Relocated Byte Buddy and SnakeYAML. */
  private static final String SHADED = "inst/dev/retryagent/shaded/";

  private static JarFile jar;
  private static ClassPack pack;
  private static List<String> entries;

  /**
   * What the jar holds, as the agent's class loader sees it: its entries, the pack's each class as
   * {@code inst/<path>.classdata}, as they were entries of their own before the pack.
   */
  private static List<String> names;

  @BeforeAll
  static void open() throws IOException {
    String path = System.getProperty("retryagent.jar");
    assertThat(path).as("system property retryagent.jar").isNotNull();
    jar = new JarFile(path);
    entries = new ArrayList<>();
    for (JarEntry e : Collections.list(jar.entries())) {
      entries.add(e.getName());
    }
    pack = ClassPack.open(jar);
    assertThat(pack).as(ClassPack.ENTRY).isNotNull();
    names = new ArrayList<>(entries);
    names.remove(ClassPack.ENTRY);
    for (String c : pack.paths()) {
      names.add("inst/" + c + ".classdata");
    }
  }

  /** The bytes of {@code name}, one of {@link #names}. */
  private static byte[] bytes(String name) throws IOException {
    if (name.startsWith("inst/") && name.endsWith(".classdata")) {
      byte[] packed =
          pack.read(name.substring("inst/".length(), name.length() - ".classdata".length()));
      assertThat(packed).as(name).isNotNull();
      return packed;
    }
    try (InputStream in = jar.getInputStream(jar.getJarEntry(name))) {
      return in.readAllBytes();
    }
  }

  @AfterAll
  static void close() throws IOException {
    pack.close();
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
  void theAgentsLoaderDefinesItsOwnNamespaceItselfAndAsksThePlatformForTheRest() throws Exception {
    AgentClassLoader loader = AgentClassLoader.open(System.getProperty("retryagent.jar"));
    String own = "dev.retryagent.config.AgentConfig";

    // many threads at once, as a parallel-capable loader allows: one class, defined here
    List<Thread> threads = new ArrayList<>();
    Set<Class<?>> seen = Collections.synchronizedSet(new java.util.HashSet<>());
    for (int i = 0; i < 8; i++) {
      Thread t =
          new Thread(
              () -> {
                try {
                  seen.add(loader.loadClass(own));
                } catch (ClassNotFoundException e) {
                  throw new AssertionError(e);
                }
              });
      threads.add(t);
      t.start();
    }
    for (Thread t : threads) {
      t.join();
    }
    assertThat(seen).hasSize(1);
    Class<?> c = seen.iterator().next();
    assertThat(c.getClassLoader()).isSameAs(loader);
    assertThat(Class.forName(own, false, loader)).isSameAs(c);

    // not in the pack: not found, though in our namespace (a launcher class is never in it)
    assertThatThrownBy(() -> loader.loadClass("dev.retryagent.NoSuchClass"))
        .isInstanceOf(ClassNotFoundException.class);
    assertThatThrownBy(() -> loader.loadClass(ClassPack.class.getName()))
        .isInstanceOf(ClassNotFoundException.class);
    // the platform's and the bridge's from the parents; the two start-up types handed over
    assertThat(loader.loadClass("java.net.http.HttpClient").getClassLoader())
        .isSameAs(ClassLoader.getPlatformClassLoader());
    assertThat(loader.loadClass(AgentStarter.class.getName())).isSameAs(AgentStarter.class);
  }

  @Test
  void theHiddenClassesAreOneStoredEntryAndTheJarHasFewEntries() throws IOException {
    // The JVM indexes every entry at each start: ~1,800 of them cost 3-8 ms of CPU before main.
    assertThat(jar.getEntry(ClassPack.ENTRY).getMethod())
        .as(ClassPack.ENTRY + " stored, so that a class is read by skipping to it")
        .isEqualTo(java.util.zip.ZipEntry.STORED);
    assertThat(pack.readsDirectly())
        .as("each class one positioned read of the jar file, not a stream of the entry")
        .isTrue();
    assertThat(entries)
        .as("entries besides the pack: the launcher, META-INF, a few resources")
        .hasSizeLessThan(40)
        .noneMatch(n -> n.endsWith(".classdata"))
        .noneMatch(n -> n.endsWith("/"));
    assertThat(pack.size()).isEqualTo(pack.paths().size()).isGreaterThan(1000);
    for (String c : pack.paths()) {
      byte[] b = pack.read(c);
      assertThat(((b[0] & 0xff) << 24 | (b[1] & 0xff) << 16 | (b[2] & 0xff) << 8 | (b[3] & 0xff)))
          .as(c + " is a class file")
          .isEqualTo(0xCAFEBABE);
      assertThat(new ClassReader(b).getClassName()).as(c).isEqualTo(c);
    }
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
  void metaInfHoldsTheManifestAndTheLicensesOnly() {
    // anything else there is the build's (javac's jpms.args held the build machine's path)
    List<String> allowed =
        List.of(
            "META-INF/",
            "META-INF/MANIFEST.MF",
            "META-INF/LICENSE",
            "META-INF/LICENSE.txt",
            "META-INF/NOTICE",
            "META-INF/NOTICE.txt");
    List<String> other = new ArrayList<>();
    for (String name : names) {
      if (name.startsWith("META-INF/") && !allowed.contains(name)) {
        other.add(name);
      }
    }
    assertThat(other).as("entries in META-INF/").isEmpty();
  }

  @Test
  void onlyTheLauncherAndTheStartUpAreVisibleClasses() {
    List<String> visible = new ArrayList<>();
    for (String name : names) {
      if (name.endsWith(".class") && !name.startsWith("dev/retryagent/launcher/")) {
        visible.add(name);
      }
    }
    assertThat(visible).as("class files a class loader could pick up").isEmpty();
    // the start-up is loaded by the system class loader with the launcher; nothing goes to the
    // bootstrap class path any more
    assertThat(names)
        .contains(
            "dev/retryagent/launcher/RetryAgent.class",
            "dev/retryagent/launcher/AgentStarter.class",
            "dev/retryagent/launcher/AgentClassLoader.class",
            "dev/retryagent/launcher/AgentInstaller.class")
        .noneMatch(n -> n.startsWith("dev/retryagent/bootstrap/"))
        // the build's tool, not the agent's
        .noneMatch(n -> n.contains("ClassPackWriter"));
  }

  @Test
  void theBridgeIsHiddenAndSpeaksJavaBaseOnly() throws IOException {
    assertThat(names).contains(BRIDGE).noneMatch(n -> n.startsWith("java/"));
    byte[] bytes = bytes(BRIDGE);
    ClassReader reader = new ClassReader(bytes);
    assertThat(reader.getClassName()).isEqualTo("java/lang/RetryAgentBridge");
    // class file version 55: Java 11, like the rest of the agent
    assertThat(reader.readUnsignedShort(6)).isEqualTo(55);

    Set<String> referenced = namedTypes(bytes);
    Set<String> attributes = new TreeSet<>();
    boolean[] indy = new boolean[1];
    reader.accept(
        new ClassVisitor(Opcodes.ASM9) {
          @Override
          public void visitInnerClass(String name, String outer, String inner, int access) {
            attributes.add("InnerClasses " + name);
          }

          @Override
          public void visitNestHost(String host) {
            attributes.add("NestHost " + host);
          }

          @Override
          public void visitNestMember(String member) {
            attributes.add("NestMembers " + member);
          }

          @Override
          public MethodVisitor visitMethod(
              int access, String name, String desc, String signature, String[] exceptions) {
            return new MethodVisitor(Opcodes.ASM9) {
              @Override
              public void visitInvokeDynamicInsn(
                  String n, String d, Handle bootstrap, Object... args) {
                indy[0] = true;
              }
            };
          }
        },
        0);

    assertThat(referenced)
        .as("types the bridge names (java.base only: every loader and module sees them)")
        .isNotEmpty()
        .allMatch(
            t ->
                t.equals("java/lang/RetryAgentBridge")
                    || t.matches("java/lang/[A-Za-z]+")
                    || t.startsWith("java/lang/invoke/")
                    || t.startsWith("java/util/concurrent/atomic/"));
    assertThat(attributes).as("nested classes").isEmpty();
    assertThat(indy[0]).as("invokedynamic (lambdas, string concatenation)").isFalse();
  }

  /** The text of the CONSTANT_Utf8 entry whose length field is at {@code offset}. */
  private static String utf8(byte[] bytes, int offset) {
    int length = ((bytes[offset] & 0xFF) << 8) | (bytes[offset + 1] & 0xFF);
    return new String(bytes, offset + 2, length, StandardCharsets.UTF_8);
  }

  @Test
  void hiddenClassesAreRelocatedUnderOurNamespace() {
    List<String> misplaced = new ArrayList<>();
    for (String name : names) {
      // A service file's name is the relocated interface, in our namespace too.
      if (name.startsWith("inst/")
          && !name.startsWith("inst/dev/retryagent/")
          && !name.startsWith("inst/META-INF/services/dev.retryagent.")
          && !name.equals(BRIDGE)) {
        misplaced.add(name);
      }
    }
    assertThat(misplaced).as("hidden entries outside inst/dev/retryagent/").isEmpty();
    assertThat(names)
        .contains(
            "inst/dev/retryagent/shaded/bytebuddy/jar/asm/ClassReader.classdata",
            "inst/dev/retryagent/shaded/snakeyaml/Yaml.classdata",
            "inst/dev/retryagent/agent/Installer.classdata",
            "inst/dev/retryagent/policy/Policy.classdata");
  }

  @Test
  void ofByteBuddyOnlyItsAsmIsBundled() {
    // The rest of Byte Buddy (~3,000 classes) made the jar's index ~5x larger, read by the JVM at
    // every start; the hooks use only ASM.
    assertThat(names)
        .filteredOn(n -> n.startsWith(SHADED + "bytebuddy/"))
        .isNotEmpty()
        .allMatch(n -> n.startsWith(SHADED + "bytebuddy/jar/asm/"));
  }

  @Test
  void everyClassOfOursThatAHiddenClassNamesIsInTheJar() throws IOException {
    // What the filters leave out must be what nothing uses: a class of our namespace that a hidden
    // class names (a relocated library's included) and the jar lacks would fail at run time.
    Set<String> missing = new TreeSet<>();
    int read = 0;
    for (String name : names) {
      if (!name.startsWith("inst/") || !name.endsWith(".classdata") || name.equals(BRIDGE)) {
        continue;
      }
      byte[] bytes = bytes(name);
      read++;
      for (String type : namedTypes(bytes)) {
        if (type.startsWith("dev/retryagent/")
            && !type.startsWith(JEDIS_TOKEN_AUTH)
            && !names.contains("inst/" + type + ".classdata")
            && !names.contains(type + ".class")) {
          missing.add(type + " (named by " + name + ")");
        }
      }
    }
    assertThat(read).isGreaterThan(1000);
    assertThat(missing).as("classes named but not in the jar").isEmpty();
  }

  /**
   * Jedis's optional token authentication (the {@code redis-authx-core} library, an identity
   * provider such as Entra ID): never bundled, loaded only when a client is built with one, which
   * fleet mode never does (it authenticates with the password of its {@code redis://} URL).
   */
  private static final String JEDIS_TOKEN_AUTH =
      "dev/retryagent/shaded/redis/clients/authentication/";

  /**
   * The classes a class file names: its class constants (an array's element type for an array) and
   * every type in a descriptor anywhere in its constant pool (its own members', and those of the
   * fields and methods it uses).
   */
  private static Set<String> namedTypes(byte[] bytes) {
    ClassReader reader = new ClassReader(bytes);
    Set<String> types = new TreeSet<>();
    char[] buffer = new char[reader.getMaxStringLength()];
    Pattern descriptorType = Pattern.compile("L([\\w/$]+)[;<]");
    for (int i = 1; i < reader.getItemCount(); i++) {
      int offset = reader.getItem(i);
      if (offset == 0) {
        continue;
      }
      int tag = bytes[offset - 1];
      if (tag == 7) { // CONSTANT_Class
        String c = reader.readUTF8(offset, buffer);
        types.add(c.startsWith("[") ? c.replaceAll("^\\[+L?|;$", "") : c);
      } else if (tag == 1) { // CONSTANT_Utf8: descriptors name types too
        Matcher m = descriptorType.matcher(utf8(bytes, offset));
        while (m.find()) {
          types.add(m.group(1));
        }
      }
    }
    return types;
  }

  @Test
  void fleetModeAndItsRedisClientAreHiddenAndRelocatedWithSlf4jsNoOpProvider() throws Exception {
    assertThat(names)
        .contains(
            "inst/dev/retryagent/fleet/FleetMode.classdata",
            "inst/dev/retryagent/shaded/redis/clients/jedis/Jedis.classdata",
            "inst/dev/retryagent/shaded/pool2/impl/GenericObjectPool.classdata",
            "inst/dev/retryagent/shaded/slf4j/LoggerFactory.classdata",
            "inst/dev/retryagent/shaded/slf4j/nop/NOPServiceProvider.classdata",
            "inst/META-INF/services/dev.retryagent.shaded.slf4j.spi.SLF4JServiceProvider");
    assertThat(names).noneMatch(n -> n.startsWith("META-INF/services/"));
    String provider =
        new String(
            jar.getInputStream(
                    jar.getJarEntry(
                        "inst/META-INF/services/dev.retryagent.shaded.slf4j.spi."
                            + "SLF4JServiceProvider"))
                .readAllBytes(),
            java.nio.charset.StandardCharsets.UTF_8);
    assertThat(provider.trim()).isEqualTo("dev.retryagent.shaded.slf4j.nop.NOPServiceProvider");
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
            // read as bytes by a GlueClassLoader and defined next to each OkHttp copy
            "inst/dev/retryagent/agent/okhttp/glue/OkHttpGlue.classdata",
            "inst/dev/retryagent/okhttp/RetryInterceptor.classdata",
            "inst/dev/retryagent/agent/apache/ApacheHook.classdata",
            "inst/dev/retryagent/agent/tooling/GlueClassLoader.classdata",
            // read as bytes by GlueClassLoader and defined next to each HttpClient copy
            "inst/dev/retryagent/agent/apache/glue/Apache4Glue.classdata",
            "inst/dev/retryagent/agent/apache/glue/Apache5Glue.classdata",
            "inst/dev/retryagent/internal/apache/ExchangeLog.classdata",
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
  void oneBridgeAndEachClientsEntryInItsOwnPackage() {
    // java.lang.RetryAgentBridge is the one class outside our packages, and no other bridge ships
    // (no interim sun.net.www one, no bytes for one, nothing of a bootstrap package)
    assertThat(names)
        .filteredOn(n -> !n.startsWith("META-INF/") && !n.startsWith("inst/dev/retryagent/"))
        .filteredOn(n -> !n.startsWith("dev/retryagent/launcher/"))
        // SLF4J's provider file, named after the relocated interface (fleet mode)
        .filteredOn(n -> !n.startsWith("inst/META-INF/services/dev.retryagent."))
        .containsExactly(BRIDGE);
    assertThat(names)
        .filteredOn(n -> !n.startsWith(SHADED))
        .noneMatch(n -> n.contains("/bootstrap/"))
        .noneMatch(n -> n.contains("Bridge") && !n.equals(BRIDGE) && !n.contains("/tooling/"))
        .noneMatch(n -> n.endsWith(".bytes"));
    // every hooked client reaches the bridge through a BridgeHandler of its own package
    assertThat(names)
        .contains(
            "inst/dev/retryagent/agent/jdk/JdkHttpEntry.classdata",
            "inst/dev/retryagent/agent/okhttp/OkHttpEntry.classdata",
            "inst/dev/retryagent/agent/apache/ApacheEntry.classdata",
            "inst/dev/retryagent/agent/apache/ApacheHandler.classdata",
            "inst/dev/retryagent/agent/urlconnection/UrlEntry.classdata",
            "inst/dev/retryagent/agent/tooling/Bridge.classdata",
            "inst/dev/retryagent/agent/tooling/BridgeInstaller.classdata");
  }

  /** Ours, that is: relocated Byte Buddy has a class injector that could, which we never use. */
  @Test
  void noClassAppendsToTheBootstrapClassPath() throws IOException {
    List<String> ours = new ArrayList<>(names);
    ours.removeIf(n -> n.startsWith(SHADED));
    assertThat(
            classFilesNaming(
                ours,
                "appendToBootstrapClassLoaderSearch",
                "appendToSystemClassLoaderSearch",
                "Boot-Class-Path"))
        .as("classes that name a class-path append")
        .isEmpty();
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
    assertThat(
            classFilesNaming(
                names, "Lnet/bytebuddy/", "Lorg/yaml/snakeyaml/", "net/bytebuddy/jar/asm/"))
        .as("classes naming net.bytebuddy or org.yaml.snakeyaml")
        .isEmpty();
  }

  /** The class files among {@code entries} whose bytes hold any of {@code fragments}. */
  private static List<String> classFilesNaming(List<String> entries, String... fragments)
      throws IOException {
    List<String> found = new ArrayList<>();
    for (String name : entries) {
      if (!name.endsWith(".class") && !name.endsWith(".classdata")) {
        continue;
      }
      String text = new String(bytes(name), StandardCharsets.ISO_8859_1);
      for (String fragment : fragments) {
        if (text.contains(fragment)) {
          found.add(name);
          break;
        }
      }
    }
    return found;
  }
}
