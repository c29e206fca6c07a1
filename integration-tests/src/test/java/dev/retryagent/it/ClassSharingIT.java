package dev.retryagent.it;

import static dev.retryagent.it.harness.Reply.ok;
import static dev.retryagent.it.harness.Reply.status;
import static org.assertj.core.api.Assertions.assertThat;

import dev.retryagent.it.apps.AllClientsApp;
import dev.retryagent.it.apps.JdkHttpApp;
import dev.retryagent.it.apps.LateAttachApp;
import dev.retryagent.it.harness.ApacheVersions;
import dev.retryagent.it.harness.CountingServer;
import dev.retryagent.it.harness.ForkedJvm;
import dev.retryagent.it.harness.Jdks;
import dev.retryagent.it.harness.OkHttpVersions;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.jar.Attributes;
import java.util.jar.JarEntry;
import java.util.jar.JarOutputStream;
import java.util.jar.Manifest;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import org.objectweb.asm.ClassWriter;
import org.objectweb.asm.MethodVisitor;
import org.objectweb.asm.Opcodes;

/**
 * The agent leaves the JVM's class-data sharing alone. It appends nothing to the bootstrap class
 * path (its bridge is defined into {@code java.base} instead), so the JVM never prints "Sharing is
 * only supported for boot loader classes because bootstrap classpath has been appended", and an
 * application's own archive keeps serving the application's classes with the agent: all but the
 * classes the agent rewrites (its own classes were never in the application's archive).
 *
 * <p>The archives are made from the Spring Boot fat jar of {@code test-apps/okhttp-boot-app} (two
 * OkHttp calls): a dynamic CDS archive ({@code -XX:ArchiveClassesAtExit}) dumped without the agent
 * on JDK 17 and 25, and on JDK 25 an AOT cache trained with the agent attached. "Served" counts the
 * {@code source: shared objects file} lines of {@code -Xlog:class+load}, and each archive is read
 * twice, without and with the agent, to find the classes the agent cost it.
 */
class ClassSharingIT {
  private static final String WARNING = "Sharing is only supported for boot loader classes";

  /**
   * The Spring Boot fat jar: the classes the agent rewrites there (OkHttp 4), and the JDK's that
   * the HttpURLConnection hook rewrites should the application load them.
   */
  private static final Set<String> BOOT_REWRITTEN =
      Set.of(
          "okhttp3.OkHttpClient$Builder",
          "okhttp3.internal.connection.RealCall",
          "okhttp3.Dispatcher",
          "okhttp3.internal.http.CallServerInterceptor",
          "sun.net.www.protocol.http.Handler",
          "sun.net.www.protocol.https.Handler",
          "sun.net.www.http.HttpClient");

  /** The one-client application: the class the agent rewrites there, and as above. */
  private static final Set<String> JDK_REWRITTEN =
      Set.of(
          "jdk.internal.net.http.HttpClientFacade",
          "sun.net.www.protocol.http.Handler",
          "sun.net.www.protocol.https.Handler",
          "sun.net.www.http.HttpClient");

  /** The clients of {@link AllClientsApp}, in the order it calls them. */
  private static final List<String> ALL_CLIENTS =
      List.of("jdk", "okhttpExecute", "okhttpEnqueue", "apache4", "apache5", "url");

  /** The bound of a training run, which starts a second JVM to write the cache. */
  private static final Duration TRAINING = Duration.ofSeconds(120);

  @TempDir Path dir;

  private static Path bootJar() {
    Path jar = Path.of(System.getProperty("retryagent.bootapp.jar", "missing"));
    if (!Files.isRegularFile(jar)) {
      throw new IllegalStateException(jar + " does not exist: build test-apps/okhttp-boot-app");
    }
    return jar;
  }

  @ParameterizedTest
  @MethodSource("dev.retryagent.it.harness.AgentScenarios#jdks")
  void theJvmPrintsNoSharingWarningWithJavaagent(Path jdk) throws Exception {
    try (CountingServer server = CountingServer.start()) {
      ForkedJvm.Result r =
          ForkedJvm.run(jdk, null, JdkHttpApp.class, "send", server.uri("").toString(), "GET:/");

      assertThat(r.value("intercepted")).as(r.describe()).isEqualTo("1");
      assertThat(r.stderr())
          .as(r.describe())
          .doesNotContain(WARNING)
          .doesNotContain("bootstrap classpath");
    }
  }

