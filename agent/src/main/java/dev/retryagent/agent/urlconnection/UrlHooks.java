package dev.retryagent.agent.urlconnection;

import dev.retryagent.agent.tooling.Bridge;
import dev.retryagent.agent.tooling.BridgePrologue;
import net.bytebuddy.jar.asm.ClassReader;
import net.bytebuddy.jar.asm.ClassVisitor;
import net.bytebuddy.jar.asm.ClassWriter;
import net.bytebuddy.jar.asm.Label;
import net.bytebuddy.jar.asm.MethodVisitor;
import net.bytebuddy.jar.asm.Opcodes;

/**
 * The ASM rewrites of the {@code HttpURLConnection} hook, for class files the byte patchers ({@link
 * HandlerPatch}, {@code ProloguePatcher}) decline; calls to {@code java.lang.RetryAgentBridge} that
 * reach {@link UrlEntry}:
 *
 * <ul>
 *   <li>{@code sun.net.www.http.HttpClient.parseHTTP(...)} (JDK 17: {@code (MessageHeader,
 *       ProgressSource, HttpURLConnection)}, JDK 25: {@code (MessageHeader, HttpURLConnection)}):
 *       at its start, in Java terms, {@code try { failedOnce = ((Boolean)
 *       Objects.requireNonNullElse(RetryAgentBridge.enter(URL_RESEND, this,
 *       Boolean.valueOf(failedOnce)), Boolean.valueOf(failedOnce))).booleanValue(); } catch
 *       (Throwable t) {}}. The JDK sends a request once more by itself when reading its response
 *       fails and {@code failedOnce} is false; the agent sets it for a request that is not safe to
 *       repeat, and counts the resends it lets happen (docs/url-connection.md).
 *   <li>The protocol handlers' {@code openConnection(URL, Proxy)}, only when {@link HandlerPatch}
 *       does not recognise the method: before each {@code areturn}, {@code return (URLConnection)
 *       Objects.requireNonNullElse(RetryAgentBridge.enter(URL_OPENED, c, proxy), c);} with {@code
 *       c} the method's own result. No branch and no handler, so no stack map frame is needed in
 *       the middle of a method whose locals are unknown there; the bridge does not throw (its
 *       dispatcher reports a failing handler and answers {@code null}).
 * </ul>
 *
 * {@code Objects.requireNonNullElse} ({@code java.base}, JDK 9+) gives the JDK's own value back
 * when the agent answers {@code null}. Classes are read without expanding frames and written with
 * the reader's constant pool, so every other method is copied byte for byte.
 */
final class UrlHooks {
  static final String OBJECTS = "java/util/Objects";
  static final String OR_ELSE = "requireNonNullElse";
  static final String OR_ELSE_DESC = "(Ljava/lang/Object;Ljava/lang/Object;)Ljava/lang/Object;";
  static final String ENTER_2 = "(ILjava/lang/Object;Ljava/lang/Object;)Ljava/lang/Object;";
  static final String HTTP_CLIENT = "sun/net/www/http/HttpClient";
  private static final String PARSE_START = UrlConnectionTransformer.PARSE_START;
  private static final String PARSE_END = UrlConnectionTransformer.PARSE_END;

  private UrlHooks() {}

  /** {@code HttpClient} with the {@code parseHTTP} prologue; throws unless exactly one matches. */
  static byte[] parseHttpPrologue(byte[] classfile) {
    return rewrite(classfile, false);
  }

  /** A handler with the {@code openConnection} epilogue. */
  static byte[] handlerEpilogue(byte[] classfile) {
    return rewrite(classfile, true);
  }

  private static byte[] rewrite(byte[] classfile, boolean handler) {
    ClassReader reader = new ClassReader(classfile);
    ClassWriter writer = new ClassWriter(reader, 0);
    int[] found = new int[1];
    reader.accept(
        new ClassVisitor(Opcodes.ASM9, writer) {
          @Override
          public MethodVisitor visitMethod(
              int access, String name, String desc, String signature, String[] exceptions) {
            MethodVisitor mv = super.visitMethod(access, name, desc, signature, exceptions);
            if ((access & (Opcodes.ACC_STATIC | Opcodes.ACC_ABSTRACT)) != 0) {
              return mv;
            }
            if (handler
                && name.equals(HandlerPatch.METHOD)
                && desc.equals(HandlerPatch.DESCRIPTOR)) {
              found[0]++;
              return new Epilogue(mv);
            }
            if (!handler
                && name.equals("parseHTTP")
                && desc.startsWith(PARSE_START)
                && desc.endsWith(PARSE_END)) {
              found[0]++;
              return new ResendSwitch(mv);
            }
            return mv;
          }
        },
        0);
    if (found[0] != 1) {
      throw new IllegalStateException(
          reader.getClassName().replace('/', '.')
              + ": expected one "
              + (handler ? "openConnection(URL, Proxy)" : "parseHTTP(MessageHeader, ...)")
              + ", found "
              + found[0]
              + " on this JDK");
    }
    return writer.toByteArray();
  }

