package dev.retryagent.agent;

import net.bytebuddy.jar.asm.ClassReader;
import net.bytebuddy.jar.asm.ClassVisitor;
import net.bytebuddy.jar.asm.ClassWriter;
import net.bytebuddy.jar.asm.Label;
import net.bytebuddy.jar.asm.MethodVisitor;
import net.bytebuddy.jar.asm.Opcodes;

/**
 * Rewrites {@code jdk.internal.net.http.HttpClientImpl}: a prologue at the start of {@code
 * send(HttpRequest, BodyHandler)} and of the public {@code sendAsync(HttpRequest, BodyHandler,
 * PushPromiseHandler)} hands the call to {@code dev.retryagent.bootstrap.JdkHttpBridge} (see its
 * Javadoc for the prologue in Java terms).
 *
 * <p>Why hand-written bytecode on Byte Buddy's bundled ASM rather than Byte Buddy {@code Advice}:
 * the prologue is 20 instructions, and applying it costs ~13-30 ms of class loading at the moment
 * the application creates its first {@code HttpClient}, against ~190-350 ms for {@code Advice}
 * (about 570 Byte Buddy classes). See docs/BENCHMARKS.md. Like inlined advice, it adds no member,
 * field or interface (retransformation-safe), and it links only to the bootstrap bridge.
 *
 * <p>The class is read without expanding frames and written with the reader's constant pool, so
 * every other method is copied byte for byte. The prologue's frames all have the method's initial
 * locals, which keeps the method's own compressed frames valid.
 */
final class JdkHttpHook {
  static final String TARGET = "jdk/internal/net/http/HttpClientImpl";
  static final String TARGET_MODULE = "java.net.http";

  private static final String BRIDGE = "dev/retryagent/bootstrap/JdkHttpBridge";
  private static final String FACADE_DESC = "()Ljdk/internal/net/http/HttpClientFacade;";
  private static final String SEND_DESC =
      "(Ljava/net/http/HttpRequest;Ljava/net/http/HttpResponse$BodyHandler;)"
          + "Ljava/net/http/HttpResponse;";
  private static final String SEND_ASYNC_DESC =
      "(Ljava/net/http/HttpRequest;Ljava/net/http/HttpResponse$BodyHandler;"
          + "Ljava/net/http/HttpResponse$PushPromiseHandler;)"
          + "Ljava/util/concurrent/CompletableFuture;";

  private JdkHttpHook() {}

  /**
   * Returns {@code classfile} with both prologues added.
   *
   * @throws IllegalStateException if either method is missing (an unsupported JDK), in which case
   *     nothing must be changed
   */
  static byte[] instrument(byte[] classfile) {
    ClassReader reader = new ClassReader(classfile);
    ClassWriter writer = new ClassWriter(reader, 0);
    Hooks hooks = new Hooks(writer, hasFacadeMethod(reader));
    reader.accept(hooks, 0);
    if (!hooks.send || !hooks.sendAsync) {
      throw new IllegalStateException(
          reader.getClassName().replace('/', '.')
              + " has no "
              + (hooks.send ? "" : "send(HttpRequest, BodyHandler) ")
              + (hooks.sendAsync ? "" : "sendAsync(HttpRequest, BodyHandler, PushPromiseHandler)")
              + "on this JDK");
    }
    return writer.toByteArray();
  }

  /**
   * True when the class has {@code HttpClientFacade facade()} (JDK 11 to 25 do). The prologue then
   * hands the bridge the facade, the object the application holds, instead of {@code this}: the
   * agent's transport keeps it reachable while an asynchronous retry waits. Otherwise a client the
   * application dropped right after {@code sendAsync} could be shut down by the JDK between two
   * attempts (its selector thread stops once the facade is gone and nothing is in flight).
   */
  private static boolean hasFacadeMethod(ClassReader reader) {
    boolean[] found = new boolean[1];
    reader.accept(
        new ClassVisitor(Opcodes.ASM9) {
          @Override
          public MethodVisitor visitMethod(
              int access, String name, String desc, String signature, String[] exceptions) {
            if (name.equals("facade")
                && desc.equals(FACADE_DESC)
                && (access & (Opcodes.ACC_STATIC | Opcodes.ACC_PRIVATE)) == 0) {
              found[0] = true;
            }
            return null;
          }
        },
        ClassReader.SKIP_CODE | ClassReader.SKIP_DEBUG | ClassReader.SKIP_FRAMES);
    return found[0];
  }

