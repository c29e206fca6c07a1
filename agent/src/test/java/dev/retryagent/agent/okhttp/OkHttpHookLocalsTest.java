package dev.retryagent.agent.okhttp;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.retryagent.agent.tooling.DefiningLoader;
import dev.retryagent.agent.tooling.ProloguePatcher;
import dev.retryagent.agent.tooling.TestBridge;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.util.Map;
import net.bytebuddy.jar.asm.ClassWriter;
import net.bytebuddy.jar.asm.MethodVisitor;
import net.bytebuddy.jar.asm.Opcodes;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * A {@code CallServerInterceptor} whose {@code intercept(Chain)} stores into local 0 or 1 (its
 * locals reallocated by a shrinker, say) cannot have the {@code IOException} handler, whose frame
 * holds {@code this} and the chain there all over the method: neither {@link ProloguePatcher} nor
 * the ASM path it falls back to may rewrite it, or every OkHttp call fails verification. The class
 * is left as it is (the agent counts resends with a network interceptor then); the usual shape is
 * still rewritten by both.
 */
class OkHttpHookLocalsTest {
  private static final String CHAIN = "okhttp3/Interceptor$Chain";
  private static final String INTERCEPT_DESC = "(L" + CHAIN + ";)Lokhttp3/Response;";
  private static final String NAME = OkHttpHook.SEND.replace('/', '.');

  private final OkHttpHookTest.Recorder recorder = new OkHttpHookTest.Recorder();

  @BeforeAll
  static void defineTheBridge() {
    TestBridge.define();
  }

  @BeforeEach
  void register() {
    OkHttpEntry.register(recorder);
  }

  @AfterEach
  void unregister() {
    OkHttpEntry.unregister();
  }

  /** The body of {@code intercept(chain)}, which returns null. */
  private interface Body {
    void write(MethodVisitor mv);
  }

  /** A {@code CallServerInterceptor} whose {@code intercept(chain)} runs {@code body}. */
  private static byte[] interceptor(Body body) {
    ClassWriter cw = new ClassWriter(0);
    cw.visit(Opcodes.V11, Opcodes.ACC_PUBLIC, OkHttpHook.SEND, null, "java/lang/Object", null);
    MethodVisitor init = cw.visitMethod(Opcodes.ACC_PUBLIC, "<init>", "()V", null, null);
    init.visitCode();
    init.visitVarInsn(Opcodes.ALOAD, 0);
    init.visitMethodInsn(Opcodes.INVOKESPECIAL, "java/lang/Object", "<init>", "()V", false);
    init.visitInsn(Opcodes.RETURN);
    init.visitMaxs(1, 1);
    init.visitEnd();
    MethodVisitor mv =
        cw.visitMethod(
            Opcodes.ACC_PUBLIC,
            "intercept",
            INTERCEPT_DESC,
            null,
            new String[] {"java/io/IOException"});
    mv.visitCode();
    body.write(mv);
    mv.visitInsn(Opcodes.ACONST_NULL);
    mv.visitInsn(Opcodes.ARETURN);
    mv.visitMaxs(2, 3);
    mv.visitEnd();
    cw.visitEnd();
    return cw.toByteArray();
  }

  /** Stores an int into {@code slot}, as a shrinker that reuses a dead local's slot may. */
  private static byte[] storingIntoSlot(int slot) {
    return interceptor(
        mv -> {
          mv.visitInsn(Opcodes.ICONST_0);
          mv.visitVarInsn(Opcodes.ISTORE, slot);
        });
  }

  /** The class defined from {@code bytes} by a loader of its own, linked (so verified). */
  private static Class<?> defined(byte[] bytes) throws Exception {
    ClassLoader own =
        new DefiningLoader(OkHttpHookLocalsTest.class.getClassLoader(), Map.of(NAME, bytes));
    Class<?> c = Class.forName(NAME, false, own);
    c.getDeclaredMethods(); // links, and so verifies
    return c;
  }

  private byte[] transform(byte[] bytes) {
    return new OkHttpTransformer()
        .transform(null, getClass().getClassLoader(), OkHttpHook.SEND, null, null, bytes);
  }

  @Test
  void anInterceptThatStoresIntoThisOrTheChainsLocalIsLeftAsItIs() throws Exception {
    // a long stored into local 0 covers local 1 as well
    byte[] longIntoThis =
        interceptor(
            mv -> {
              mv.visitInsn(Opcodes.LCONST_0);
              mv.visitVarInsn(Opcodes.LSTORE, 0);
            });
    for (byte[] original : new byte[][] {storingIntoSlot(1), storingIntoSlot(0), longIntoThis}) {
      assertThat(OkHttpHook.patch(OkHttpHook.SEND, original)).as("patcher").isNull();

      byte[] out = transform(original);
      // what the JVM defines: whatever the transformer returned, or the class as it was
      defined(out == null ? original : out);
      assertThat(out).as("left untouched").isNull();
      assertThatThrownBy(() -> OkHttpHook.WithAsm.instrument(OkHttpHook.SEND, original))
          .isInstanceOf(IllegalStateException.class)
          .hasMessageContaining("stores into this or the chain's local");
    }
  }

  @Test
  void theUsualShapeIsStillRewrittenByThePatcherAndByAsm() throws Exception {
    // stores the chain into a local of its own, as OkHttp's code may
    byte[] original =
        interceptor(
            mv -> {
              mv.visitVarInsn(Opcodes.ALOAD, 1);
              mv.visitVarInsn(Opcodes.ASTORE, 2);
            });
    Object chain =
        Proxy.newProxyInstance(
            getClass().getClassLoader(),
            new Class<?>[] {Class.forName("okhttp3.Interceptor$Chain")},
            (proxy, method, args) -> method.getName().equals("toString") ? "chain" : null);

    byte[] patched = transform(original);
    assertThat(patched).as("patched").isNotNull();
    byte[] withAsm = OkHttpHook.WithAsm.instrument(OkHttpHook.SEND, original);
    for (byte[] rewritten : new byte[][] {patched, withAsm}) {
      Class<?> c = defined(rewritten);
      Method intercept = c.getMethod("intercept", Class.forName("okhttp3.Interceptor$Chain"));
      recorder.events.clear();
      intercept.invoke(c.getConstructor().newInstance(), chain);
      assertThat(recorder.events).singleElement().asString().startsWith("sending ");
    }
  }
}
