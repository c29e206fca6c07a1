package dev.retryagent.agent.tooling;

import net.bytebuddy.jar.asm.Label;
import net.bytebuddy.jar.asm.MethodVisitor;
import net.bytebuddy.jar.asm.Opcodes;

/**
 * Writes the prologue with which a hook takes a method over, before the method's own code. In Java
 * terms, for hook number {@code H} (a {@link Bridge} constant):
 *
 * <pre>{@code
 * Object outcome;
 * try {
 *   outcome = RetryAgentBridge.enter(H, <arguments>);   // decide, and run the call if the agent takes it
 * } catch (Throwable bug) {
 *   outcome = null;                                     // a failure to decide never breaks the call
 * }
 * if (outcome != null) return (R) RetryAgentBridge.deliver(outcome);   // value, or throws; void: return;
 * ...original body...
 * }</pre>
 *
 * {@code java.lang.RetryAgentBridge} hands the call to the handler registered under {@code H}
 * ({@link Bridge#register}). A throwable from {@code deliver} (the caller's own exception, from the
 * retry engine) is thrown outside the protected region, so it never makes the original body run as
 * well. The arguments are 1 to 6 {@code Object}s; the hooked method's own return type is cast to,
 * or, for a {@code void} method, the value is dropped.
 *
 * <p>Why hand-written bytecode on Byte Buddy's bundled ASM rather than Byte Buddy {@code Advice}:
 * the prologue is about 20 instructions, and applying it costs tens of ms of class loading when the
 * hooked class loads, against 160-360 ms for {@code Advice} (docs/BENCHMARKS.md). Like inlined
 * advice, it adds no member, field or interface (retransformation-safe), and links only to the
 * bridge, which is in {@code java.base}: visible to every class loader and readable by every
 * module.
 *
 * <p>For a class read without expanding frames and written with the reader's constant pool: every
 * frame of the prologue has the method's initial locals, which keeps the method's own compressed
 * frames valid.
 */
public abstract class BridgePrologue extends MethodVisitor {
  /** Internal name of the bridge every hook calls. */
  public static final String BRIDGE = "java/lang/RetryAgentBridge";

  /** Most arguments a hook passes ({@code RetryAgentBridge.enter} has 1 to 6). */
  public static final int MAX_ARGUMENTS = 6;

  private final int hook;
  private final int arguments;
  private final String returnType;

  /**
   * @param next the method's writer
   * @param hook the hook's number ({@link Bridge}), under which its handler is registered
   * @param arguments how many {@code Object}s {@link #pushArguments} pushes, 1 to {@value
   *     #MAX_ARGUMENTS}
   * @param returnType internal name of the hooked method's return type, or null for {@code void}
   */
  protected BridgePrologue(MethodVisitor next, int hook, int arguments, String returnType) {
    super(Opcodes.ASM9, next);
    if (arguments < 1 || arguments > MAX_ARGUMENTS) {
      throw new IllegalArgumentException(arguments + " arguments, the bridge takes 1 to 6");
    }
    if (hook < 0 || hook >= Bridge.HOOKS) {
      throw new IllegalArgumentException("hook number " + hook);
    }
    this.hook = hook;
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

    // Object outcome = RetryAgentBridge.enter(hook, arguments...)
    super.visitLabel(tryStart);
    pushHook(mv, hook);
    pushArguments(mv);
    StringBuilder desc = new StringBuilder("(I");
    for (int i = 0; i < arguments; i++) {
      desc.append("Ljava/lang/Object;");
    }
    desc.append(")Ljava/lang/Object;");
    super.visitMethodInsn(Opcodes.INVOKESTATIC, BRIDGE, "enter", desc.toString(), false);
    super.visitLabel(tryEnd);

    // if (outcome != null) return (R) RetryAgentBridge.deliver(outcome);
    super.visitInsn(Opcodes.DUP);
    super.visitJumpInsn(Opcodes.IFNULL, notTaken);
    super.visitMethodInsn(
        Opcodes.INVOKESTATIC, BRIDGE, "deliver", "(Ljava/lang/Object;)Ljava/lang/Object;", false);
    if (returnType == null) {
      super.visitInsn(Opcodes.POP);
      super.visitInsn(Opcodes.RETURN);
    } else {
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
    // the hook's number and the arguments, or the outcome and its copy
    super.visitMaxs(Math.max(maxStack, arguments + 1), maxLocals);
  }

  /**
   * Writes {@code RetryAgentBridge.tell(hook, this)}: the handler of {@code hook} hears of {@code
   * this} and the method goes on; the bridge never throws, so no handler is needed around it. Two
   * stack slots more than the stack holds where it is written.
   */
  public static void tellThis(MethodVisitor mv, int hook) {
    tell(mv, hook, 0);
  }

  /**
   * Writes {@code RetryAgentBridge.tell(hook, <local>)} for the reference in local variable {@code
   * slot} ({@code 0}: {@code this}, {@code 1}: an instance method's first argument); as {@link
   * #tellThis}, two stack slots more.
   */
  public static void tell(MethodVisitor mv, int hook, int slot) {
    pushHook(mv, hook);
    mv.visitVarInsn(Opcodes.ALOAD, slot);
    mv.visitMethodInsn(Opcodes.INVOKESTATIC, BRIDGE, "tell", "(ILjava/lang/Object;)V", false);
  }

  private static void pushHook(MethodVisitor mv, int hook) {
    if (hook <= 5) {
      mv.visitInsn(Opcodes.ICONST_0 + hook);
    } else {
      mv.visitIntInsn(Opcodes.BIPUSH, hook);
    }
  }
}