  @ParameterizedTest
  @MethodSource("dev.retryagent.it.harness.AgentScenarios#jdks")
  void theJvmPrintsNoSharingWarningWithALateAttach(Path jdk) throws Exception {
    try (CountingServer server = CountingServer.start()) {
      ForkedJvm.Result r =
          ForkedJvm.builder(jdk)
              .withoutAgent()
              .jvmArgs("-Djdk.attach.allowAttachSelf=true")
              .mainClass(LateAttachApp.class)
              .args(ForkedJvm.agentJar().toString(), server.uri("/late").toString())
              .run();

      assertThat(r.value("intercepted")).as(r.describe()).isEqualTo("1");
      assertThat(r.stderrLines("retry-agent " + ForkedJvm.agentVersion()))
          .as(r.describe())
          .hasSize(1);
      assertThat(r.stderr())
          .as(r.describe())
          .doesNotContain(WARNING)
          .doesNotContain("bootstrap classpath");
    }
  }

  /**
   * The same for an application that uses every client the agent hooks: none of the hooks, the
   * HttpURLConnection one in {@code java.base} and the Apache ones in application loaders included,
   * brings an append back. Each call's 502 is retried by the agent (no client retries a 502 by
   * itself), and each hook that takes calls over counts one.
   */
  @ParameterizedTest
  @MethodSource("dev.retryagent.it.harness.AgentScenarios#jdks")
  void anApplicationUsingEveryHookedClientGetsNoSharingWarningWithJavaagent(Path jdk)
      throws Exception {
    try (CountingServer server = CountingServer.start()) {
      enqueueRetriedCalls(server);
      ForkedJvm.Result r =
          allClients(jdk).jvmArgs("-Xshare:on").args(server.uri("").toString()).run();

      assertEveryClientRetriedWithoutWarning(r, "calls");
      assertThat(server.requestCount()).as(r.describe()).isEqualTo(2 * ALL_CLIENTS.size());
    }
  }

  /** As above, attached to a JVM that has loaded every hooked class already. */
  @ParameterizedTest
  @MethodSource("dev.retryagent.it.harness.AgentScenarios#jdks")
  void anApplicationUsingEveryHookedClientGetsNoSharingWarningWithALateAttach(Path jdk)
      throws Exception {
    try (CountingServer server = CountingServer.start()) {
      for (int i = 0; i < ALL_CLIENTS.size(); i++) {
        server.enqueue(ok("first"));
      }
      enqueueRetriedCalls(server);
      ForkedJvm.Result r =
          allClients(jdk)
              .withoutAgent()
              .jvmArgs("-Xshare:on", "-Djdk.attach.allowAttachSelf=true")
              .args("--attach", ForkedJvm.agentJar().toString(), server.uri("").toString())
              .run();

      for (String client : ALL_CLIENTS) {
        assertThat(r.value("first." + client)).as(r.describe()).isEqualTo("200");
      }
      assertEveryClientRetriedWithoutWarning(r, "calls");
      assertThat(r.stderrLines("retry-agent " + ForkedJvm.agentVersion()))
          .as(r.describe())
          .singleElement()
          .asString()
          .contains("jdk-http hooked")
          .contains("okhttp hooked")
          .contains("apache-httpclient hooked")
          .contains("url-connection hooked");
      assertThat(server.requestCount()).as(r.describe()).isEqualTo(3 * ALL_CLIENTS.size());
    }
  }

