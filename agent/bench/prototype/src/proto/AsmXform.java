package proto;
import net.bytebuddy.jar.asm.*;
public class AsmXform {
  public static byte[] xform(byte[] b) {
    ClassReader cr = new ClassReader(b);
    ClassWriter cw = new ClassWriter(cr, 0);
    String owner = cr.getClassName();
    cr.accept(new ClassVisitor(Opcodes.ASM9, cw) {
      public MethodVisitor visitMethod(int acc, String name, String desc, String sig, String[] ex) {
        MethodVisitor mv = super.visitMethod(acc, name, desc, sig, ex);
        if (!name.equals("send") || !desc.equals("(Ljava/net/http/HttpRequest;Ljava/net/http/HttpResponse$BodyHandler;)Ljava/net/http/HttpResponse;")) return mv;
        return new MethodVisitor(Opcodes.ASM9, mv) {
          public void visitCode() {
            super.visitCode();
            super.visitVarInsn(Opcodes.ALOAD, 0);
            super.visitVarInsn(Opcodes.ALOAD, 1);
            super.visitVarInsn(Opcodes.ALOAD, 2);
            super.visitMethodInsn(Opcodes.INVOKESTATIC, "bridge/Bridge", "enter", "(Ljava/lang/Object;Ljava/lang/Object;Ljava/lang/Object;)Ljava/lang/Object;", false);
            super.visitInsn(Opcodes.DUP);
            Label l = new Label();
            super.visitJumpInsn(Opcodes.IFNULL, l);
            super.visitTypeInsn(Opcodes.CHECKCAST, "java/net/http/HttpResponse");
            super.visitInsn(Opcodes.ARETURN);
            super.visitLabel(l);
            super.visitFrame(Opcodes.F_NEW, 3, new Object[] {owner, "java/net/http/HttpRequest", "java/net/http/HttpResponse$BodyHandler"}, 1, new Object[] {"java/lang/Object"});
            super.visitInsn(Opcodes.POP);
          }
          public void visitMaxs(int s, int l) { super.visitMaxs(Math.max(s, 3), l); }
        };
      }
    }, ClassReader.EXPAND_FRAMES);
    return cw.toByteArray();
  }
}
