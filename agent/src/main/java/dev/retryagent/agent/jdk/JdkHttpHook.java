package dev.retryagent.agent.jdk;

import dev.retryagent.agent.tooling.Bridge;
import dev.retryagent.agent.tooling.BridgePrologue;
import dev.retryagent.agent.tooling.PublicMethodHooks;
import net.bytebuddy.jar.asm.ClassReader;
import net.bytebuddy.jar.asm.ClassVisitor;
import net.bytebuddy.jar.asm.ClassWriter;
import net.bytebuddy.jar.asm.MethodVisitor;
import net.bytebuddy.jar.asm.Opcodes;

/**
 * Rewrites {@code jdk.internal.net.http.HttpClientImpl}: a {@link BridgePrologue} at the start of
 * {@code send(HttpRequest, BodyHandler)} and of the public {@code sendAsync(HttpRequest,
 * BodyHandler, PushPromiseHandler)} hands the call to the agent through {@code
 * java.lang.RetryAgentBridge} as hooks {@link Bridge#JDK_SEND} and {@link Bridge#JDK_SEND_ASYNC}
 * (see {@link BridgePrologue} for the prologue in Java terms).
 *
 * <p>Applying it costs ~13-30 ms of class loading at the moment the application creates its first
 * {@code HttpClient} (docs/BENCHMARKS.md). The class is read without expanding frames and written
 * with the reader's constant pool, so every other method is copied byte for byte.
 */
final class JdkHttpHook {
  static final String TARGET = "jdk/internal/net/http/HttpClientImpl";
  static final String TARGET_NAME = "jdk.internal.net.http.HttpClientImpl";
  static final String TARGET_MODULE = "java.net.http";

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

  private static final class Hooks extends PublicMethodHooks {
    private final boolean facade;
    boolean send;
    boolean sendAsync;

    Hooks(ClassVisitor next, boolean facade) {
      super(next);
      this.facade = facade;
    }

    @Override
    protected MethodVisitor hook(MethodVisitor mv, String name, String desc) {
      if (name.equals("send") && desc.equals(SEND_DESC)) {
        send = true;
        return new Prologue(mv, 2, Bridge.JDK_SEND, "java/net/http/HttpResponse", facade);
      }
      if (name.equals("sendAsync") && desc.equals(SEND_ASYNC_DESC)) {
        sendAsync = true;
        return new Prologue(
            mv, 3, Bridge.JDK_SEND_ASYNC, "java/util/concurrent/CompletableFuture", facade);
      }
      return mv;
    }
  }

  /**
   * The prologue of {@code send} and {@code sendAsync}: the facade (or this), then the arguments.
   */
  private static final class Prologue extends BridgePrologue {
    private final int parameters;
    private final boolean facade;

    Prologue(MethodVisitor next, int parameters, int hook, String returnType, boolean facade) {
      super(next, hook, parameters + 1, returnType);
      this.parameters = parameters;
      this.facade = facade;
    }

    @Override
    protected void pushArguments(MethodVisitor mv) {
      mv.visitVarInsn(Opcodes.ALOAD, 0);
      if (facade) {
        mv.visitMethodInsn(Opcodes.INVOKEVIRTUAL, TARGET, "facade", FACADE_DESC, false);
      }
      for (int i = 1; i <= parameters; i++) {
        mv.visitVarInsn(Opcodes.ALOAD, i);
      }
    }
  }
}