  /**
   * The check above can fail: an agent that appends a jar to the bootstrap class path (as
   * retry-agent did before) makes the JVM print the warning with {@code -Xshare:on}.
   */
  @ParameterizedTest
  @MethodSource("dev.retryagent.it.harness.AgentScenarios#jdks")
  void anAgentThatAppendsToTheBootstrapClassPathGetsTheWarning(Path jdk) throws Exception {
    Path appending = appendingAgentJar();
    try (CountingServer server = CountingServer.start()) {
      ForkedJvm.Result r =
          ForkedJvm.builder(jdk)
              .withoutAgent()
              .jvmArgs("-Xshare:on", "-javaagent:" + appending + "=" + appending)
              .mainClass(JdkHttpApp.class)
              .args("send", server.uri("").toString(), "GET:/")
              .run();

      assertThat(r.value("1.status")).as(r.describe()).isEqualTo("200");
      assertThat(r.stdout() + r.stderr()).as(r.describe()).contains(WARNING);
    }
  }

  private static void enqueueRetriedCalls(CountingServer server) {
    for (String client : ALL_CLIENTS) {
      server.enqueue(status(502), ok(client));
    }
  }

  private static ForkedJvm.Builder allClients(Path jdk) {
    return ForkedJvm.builder(jdk)
        .classpath(OkHttpVersions.V4.jars())
        .classpath(ApacheVersions.V4_5.jars())
        .classpath(ApacheVersions.V5_6.jars())
        .mainClass(AllClientsApp.class);
  }

  private static void assertEveryClientRetriedWithoutWarning(ForkedJvm.Result r, String round) {
    String all = r.describe();
    assertThat(r.exitCode()).as(all).isZero();
    for (String client : ALL_CLIENTS) {
      assertThat(r.value(round + "." + client)).as(client + ": " + all).isEqualTo("200");
    }
    for (String hook : List.of("jdk", "okhttp", "apache4", "url")) {
      assertThat(r.value("handled." + hook)).as(hook + ": " + all).isEqualTo("1");
    }
    assertThat(r.stdout() + r.stderr())
        .as(all)
        .doesNotContain(WARNING)
        .doesNotContain("bootstrap classpath");
    assertThat(r.stderr()).as(all).doesNotContain("NOT hooked").doesNotContain("internal error");
  }

  /**
   * A jar whose agent appends the jar named by its argument to the bootstrap class path in {@code
   * premain}, as retry-agent did before: {@code -javaagent:appending-agent.jar=itself}.
   */
  private Path appendingAgentJar() throws IOException {
    Path jar = dir.resolve("appending-agent.jar");
    Manifest manifest = new Manifest();
    manifest.getMainAttributes().put(Attributes.Name.MANIFEST_VERSION, "1.0");
    manifest.getMainAttributes().putValue("Premain-Class", "AppendingAgent");
    try (OutputStream out = Files.newOutputStream(jar);
        JarOutputStream jarOut = new JarOutputStream(out, manifest)) {
      jarOut.putNextEntry(new JarEntry("AppendingAgent.class"));
      jarOut.write(appendingAgentClass());
      jarOut.closeEntry();
    }
    return jar;
  }

  /**
   * {@code public class AppendingAgent { public static void premain(String jar, Instrumentation
   * inst) throws IOException { inst.appendToBootstrapClassLoaderSearch(new JarFile(jar)); } }}.
   */
  private static byte[] appendingAgentClass() {
    ClassWriter w = new ClassWriter(0);
    w.visit(
        Opcodes.V11,
        Opcodes.ACC_PUBLIC | Opcodes.ACC_SUPER,
        "AppendingAgent",
        null,
        "java/lang/Object",
        null);
    MethodVisitor m =
        w.visitMethod(
            Opcodes.ACC_PUBLIC | Opcodes.ACC_STATIC,
            "premain",
            "(Ljava/lang/String;Ljava/lang/instrument/Instrumentation;)V",
            null,
            new String[] {"java/io/IOException"});
    m.visitCode();
    m.visitVarInsn(Opcodes.ALOAD, 1);
    m.visitTypeInsn(Opcodes.NEW, "java/util/jar/JarFile");
    m.visitInsn(Opcodes.DUP);
    m.visitVarInsn(Opcodes.ALOAD, 0);
    m.visitMethodInsn(
        Opcodes.INVOKESPECIAL, "java/util/jar/JarFile", "<init>", "(Ljava/lang/String;)V", false);
    m.visitMethodInsn(
        Opcodes.INVOKEINTERFACE,
        "java/lang/instrument/Instrumentation",
        "appendToBootstrapClassLoaderSearch",
        "(Ljava/util/jar/JarFile;)V",
        true);
    m.visitInsn(Opcodes.RETURN);
    m.visitMaxs(4, 2);
    m.visitEnd();
    w.visitEnd();
    return w.toByteArray();
  }

