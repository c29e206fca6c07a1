package dev.retryagent.agent.tooling;

import net.bytebuddy.jar.asm.Label;
import net.bytebuddy.jar.asm.MethodVisitor;
import net.bytebuddy.jar.asm.Opcodes;

/**
 * Writes the prologue with which a hook takes a method over, before the method's own code. In Java
 * terms:
 *
 * <pre>{@code
 * Object outcome;
 * try {
 *   outcome = Bridge.method(<arguments>);    // decide, and run the call if the agent takes it
 * } catch (Throwable bug) {
 *   outcome = null;                          // a failure to decide never breaks the call
 * }
 * if (outcome != null) return (R) Bridge.deliver(outcome);   // value, or throws; void: return;
 * ...original body...
 * }</pre>
 *
 * A throwable from {@code deliver} (the caller's own exception, from the retry engine) is thrown
 * outside the protected region, so it never makes the original body run as well. {@code
 * Bridge.method} takes {@code Object}s and returns {@code Object}; {@code deliver} takes the
 * outcome and returns {@code Object} (cast to the method's return type) or, for a {@code void}
 * method, nothing.
 *
 * <p>Why hand-written bytecode on Byte Buddy's bundled ASM rather than Byte Buddy {@code Advice}:
 * the prologue is about 20 instructions, and applying it costs tens of ms of class loading when the
 * hooked class loads, against 160-360 ms for {@code Advice} (docs/BENCHMARKS.md). Like inlined
 * advice, it adds no member, field or interface (retransformation-safe), and links only to the
 * bootstrap bridge.
 *
 * <p>For a class read without expanding frames and written with the reader's constant pool: every
 * frame of the prologue has the method's initial locals, which keeps the method's own compressed
 * frames valid.
 */
public abstract class BridgePrologue extends MethodVisitor {
  private final String bridge;
  private final String method;
  private final int arguments;
  private final String returnType;

  /**
   * @param next the method's writer
   * @param bridge internal name of the bridge class
   * @param method the bridge's static method that decides
   * @param arguments how many {@code Object}s {@link #pushArguments} pushes for it
   * @param returnType internal name of the hooked method's return type, or null for {@code void}
   */
  protected BridgePrologue(
      MethodVisitor next, String bridge, String method, int arguments, String returnType) {
    super(Opcodes.ASM9, next);
    this.bridge = bridge;
    this.method = method;
    this.arguments = arguments;
    this.returnType = returnType;
  }

  /**
   * Pushes the bridge method's arguments, in order, through {@code mv} (which writes before the
   * original code); at most {@code arguments} stack slots.
   */
  protected abstract void pushArguments(MethodVisitor mv);

  @Override
  public final void visitCode() {
    super.visitCode();
    Label tryStart = new Label();
    Label tryEnd = new Label();
    Label failed = new Label();
    Label notTaken = new Label();
    Label original = new Label();
    super.visitTryCatchBlock(tryStart, tryEnd, failed, "java/lang/Throwable");

    // Object outcome = Bridge.method(arguments...)
    super.visitLabel(tryStart);
    pushArguments(mv);
    StringBuilder desc = new StringBuilder("(");
    for (int i = 0; i < arguments; i++) {
      desc.append("Ljava/lang/Object;");
    }
    desc.append(")Ljava/lang/Object;");
    super.visitMethodInsn(Opcodes.INVOKESTATIC, bridge, method, desc.toString(), false);
    super.visitLabel(tryEnd);

    // if (outcome != null) return (R) Bridge.deliver(outcome);
    super.visitInsn(Opcodes.DUP);
    super.visitJumpInsn(Opcodes.IFNULL, notTaken);
    if (returnType == null) {
      super.visitMethodInsn(
          Opcodes.INVOKESTATIC, bridge, "deliver", "(Ljava/lang/Object;)V", false);
      super.visitInsn(Opcodes.RETURN);
    } else {
      super.visitMethodInsn(
          Opcodes.INVOKESTATIC, bridge, "deliver", "(Ljava/lang/Object;)Ljava/lang/Object;", false);
      super.visitTypeInsn(Opcodes.CHECKCAST, returnType);
      super.visitInsn(Opcodes.ARETURN);
    }

    super.visitLabel(notTaken);
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
    // the arguments, or the outcome and its copy
    super.visitMaxs(Math.max(maxStack, Math.max(arguments, 2)), maxLocals);
  }
}
