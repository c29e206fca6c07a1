package dev.retryagent.agent.urlconnection;

import static org.assertj.core.api.Assertions.assertThat;

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
import java.util.function.BiFunction;
import java.util.function.BiPredicate;
import net.bytebuddy.jar.asm.ClassReader;
import net.bytebuddy.jar.asm.ClassVisitor;
import net.bytebuddy.jar.asm.FieldVisitor;
import net.bytebuddy.jar.asm.Label;
import net.bytebuddy.jar.asm.MethodVisitor;
import net.bytebuddy.jar.asm.Opcodes;
import org.junit.jupiter.api.Test;

/**
 * The handler rewrite without ASM, on a handler of the JDK's exact shape loaded (and so verified)
 * next to the real bridge, and on the JDK's own handlers; the ASM rewrites on the JDK's classes.
 */
class HandlerPatchTest {
  private static final URL URL_A = url("http://127.0.0.1:1/a");

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

  private static byte[] bridgeBytes() throws IOException {
    try (InputStream in =
        HandlerPatchTest.class.getResourceAsStream("/sun/net/www/RetryAgentUrlBridge.class")) {
      return in.readAllBytes();
    }
  }

  /** Defines the given classes itself (child-first), everything else from its parent. */
  private static final class Loader extends ClassLoader {
    private final Map<String, byte[]> classes;

    Loader(Map<String, byte[]> classes) {
      super(HandlerPatchTest.class.getClassLoader());
      this.classes = classes;
    }

    @Override
    protected Class<?> loadClass(String name, boolean resolve) throws ClassNotFoundException {
      byte[] b = classes.get(name);
      if (b == null) {
        return super.loadClass(name, resolve);
      }
      synchronized (getClassLoadingLock(name)) {
        Class<?> c = findLoadedClass(name);
        return c != null ? c : defineClass(name, b, 0, b.length);
      }
    }
  }

  private static Object patchedHandler(boolean withBridge, Class<?> handler, byte[] patched)
      throws Exception {
    Map<String, byte[]> classes = new LinkedHashMap<>();
    classes.put(handler.getName(), patched);
    classes.put(FakeConnection.class.getName(), testClass(FakeConnection.class));
    if (withBridge) {
      classes.put(UrlBridge.NAME, bridgeBytes());
    }
    Loader loader = new Loader(classes);
    // initialising links the class: the verifier checks the inserted code and its frame
    return Class.forName(handler.getName(), true, loader).getConstructor().newInstance();
  }

  private static URLConnection open(Object handler, Proxy p) throws Exception {
    return (URLConnection)
        handler.getClass().getMethod("open", URL.class, Proxy.class).invoke(handler, URL_A, p);
  }

  private static void install(
      Object handler, BiFunction<URLConnection, Proxy, URLConnection> opener) throws Exception {
    Class<?> bridge = Class.forName(UrlBridge.NAME, true, handler.getClass().getClassLoader());
    bridge
        .getMethod("install", BiFunction.class, BiPredicate.class)
        .invoke(null, opener, (BiPredicate<Object, Boolean>) (c, f) -> f);
  }

  @Test
  void withoutABridgeThePatchedHandlerReturnsItsOwnConnection() throws Exception {
    byte[] patched = HandlerPatch.patch(testClass(FakeHandler.class));
    assertThat(patched).isNotNull();

    Object handler = patchedHandler(false, FakeHandler.class, patched);

    URLConnection c = open(handler, Proxy.NO_PROXY);
    assertThat(c.getClass().getName()).isEqualTo(FakeConnection.class.getName());
    assertThat(c.getURL()).isEqualTo(URL_A);
  }

  @Test
  void withTheBridgeTheApplicationGetsWhatTheOpenerMakesWithTheProxy() throws Exception {
    Object handler =
        patchedHandler(true, FakeHandler.class, HandlerPatch.patch(testClass(FakeHandler.class)));
    List<Proxy> proxies = new ArrayList<>();
    URLConnection wrapped = new FakeConnection(URL_A, null, null);
    install(
        handler,
        (real, proxy) -> {
          proxies.add(proxy);
          return wrapped;
        });

    assertThat(open(handler, Proxy.NO_PROXY)).isSameAs(wrapped);
    assertThat(proxies).containsExactly(Proxy.NO_PROXY);
  }

  @Test
  void anOpenerThatThrowsLeavesTheHandlersOwnConnection() throws Exception {
    Object handler =
        patchedHandler(true, FakeHandler.class, HandlerPatch.patch(testClass(FakeHandler.class)));
    install(
        handler,
        (real, proxy) -> {
          throw new IllegalStateException("bug");
        });

    assertThat(open(handler, null).getClass().getName()).isEqualTo(FakeConnection.class.getName());
  }

  @Test
  void aMethodOfAnotherShapeIsLeftToTheAsmEpilogue() throws Exception {
    byte[] odd = testClass(OddHandler.class);
    assertThat(HandlerPatch.patch(odd)).isNull();

    Object handler = patchedHandler(true, OddHandler.class, UrlHooks.handlerEpilogue(odd));
    URLConnection wrapped = new FakeConnection(URL_A, null, null);
    install(handler, (real, proxy) -> wrapped);

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
              "invokestatic sun/net/www/RetryAgentUrlBridge.opened",
              "try java/lang/Throwable",
              "frame");
    }
  }

  @Test
  void theJdksHttpClientGetsTheResendSwitchAtTheStartOfParseHttp() throws Exception {
    byte[] rewritten = UrlHooks.parseHttpPrologue(jdkClass(UrlHooks.HTTP_CLIENT));

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
    assertThat(code.subList(0, 6))
        .containsExactly(
            "aload 0",
            "aload 0",
            "aload 0",
            "getfield sun/net/www/http/HttpClient.failedOnce",
            "invokestatic sun/net/www/RetryAgentUrlBridge.parsing",
            "putfield sun/net/www/http/HttpClient.failedOnce");
    assertThat(fields(rewritten)).isEqualTo(fields(jdkClass(UrlHooks.HTTP_CLIENT)));
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