  @ParameterizedTest
  @MethodSource("dev.retryagent.it.harness.AgentScenarios#jdks")
  void aDynamicArchiveOfTheSpringBootAppKeepsServingItsClassesWithTheAgent(Path jdk)
      throws Exception {
    Path archive = dir.resolve("boot.jsa");
    try (CountingServer server = CountingServer.start()) {
      ForkedJvm.Result dump = dump(boot(jdk, server, false, "-XX:ArchiveClassesAtExit=" + archive));
      assertThat(dump.exitCode()).as(dump.describe()).isZero();
      assertThat(archive).as(dump.describe()).isRegularFile();

      ClassLoads without = bootLogged(jdk, server, false, "-XX:SharedArchiveFile=" + archive);
      server.enqueue(status(503), ok("sync"), status(503), ok("async"));
      ClassLoads with = bootLogged(jdk, server, true, "-XX:SharedArchiveFile=" + archive);

      // Spring Boot's launcher (application loader) and OkHttp (Boot's loader) are archived
      assertThat(without.isServed("org.springframework.boot.loader.launch.JarLauncher")).isTrue();
      assertThat(without.isServed("okhttp3.OkHttpClient")).isTrue();
      assertServedAllButTheRewritten(without, with, BOOT_REWRITTEN);
    }
  }

  @ParameterizedTest
  @MethodSource("dev.retryagent.it.harness.AgentScenarios#jdks")
  void aDynamicArchiveKeepsServingJavaNetHttpWithTheAgent(Path jdk) throws Exception {
    Path archive = dir.resolve("jdk.jsa");
    try (CountingServer server = CountingServer.start()) {
      ForkedJvm.Result dump =
          dump(oneClient(jdk, server, false, "-XX:ArchiveClassesAtExit=" + archive));
      assertThat(dump.exitCode()).as(dump.describe()).isZero();
      assertThat(archive).as(dump.describe()).isRegularFile();

      ClassLoads without =
          logged(oneClient(jdk, server, false, "-XX:SharedArchiveFile=" + archive), "without");
      server.enqueue(status(503), ok("retried"));
      Path log = dir.resolve("with.log");
      ForkedJvm.Result r =
          oneClient(jdk, server, true, "-XX:SharedArchiveFile=" + archive, logOption(log)).run();
      assertThat(r.value("1.status")).as(r.describe()).isEqualTo("200");
      assertThat(r.value("intercepted")).as(r.describe()).isEqualTo("1");
      assertThat(r.stderr()).as(r.describe()).doesNotContain(WARNING);
      ClassLoads with = ClassLoads.read(log);

      // java.net.http is a platform module: a bootstrap append took all of it out on JDK 25
      assertThat(without.isServed("jdk.internal.net.http.HttpClientFacade")).isTrue();
      assertServedAllButTheRewritten(without, with, JDK_REWRITTEN);
    }
  }

  @Test
  void onJdk25AnAotCacheTrainedWithTheAgentServesAllButTheRewrittenClasses() throws Exception {
    Path jdk = Jdks.jdk25();
    Path cache = dir.resolve("boot.aot");
    try (CountingServer server = CountingServer.start()) {
      // one step: a training run, then the JVM forks the run that writes the cache
      ForkedJvm.Result training =
          dump(boot(jdk, server, true, "-XX:AOTCacheOutput=" + cache).timeout(TRAINING));
      assertThat(training.exitCode()).as(training.describe()).isZero();
      assertThat(cache).as(training.describe()).isRegularFile();
      assertThat(training.stderr()).as(training.describe()).doesNotContain(WARNING);

      // The cache was made with java.instrument in the module graph (the agent's), so the run
      // without the agent names that module to be accepted at all.
      ClassLoads without =
          bootLogged(
              jdk, server, false, "-XX:AOTCache=" + cache, "--add-modules", "java.instrument");
      server.enqueue(status(503), ok("sync"), status(503), ok("async"));
      ClassLoads with = bootLogged(jdk, server, true, "-XX:AOTCache=" + cache);

      assertThat(without.isServed("okhttp3.OkHttpClient")).isTrue();
      assertServedAllButTheRewritten(without, with, BOOT_REWRITTEN);
    }
  }