  private static final class Hooks extends ClassVisitor {
    private final boolean facade;
    boolean send;
    boolean sendAsync;

    Hooks(ClassVisitor next, boolean facade) {
      super(Opcodes.ASM9, next);
      this.facade = facade;
    }

    @Override
    public MethodVisitor visitMethod(
        int access, String name, String desc, String signature, String[] exceptions) {
      MethodVisitor mv = super.visitMethod(access, name, desc, signature, exceptions);
      boolean instance = (access & (Opcodes.ACC_STATIC | Opcodes.ACC_ABSTRACT)) == 0;
      if (!instance || (access & Opcodes.ACC_PUBLIC) == 0) {
        return mv;
      }
      if (name.equals("send") && desc.equals(SEND_DESC)) {
        send = true;
        return new Prologue(mv, 2, "send", "java/net/http/HttpResponse", facade);
      }
      if (name.equals("sendAsync") && desc.equals(SEND_ASYNC_DESC)) {
        sendAsync = true;
        return new Prologue(mv, 3, "sendAsync", "java/util/concurrent/CompletableFuture", facade);
      }
      return mv;
    }
  }

  /** Emits the prologue before the original code; see the class comment. */
  private static final class Prologue extends MethodVisitor {
    private final int arguments;
    private final String bridgeMethod;
    private final String returnType;
    private final boolean facade;

    Prologue(
        MethodVisitor next, int arguments, String bridgeMethod, String returnType, boolean facade) {
      super(Opcodes.ASM9, next);
      this.arguments = arguments;
      this.bridgeMethod = bridgeMethod;
      this.returnType = returnType;
      this.facade = facade;
    }

    @Override
    public void visitCode() {
      super.visitCode();
      Label tryStart = new Label();
      Label tryEnd = new Label();
      Label failed = new Label();
      Label notHandled = new Label();
      Label original = new Label();
      super.visitTryCatchBlock(tryStart, tryEnd, failed, "java/lang/Throwable");

      // Object outcome = JdkHttpBridge.<method>(this.facade(), arg1, ..., argN)
      super.visitLabel(tryStart);
      StringBuilder desc = new StringBuilder("(");
      for (int i = 0; i <= arguments; i++) {
        super.visitVarInsn(Opcodes.ALOAD, i);
        if (i == 0 && facade) {
          super.visitMethodInsn(Opcodes.INVOKEVIRTUAL, TARGET, "facade", FACADE_DESC, false);
        }
        desc.append("Ljava/lang/Object;");
      }
      desc.append(")Ljava/lang/Object;");
      super.visitMethodInsn(Opcodes.INVOKESTATIC, BRIDGE, bridgeMethod, desc.toString(), false);
      super.visitLabel(tryEnd);

      // if (outcome != null) return (R) JdkHttpBridge.deliver(outcome);
      super.visitInsn(Opcodes.DUP);
      super.visitJumpInsn(Opcodes.IFNULL, notHandled);
      super.visitMethodInsn(
          Opcodes.INVOKESTATIC, BRIDGE, "deliver", "(Ljava/lang/Object;)Ljava/lang/Object;", false);
      super.visitTypeInsn(Opcodes.CHECKCAST, returnType);
      super.visitInsn(Opcodes.ARETURN);

      super.visitLabel(notHandled);
      super.visitFrame(Opcodes.F_SAME1, 0, null, 1, new Object[] {"java/lang/Object"});
      super.visitInsn(Opcodes.POP);
      super.visitJumpInsn(Opcodes.GOTO, original);

      // catch (Throwable bug): run the original method
      super.visitLabel(failed);
      super.visitFrame(Opcodes.F_SAME1, 0, null, 1, new Object[] {"java/lang/Throwable"});
      super.visitInsn(Opcodes.POP);

      super.visitLabel(original);
      super.visitFrame(Opcodes.F_SAME, 0, null, 0, null);
      // keeps a frame of the original code at its first instruction from sharing our offset
      super.visitInsn(Opcodes.NOP);
    }

    @Override
    public void visitMaxs(int maxStack, int maxLocals) {
      super.visitMaxs(Math.max(maxStack, arguments + 1), maxLocals);
    }
  }
}
