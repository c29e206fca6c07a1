package dev.retryagent.agent.urlconnection;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retryagent.agent.CapturedStderr;
import dev.retryagent.agent.tooling.Bridge;
import dev.retryagent.agent.tooling.BridgeHandler;
import dev.retryagent.agent.tooling.BridgeInstaller;
import dev.retryagent.agent.tooling.DefiningLoader;
import dev.retryagent.agent.tooling.TestBridge;
import java.io.IOException;
import java.io.InputStream;
import java.net.Proxy;
import java.net.URI;
import java.net.URL;
import java.net.URLConnection;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import net.bytebuddy.jar.asm.ClassReader;
import net.bytebuddy.jar.asm.ClassVisitor;
import net.bytebuddy.jar.asm.FieldVisitor;
import net.bytebuddy.jar.asm.Label;
import net.bytebuddy.jar.asm.MethodVisitor;
import net.bytebuddy.jar.asm.Opcodes;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The handler rewrite without ASM, on a handler of the JDK's exact shape loaded (and so verified)
 * with the real bridge, and on the JDK's own handlers; the ASM rewrites on the JDK's classes.
 */
class HandlerPatchTest {
  private static final URL URL_A = url("http://127.0.0.1:1/a");

  @RegisterExtension final CapturedStderr stderr = new CapturedStderr();

  @BeforeAll
  static void defineTheBridge() {
    TestBridge.define();
  }

  @AfterEach
  void unregister() {
    UrlEntry.unregister();
  }

  private static URL url(String s) {
    try {
      return URI.create(s).toURL();
    } catch (java.net.MalformedURLException e) {
      throw new IllegalStateException(e);
    }
  }

  private static byte[] jdkClass(String internalName) throws IOException {
    Path p = Path.of(URI.create("jrt:/java.base/" + internalName + ".class"));
    return Files.readAllBytes(p);
  }

  private static byte[] testClass(Class<?> c) throws IOException {
    try (InputStream in = c.getResourceAsStream(c.getSimpleName() + ".class")) {
      return in.readAllBytes();
    }
  }

  /**
   * {@link DefiningLoader}; with {@code bridgeless}, it refuses the bridge's name, as no real
   * loader may.
   */
  private static final class Loader extends DefiningLoader {
    private final boolean bridgeless;

    Loader(Map<String, byte[]> classes, boolean bridgeless) {
      super(HandlerPatchTest.class.getClassLoader(), classes);
      this.bridgeless = bridgeless;
    }

    @Override
    protected Class<?> loadClass(String name, boolean resolve) throws ClassNotFoundException {
      if (bridgeless && name.equals(BridgeInstaller.NAME)) {
        throw new ClassNotFoundException(name);
      }
      return super.loadClass(name, resolve);
    }
  }

  private static Object patchedHandler(boolean bridgeless, Class<?> handler, byte[] patched)
      throws Exception {
    Map<String, byte[]> classes = new LinkedHashMap<>();
    classes.put(handler.getName(), patched);
    classes.put(FakeConnection.class.getName(), testClass(FakeConnection.class));
    Loader loader = new Loader(classes, bridgeless);
    // initialising links the class: the verifier checks the inserted code and its frame
    return Class.forName(handler.getName(), true, loader).getConstructor().newInstance();
  }

  private static URLConnection open(Object handler, Proxy p) throws Exception {
    return (URLConnection)
        handler.getClass().getMethod("open", URL.class, Proxy.class).invoke(handler, URL_A, p);
  }

  /** Registers {@code opener} under the hook, as {@link UrlEntry} is at the first connection. */
  private static void install(BridgeHandler opener) {
    Bridge.register(Bridge.URL_OPENED, "a test connection", opener);
  }

  @Test
  void withoutAHandlerThePatchedHandlerReturnsItsOwnConnection() throws Exception {
    byte[] patched = HandlerPatch.patch(testClass(FakeHandler.class));
    assertThat(patched).isNotNull();

    Object handler = patchedHandler(false, FakeHandler.class, patched);

    URLConnection c = open(handler, Proxy.NO_PROXY);
    assertThat(c.getClass().getName()).isEqualTo(FakeConnection.class.getName());
    assertThat(c.getURL()).isEqualTo(URL_A);
  }

  @Test
  void aLoaderThatCannotLinkTheBridgeStillGetsItsOwnConnection() throws Exception {
    Object handler =
        patchedHandler(true, FakeHandler.class, HandlerPatch.patch(testClass(FakeHandler.class)));
    install((a, b, c, d, e, f) -> new FakeConnection(URL_A, null, null));

    URLConnection c = open(handler, Proxy.NO_PROXY);
    assertThat(c.getClass().getName()).isEqualTo(FakeConnection.class.getName());
    assertThat(c.getClass().getClassLoader()).isSameAs(handler.getClass().getClassLoader());
  }

