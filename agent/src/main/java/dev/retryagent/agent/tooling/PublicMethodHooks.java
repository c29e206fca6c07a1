package dev.retryagent.agent.tooling;

import net.bytebuddy.jar.asm.ClassVisitor;
import net.bytebuddy.jar.asm.MethodVisitor;
import net.bytebuddy.jar.asm.Opcodes;

/**
 * Copies a class, letting a hook wrap the writer of each public instance method it takes over (with
 * a {@link BridgePrologue}, say); every other method, field and attribute passes through unchanged.
 */
public abstract class PublicMethodHooks extends ClassVisitor {
  protected PublicMethodHooks(ClassVisitor next) {
    super(Opcodes.ASM9, next);
  }

  @Override
  public final MethodVisitor visitMethod(
      int access, String name, String desc, String signature, String[] exceptions) {
    MethodVisitor mv = super.visitMethod(access, name, desc, signature, exceptions);
    boolean instance = (access & (Opcodes.ACC_STATIC | Opcodes.ACC_ABSTRACT)) == 0;
    return instance && (access & Opcodes.ACC_PUBLIC) != 0 ? hook(mv, name, desc) : mv;
  }

  /**
   * The writer for public instance method {@code name desc}: wrapped when this hook rewrites it,
   * otherwise {@code mv} itself.
   */
  protected abstract MethodVisitor hook(MethodVisitor mv, String name, String desc);
}
