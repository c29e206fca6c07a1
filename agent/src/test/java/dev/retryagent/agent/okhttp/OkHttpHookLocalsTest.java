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
import net.bytebuddy.jar.asm.Label;
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

  /** A frame of the method's own: {@code mv.visitFrame(...)} at a branch's target. */
  private interface Frame {
    void write(MethodVisitor mv);
  }

  /**
   * {@code intercept(chain)} that branches to an instruction whose frame {@code frame} writes, with
   * no store: as a preverifier that marks dead locals unused (top) in its frames writes it.
   */
  private static byte[] withFrame(Frame frame) {
    return interceptor(
        mv -> {
          Label target = new Label();
          mv.visitInsn(Opcodes.ICONST_0);
          mv.visitJumpInsn(Opcodes.IFEQ, target);
          mv.visitLabel(target);
          frame.write(mv);
        });
  }

  @Test
  void anInterceptWhoseFramesMarkThisOrTheChainUnusedIsLeftAsItIs() throws Exception {
    // The chain is not used after the branch: a liveness-based preverifier (or an obfuscator's)
    // marks it unused there, top or chopped off, though nothing stores into it. The handler's
    // frame holds this and the chain over the whole method: rewritten, the class failed
    // verification, so every OkHttp call.
    Object[] empty = new Object[0];
    byte[][] classes = {
      withFrame(mv -> mv.visitFrame(Opcodes.F_CHOP, 1, null, 0, null)),
      withFrame(mv -> mv.visitFrame(Opcodes.F_FULL, 1, new Object[] {OkHttpHook.SEND}, 0, empty)),
      withFrame(
          mv ->
              mv.visitFrame(
                  Opcodes.F_FULL, 2, new Object[] {OkHttpHook.SEND, Opcodes.TOP}, 0, empty)),
      withFrame(
          mv -> mv.visitFrame(Opcodes.F_FULL, 2, new Object[] {Opcodes.TOP, CHAIN}, 0, empty)),
      withFrame(mv -> mv.visitFrame(Opcodes.F_FULL, 0, empty, 0, empty)),
    };
    for (byte[] original : classes) {
      defined(original); // the class as it is verifies: such frames are legal
      byte[] out = transform(original);
      // what the JVM defines: whatever the transformer returned, or the class as it was
      defined(out == null ? original : out);
      assertThat(out).as("left untouched").isNull();
      assertThat(OkHttpHook.patch(OkHttpHook.SEND, original)).as("patcher").isNull();
      assertThatThrownBy(() -> OkHttpHook.WithAsm.instrument(OkHttpHook.SEND, original))
          .isInstanceOf(IllegalStateException.class)
          .hasMessageContaining("has a frame without this or the chain");
    }
  }

  @Test
  void framesThatKeepThisAndTheChainAreStillRewrittenByThePatcherAndByAsm() throws Exception {
    // A local of its own appended, then chopped off; a full frame that holds both; a same frame.
    Object[] empty = new Object[0];
    byte[] original =
        interceptor(
            mv -> {
              Label appended = new Label();
              Label chopped = new Label();
              Label full = new Label();
              Label same = new Label();
              mv.visitInsn(Opcodes.ICONST_0);
              mv.visitVarInsn(Opcodes.ISTORE, 2);
              mv.visitInsn(Opcodes.ICONST_0);
              mv.visitJumpInsn(Opcodes.IFEQ, appended);
              mv.visitLabel(appended);
              mv.visitFrame(Opcodes.F_APPEND, 1, new Object[] {Opcodes.INTEGER}, 0, null);
              mv.visitInsn(Opcodes.ICONST_0);
              mv.visitJumpInsn(Opcodes.IFEQ, chopped);
              mv.visitLabel(chopped);
              mv.visitFrame(Opcodes.F_CHOP, 1, null, 0, null);
              mv.visitInsn(Opcodes.ICONST_0);
              mv.visitJumpInsn(Opcodes.IFEQ, full);
              mv.visitLabel(full);
              mv.visitFrame(Opcodes.F_FULL, 2, new Object[] {OkHttpHook.SEND, CHAIN}, 0, empty);
              mv.visitInsn(Opcodes.ICONST_0);
              mv.visitJumpInsn(Opcodes.IFEQ, same);
              mv.visitLabel(same);
              mv.visitFrame(Opcodes.F_SAME, 0, null, 0, null);
            });
    assertRewrittenByBoth(original);
  }

  /** Both the patcher and ASM rewrite {@code original}; both verify and tell "sending". */
  private void assertRewrittenByBoth(byte[] original) throws Exception {
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