  /** Before each {@code areturn}: hand the connection to the agent and return what it answers. */
  private static final class Epilogue extends MethodVisitor {
    Epilogue(MethodVisitor mv) {
      super(Opcodes.ASM9, mv);
    }

    @Override
    public void visitInsn(int opcode) {
      if (opcode == Opcodes.ARETURN) {
        // The cast first: JDK 25 verifies changed boot classes, and proving the connection class
        // a URLConnection would load it when the handler loads.
        super.visitTypeInsn(Opcodes.CHECKCAST, "java/net/URLConnection"); // c
        super.visitInsn(Opcodes.DUP); // c c
        super.visitIntInsn(Opcodes.BIPUSH, Bridge.URL_OPENED); // c c hook
        super.visitInsn(Opcodes.SWAP); // c hook c
        super.visitVarInsn(Opcodes.ALOAD, 2); // c hook c proxy
        super.visitMethodInsn(
            Opcodes.INVOKESTATIC, BridgePrologue.BRIDGE, "enter", ENTER_2, false); // c answer
        super.visitInsn(Opcodes.SWAP); // answer c
        super.visitMethodInsn(Opcodes.INVOKESTATIC, OBJECTS, OR_ELSE, OR_ELSE_DESC, false);
        super.visitTypeInsn(Opcodes.CHECKCAST, "java/net/URLConnection");
      }
      super.visitInsn(opcode);
    }

    @Override
    public void visitMaxs(int maxStack, int maxLocals) {
      // the returned value is counted already; at most three more: c, hook, c, proxy
      super.visitMaxs(maxStack + 3, maxLocals);
    }
  }

  /**
   * The resend switch at the start of {@code parseHTTP} (see the class comment), inside {@code try
   * { } catch (Throwable t) { }}: a failure of the agent's side never breaks the JDK's own
   * exchange. Written before the method's code, where the frames are the method's initial ones.
   */
  private static final class ResendSwitch extends MethodVisitor {
    ResendSwitch(MethodVisitor mv) {
      super(Opcodes.ASM9, mv);
    }

    @Override
    public void visitCode() {
      super.visitCode();
      Label start = new Label();
      Label end = new Label();
      Label handler = new Label();
      Label done = new Label();
      super.visitTryCatchBlock(start, end, handler, "java/lang/Throwable");
      super.visitLabel(start);
      super.visitVarInsn(Opcodes.ALOAD, 0); // this (for the putfield)
      super.visitIntInsn(Opcodes.BIPUSH, Bridge.URL_RESEND);
      super.visitVarInsn(Opcodes.ALOAD, 0);
      failedOnce();
      super.visitMethodInsn(
          Opcodes.INVOKESTATIC, BridgePrologue.BRIDGE, "enter", ENTER_2, false); // this answer
      failedOnce(); // this answer current
      super.visitMethodInsn(Opcodes.INVOKESTATIC, OBJECTS, OR_ELSE, OR_ELSE_DESC, false);
      super.visitTypeInsn(Opcodes.CHECKCAST, "java/lang/Boolean");
      super.visitMethodInsn(
          Opcodes.INVOKEVIRTUAL, "java/lang/Boolean", "booleanValue", "()Z", false);
      super.visitFieldInsn(Opcodes.PUTFIELD, HTTP_CLIENT, "failedOnce", "Z");
      super.visitLabel(end);
      super.visitJumpInsn(Opcodes.GOTO, done);
      super.visitLabel(handler);
      super.visitFrame(Opcodes.F_SAME1, 0, null, 1, new Object[] {"java/lang/Throwable"});
      super.visitInsn(Opcodes.POP);
      super.visitLabel(done);
      super.visitFrame(Opcodes.F_SAME, 0, null, 0, null);
      // Our frame must not share an offset with a frame of the original first instruction.
      super.visitInsn(Opcodes.NOP);
    }

    /** Pushes {@code Boolean.valueOf(this.failedOnce)}. */
    private void failedOnce() {
      super.visitVarInsn(Opcodes.ALOAD, 0);
      super.visitFieldInsn(Opcodes.GETFIELD, HTTP_CLIENT, "failedOnce", "Z");
      super.visitMethodInsn(
          Opcodes.INVOKESTATIC, "java/lang/Boolean", "valueOf", "(Z)Ljava/lang/Boolean;", false);
    }

    @Override
    public void visitMaxs(int maxStack, int maxLocals) {
      // this, hook, this, failedOnce
      super.visitMaxs(Math.max(maxStack, 4), maxLocals);
    }
  }
}