  /**
   * Runs a JVM that writes an archive. JDK 25 can crash writing one at exit while an HttpClient
   * thread still spins a lambda (SIGSEGV in {@code LambdaProxyClassDictionary}, seen without any
   * agent): a crashed run is tried again, three runs at most; its error file goes to the temporary
   * directory.
   */
  private ForkedJvm.Result dump(ForkedJvm.Builder archiving) {
    archiving.jvmArgs("-XX:ErrorFile=" + dir.resolve("hs_err_%p.log"));
    ForkedJvm.Result r = archiving.run();
    for (int retry = 0; retry < 2 && r.exitCode() != 0; retry++) {
      if (!r.stdout().contains("A fatal error has been detected by the Java Runtime")) {
        break;
      }
      r = archiving.run();
    }
    return r;
  }

  private static ForkedJvm.Builder boot(
      Path jdk, CountingServer server, boolean agent, String... options) {
    ForkedJvm.Builder b = ForkedJvm.builder(jdk).jvmArgs(options).jar(bootJar());
    if (!agent) {
      b.withoutAgent();
    }
    return b.args(server.uri("").toString());
  }

  /**
   * {@link JdkHttpApp} as an executable jar: class-data sharing refuses a class path with a
   * non-empty directory (the test classes).
   */
  private Path oneClientJar() throws IOException {
    Path jar = dir.resolve("one-client.jar");
    if (Files.isRegularFile(jar)) {
      return jar;
    }
    Manifest manifest = new Manifest();
    manifest.getMainAttributes().put(Attributes.Name.MANIFEST_VERSION, "1.0");
    manifest.getMainAttributes().put(Attributes.Name.MAIN_CLASS, JdkHttpApp.class.getName());
    Path classes = ForkedJvm.locationOf(JdkHttpApp.class);
    Path pkg = classes.resolve(JdkHttpApp.class.getPackageName().replace('.', '/'));
    try (JarOutputStream out = new JarOutputStream(Files.newOutputStream(jar), manifest);
        Stream<Path> files = Files.list(pkg)) {
      for (Path f : (Iterable<Path>) files::iterator) {
        String name = f.getFileName().toString();
        if (name.startsWith("JdkHttpApp") || name.startsWith("AgentProbe")) {
          out.putNextEntry(new JarEntry(classes.relativize(f).toString().replace('\\', '/')));
          out.write(Files.readAllBytes(f));
          out.closeEntry();
        }
      }
    }
    return jar;
  }

  private ForkedJvm.Builder oneClient(
      Path jdk, CountingServer server, boolean agent, String... options) throws IOException {
    ForkedJvm.Builder b = ForkedJvm.builder(jdk).jvmArgs(options).jar(oneClientJar());
    if (!agent) {
      b.withoutAgent();
    }
    return b.args("send", server.uri("").toString(), "GET:/");
  }

  private static String logOption(Path log) {
    return "-Xlog:class+load=info:file=" + log;
  }

  /** Runs the Spring Boot app with a class-load log; with the agent, its retries must show. */
  private ClassLoads bootLogged(Path jdk, CountingServer server, boolean agent, String... options)
      throws IOException {
    Path log = dir.resolve((agent ? "with" : "without") + ".log");
    String[] all = Arrays.copyOf(options, options.length + 1);
    all[options.length] = logOption(log);
    ForkedJvm.Result r = boot(jdk, server, agent, all).run();
    assertThat(r.exitCode()).as(r.describe()).isZero();
    assertThat(r.stderr()).as(r.describe()).doesNotContain(WARNING);
    if (agent) {
      // the hooks ran: each 503 was retried, through the agent's interceptor
      assertThat(r.value("execute")).as(r.describe()).isEqualTo("200:sync");
      assertThat(r.value("enqueue")).as(r.describe()).isEqualTo("200:async");
      assertThat(r.value("interceptors"))
          .as(r.describe())
          .isEqualTo("dev.retryagent.agent.okhttp.glue.AgentInterceptor");
    }
    return ClassLoads.read(log);
  }

