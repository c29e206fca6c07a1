package dev.retryagent.agent.urlconnection;

import net.bytebuddy.jar.asm.ClassReader;
import net.bytebuddy.jar.asm.ClassVisitor;
import net.bytebuddy.jar.asm.ClassWriter;
import net.bytebuddy.jar.asm.Label;
import net.bytebuddy.jar.asm.MethodVisitor;
import net.bytebuddy.jar.asm.Opcodes;

/**
 * The ASM rewrites of the {@code HttpURLConnection} hook, applied once the bridge is defined:
 *
 * <ul>
 *   <li>{@code sun.net.www.http.HttpClient.parseHTTP(...)} (JDK 17: {@code (MessageHeader,
 *       ProgressSource, HttpURLConnection)}, JDK 25: {@code (MessageHeader, HttpURLConnection)}):
 *       at its start, in Java terms, {@code try { failedOnce = RetryAgentUrlBridge.parsing(this,
 *       failedOnce); } catch (Throwable t) {}}. The JDK sends a request once more by itself when
 *       reading its response fails and {@code failedOnce} is false; the agent sets it for a request
 *       that is not safe to repeat, and counts the resends it lets happen (docs/url-connection.md).
 *   <li>The protocol handlers' {@code openConnection(URL, Proxy)}, only when {@link HandlerPatch}
 *       does not recognise the method: {@code return RetryAgentUrlBridge.opened((URLConnection)
 *       result, proxy);} before each {@code areturn}.
 * </ul>
 *
 * Classes are read without expanding frames and written with the reader's constant pool, so every
 * other method is copied byte for byte.
 */
final class UrlHooks {
  static final String BRIDGE = "sun/net/www/RetryAgentUrlBridge";
  static final String HTTP_CLIENT = "sun/net/www/http/HttpClient";
  private static final String PARSE_START = "(Lsun/net/www/MessageHeader;";
  private static final String PARSE_END = "Lsun/net/www/protocol/http/HttpURLConnection;)Z";

  private UrlHooks() {}

  /** {@code HttpClient} with the {@code parseHTTP} prologue; throws unless exactly one matches. */
  static byte[] parseHttpPrologue(byte[] classfile) {
    return rewrite(classfile, false);
  }

  /** A handler with the {@code openConnection} epilogue; needs the bridge defined already. */
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

  /** Before each {@code areturn}: hand the connection to the bridge and return what it gives. */
  private static final class Epilogue extends MethodVisitor {
    Epilogue(MethodVisitor mv) {
      super(Opcodes.ASM9, mv);
    }

    @Override
    public void visitInsn(int opcode) {
      if (opcode == Opcodes.ARETURN) {
        // The cast first: JDK 25 verifies changed boot classes, and proving the connection class
        // a URLConnection would load it when the handler loads.
        super.visitTypeInsn(Opcodes.CHECKCAST, "java/net/URLConnection");
        super.visitVarInsn(Opcodes.ALOAD, 2);
        super.visitMethodInsn(
            Opcodes.INVOKESTATIC,
            BRIDGE,
            "opened",
            "(Ljava/net/URLConnection;Ljava/net/Proxy;)Ljava/net/URLConnection;",
            false);
      }
      super.visitInsn(opcode);
    }

    @Override
    public void visitMaxs(int maxStack, int maxLocals) {
      super.visitMaxs(maxStack + 1, maxLocals);
    }
  }

  /**
   * {@code try { failedOnce = RetryAgentUrlBridge.parsing(this, failedOnce); } catch (Throwable t)
   * {}} at the start: a bridge that is missing never breaks the JDK's own exchange.
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
      super.visitVarInsn(Opcodes.ALOAD, 0);
      super.visitVarInsn(Opcodes.ALOAD, 0);
      super.visitVarInsn(Opcodes.ALOAD, 0);
      super.visitFieldInsn(Opcodes.GETFIELD, HTTP_CLIENT, "failedOnce", "Z");
      super.visitMethodInsn(
          Opcodes.INVOKESTATIC, BRIDGE, "parsing", "(Ljava/lang/Object;Z)Z", false);
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

    @Override
    public void visitMaxs(int maxStack, int maxLocals) {
      super.visitMaxs(Math.max(maxStack, 3), maxLocals);
    }
  }
}