  @Test
  void withTheBridgeTheApplicationGetsWhatTheOpenerMakesWithTheProxy() throws Exception {
    Object handler =
        patchedHandler(false, FakeHandler.class, HandlerPatch.patch(testClass(FakeHandler.class)));
    List<Object> proxies = new ArrayList<>();
    URLConnection wrapped = new FakeConnection(URL_A, null, null);
    install(
        (real, proxy, c, d, e, f) -> {
          proxies.add(proxy);
          return wrapped;
        });
    long handled = TestBridge.handled(Bridge.URL_OPENED);

    assertThat(open(handler, Proxy.NO_PROXY)).isSameAs(wrapped);
    assertThat(proxies).containsExactly(Proxy.NO_PROXY);
    assertThat(TestBridge.handled(Bridge.URL_OPENED)).isEqualTo(handled + 1);
  }

  @Test
  void anOpenerThatThrowsOrAnswersNoConnectionLeavesTheHandlersOwnConnection() throws Exception {
    Object handler =
        patchedHandler(false, FakeHandler.class, HandlerPatch.patch(testClass(FakeHandler.class)));
    install(
        (real, proxy, c, d, e, f) -> {
          throw new IllegalStateException("bug");
        });
    assertThat(open(handler, null).getClass().getName()).isEqualTo(FakeConnection.class.getName());
    assertThat(stderr.text()).contains("internal error").contains("IllegalStateException: bug");

    install((real, proxy, c, d, e, f) -> "not a connection");
    assertThat(open(handler, null).getClass().getName()).isEqualTo(FakeConnection.class.getName());
  }

  @Test
  void aMethodOfAnotherShapeIsLeftToTheAsmEpilogue() throws Exception {
    byte[] odd = testClass(OddHandler.class);
    assertThat(HandlerPatch.patch(odd)).isNull();

    Object handler = patchedHandler(false, OddHandler.class, UrlHooks.handlerEpilogue(odd));
    assertThat(open(handler, Proxy.NO_PROXY).getClass().getName())
        .as("no handler: the method's own connection")
        .isEqualTo(FakeConnection.class.getName());

    URLConnection wrapped = new FakeConnection(URL_A, null, null);
    install((real, proxy, c, d, e, f) -> wrapped);

    assertThat(open(handler, Proxy.NO_PROXY)).isSameAs(wrapped);
    assertThat(open(handler, null)).isSameAs(wrapped);
  }

  @Test
  void bothJdkHandlersArePatchedAndEveryOtherMethodIsCopiedAsItWas() throws Exception {
    for (String handler :
        List.of(UrlConnectionTransformer.HTTP_HANDLER, UrlConnectionTransformer.HTTPS_HANDLER)) {
      byte[] original = jdkClass(handler);
      byte[] patched = HandlerPatch.patch(original);

      assertThat(patched).as(handler).isNotNull();
      Map<String, List<String>> before = instructions(original);
      Map<String, List<String>> after = instructions(patched);
      String target = HandlerPatch.METHOD + HandlerPatch.DESCRIPTOR;
      assertThat(after.keySet()).isEqualTo(before.keySet());
      for (String m : before.keySet()) {
        if (!m.equals(target)) {
          assertThat(after.get(m)).as(m).isEqualTo(before.get(m));
        }
      }
      assertThat(after.get(target))
          .contains(
              "checkcast java/net/URLConnection",
              "invokestatic java/lang/RetryAgentBridge.enter",
              "invokestatic java/util/Objects.requireNonNullElse",
              "try java/lang/Throwable",
              "frame");
    }
  }