  /** Runs {@code app} with a class-load log ({@code name.log}); it must succeed. */
  private ClassLoads logged(ForkedJvm.Builder app, String name) throws IOException {
    Path log = dir.resolve(name + ".log");
    ForkedJvm.Result r = app.jvmArgs(logOption(log)).run();
    assertThat(r.exitCode()).as(r.describe()).isZero();
    return ClassLoads.read(log);
  }

  /**
   * Every class the archive served without the agent, and that the run with the agent loaded too,
   * came from the archive again, but for the classes the agent rewrote (and their lambdas).
   */
  private static void assertServedAllButTheRewritten(
      ClassLoads without, ClassLoads with, Set<String> rewritten) {
    assertThat(without.served()).as("served without the agent").isGreaterThan(1000);
    assertThat(with.source("java.lang.RetryAgentBridge")).as("the agent ran").isNotNull();

    Set<String> lost = new TreeSet<>();
    for (String c : without.loaded()) {
      if (without.isServed(c) && with.source(c) != null && !with.isServed(c)) {
        lost.add(c);
      }
    }
    // for docs/BENCHMARKS.md
    System.out.printf(
        "served without the agent %d of %d, with it %d of %d; lost: %s%n",
        without.served(), without.loaded().size(), with.served(), with.loaded().size(), lost);
    assertThat(lost)
        .as("classes the archive served without the agent but not with it")
        .allMatch(c -> rewritten.contains(c) || isLambdaNextTo(c, rewritten));
  }

  /**
   * A lambda class of a rewritten class's package: CDS archives a lambda's class linked to the
   * method it calls, which may be in a rewritten class (a method reference in {@code
   * HttpClientFacade} to {@code HttpClientImpl}, a lambda of a nested class of it), and then lets
   * the JVM spin it anew.
   */
  private static boolean isLambdaNextTo(String c, Set<String> rewritten) {
    if (!c.endsWith("$$Lambda")) {
      return false;
    }
    for (String r : rewritten) {
      String pkg = r.substring(0, r.lastIndexOf('.') + 1);
      if (c.startsWith(pkg) && c.indexOf('.', pkg.length()) < 0) {
        return true;
      }
    }
    return false;
  }

  /** The classes of one {@code -Xlog:class+load} log, with where each came from. */
  private static final class ClassLoads {
    private static final Pattern LOAD =
        Pattern.compile("\\[class,load\\s*\\]\\s+(\\S+)\\s+source: (.*)$");

    private final Map<String, String> sources;

    private ClassLoads(Map<String, String> sources) {
      this.sources = sources;
    }

    static ClassLoads read(Path log) throws IOException {
      Map<String, String> sources = new LinkedHashMap<>();
      List<String> lines = Files.readAllLines(log);
      for (String line : lines) {
        Matcher m = LOAD.matcher(line);
        if (m.find()) {
          // a lambda's or a hidden class's address differs from run to run
          String name = m.group(1).replaceFirst("/0x[0-9a-f]+$", "");
          name = name.replaceFirst("\\$\\$Lambda\\$?[0-9]*", "\\$\\$Lambda");
          sources.putIfAbsent(name, m.group(2));
        }
      }
      assertThat(sources).as("classes in " + log).isNotEmpty();
      return new ClassLoads(sources);
    }

    Set<String> loaded() {
      return sources.keySet();
    }

    String source(String name) {
      return sources.get(name);
    }

    boolean isServed(String name) {
      String s = sources.get(name);
      return s != null && s.startsWith("shared objects file");
    }

    long served() {
      return sources.values().stream().filter(s -> s.startsWith("shared objects file")).count();
    }
  }
}