  @Test
  void theJdksHttpClientGetsTheResendSwitchAtTheStartOfParseHttp() throws Exception {
    byte[] original = jdkClass(UrlHooks.HTTP_CLIENT);
    byte[] patched = UrlConnectionTransformer.resendSwitch(original);
    assertThat(patched).as("patched in its bytes, without ASM").isNotNull();
    for (byte[] rewritten : List.of(patched, UrlHooks.parseHttpPrologue(original))) {
      Map<String, List<String>> methods = instructions(rewritten);
      List<String> parse =
          methods.entrySet().stream()
              .filter(e -> e.getKey().startsWith("parseHTTP("))
              .findFirst()
              .orElseThrow()
              .getValue();
      // ours is the first entry of the exception table; the method's own follow
      assertThat(parse.get(0)).isEqualTo("try java/lang/Throwable");
      List<String> code = new ArrayList<>(parse);
      code.removeIf(i -> i.startsWith("try "));
      assertThat(code.subList(0, 13))
          .containsExactly(
              "aload 0",
              "int " + Bridge.URL_RESEND,
              "aload 0",
              "aload 0",
              "getfield sun/net/www/http/HttpClient.failedOnce",
              "invokestatic java/lang/Boolean.valueOf",
              "invokestatic java/lang/RetryAgentBridge.enter",
              "aload 0",
              "getfield sun/net/www/http/HttpClient.failedOnce",
              "invokestatic java/lang/Boolean.valueOf",
              "invokestatic java/util/Objects.requireNonNullElse",
              "checkcast java/lang/Boolean",
              "invoke java/lang/Boolean.booleanValue");
      assertThat(code.get(13)).isEqualTo("putfield sun/net/www/http/HttpClient.failedOnce");
      assertThat(fields(rewritten)).isEqualTo(fields(original));
      // every other method byte for byte the same instructions
      Map<String, List<String>> before = instructions(original);
      for (String m : before.keySet()) {
        if (!m.startsWith("parseHTTP(")) {
          assertThat(methods.get(m)).as(m).isEqualTo(before.get(m));
        }
      }
    }
  }

  @Test
  void theJdksHttpClientWithTheResendSwitchVerifies() throws Exception {
    // Defined by a loader of its own over the platform loader and linked: the JVM verifies the
    // frames and the handler (JDK 25 verifies a boot class an agent changed, too).
    byte[] original = jdkClass(UrlHooks.HTTP_CLIENT);
    String name = UrlHooks.HTTP_CLIENT.replace('/', '.');
    for (byte[] rewritten :
        List.of(
            UrlConnectionTransformer.resendSwitch(original),
            UrlHooks.parseHttpPrologue(original))) {
      ClassLoader own =
          new DefiningLoader(ClassLoader.getPlatformClassLoader(), Map.of(name, rewritten));
      Class<?> c = Class.forName(name, false, own);
      assertThat(c.getClassLoader()).isSameAs(own);
      assertThat(c.getDeclaredMethods()).isNotEmpty(); // links, and so verifies
    }
  }

  /** Each method's instructions as text, keyed by name and descriptor. */
  private static Map<String, List<String>> instructions(byte[] classfile) {
    Map<String, List<String>> methods = new LinkedHashMap<>();
    new ClassReader(classfile)
        .accept(
            new ClassVisitor(Opcodes.ASM9) {
              @Override
              public MethodVisitor visitMethod(
                  int access, String name, String desc, String signature, String[] exceptions) {
                List<String> out = new ArrayList<>();
                methods.put(name + desc, out);
                return new MethodVisitor(Opcodes.ASM9) {
                  @Override
                  public void visitInsn(int opcode) {
                    out.add("op " + opcode);
                  }

                  @Override
                  public void visitVarInsn(int opcode, int var) {
                    out.add((opcode == Opcodes.ALOAD ? "aload " : "var " + opcode + " ") + var);
                  }

                  @Override
                  public void visitIntInsn(int opcode, int operand) {
                    out.add("int " + operand);
                  }

                  @Override
                  public void visitTypeInsn(int opcode, String type) {
                    out.add((opcode == Opcodes.CHECKCAST ? "checkcast " : "type ") + type);
                  }

                  @Override
                  public void visitFieldInsn(int opcode, String owner, String name, String d) {
                    String kind = opcode == Opcodes.GETFIELD ? "getfield " : "putfield ";
                    out.add(
                        (opcode == Opcodes.GETFIELD || opcode == Opcodes.PUTFIELD ? kind : "field ")
                            + owner
                            + "."
                            + name);
                  }

                  @Override
                  public void visitMethodInsn(
                      int opcode, String owner, String name, String d, boolean itf) {
                    out.add(
                        (opcode == Opcodes.INVOKESTATIC ? "invokestatic " : "invoke ")
                            + owner
                            + "."
                            + name);
                  }

                  @Override
                  public void visitTryCatchBlock(Label s, Label e, Label h, String type) {
                    out.add("try " + type);
                  }

                  @Override
                  public void visitFrame(
                      int type, int nLocal, Object[] local, int nStack, Object[] stack) {
                    out.add("frame");
                  }
                };
              }
            },
            0);
    return methods;
  }

  private static List<String> fields(byte[] classfile) {
    List<String> fields = new ArrayList<>();
    new ClassReader(classfile)
        .accept(
            new ClassVisitor(Opcodes.ASM9) {
              @Override
              public FieldVisitor visitField(
                  int access, String name, String desc, String signature, Object value) {
                fields.add(access + " " + name + desc);
                return null;
              }
            },
            0);
    return fields;
  }
}
