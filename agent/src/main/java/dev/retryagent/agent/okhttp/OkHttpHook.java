package dev.retryagent.agent.okhttp;

import dev.retryagent.agent.tooling.Bridge;
import dev.retryagent.agent.tooling.BridgePrologue;
import dev.retryagent.agent.tooling.ClassBytes;
import dev.retryagent.agent.tooling.ProloguePatcher;
import dev.retryagent.agent.tooling.ProloguePatcher.Target;
import dev.retryagent.agent.tooling.PublicMethodHooks;
import java.util.List;
import net.bytebuddy.jar.asm.ClassReader;
import net.bytebuddy.jar.asm.ClassVisitor;
import net.bytebuddy.jar.asm.ClassWriter;
import net.bytebuddy.jar.asm.FieldVisitor;
import net.bytebuddy.jar.asm.Label;
import net.bytebuddy.jar.asm.MethodVisitor;
import net.bytebuddy.jar.asm.Opcodes;

/**
 * Rewrites the OkHttp classes the agent hooks, for every OkHttp version alike (name-only matching),
 * with calls to {@code java.lang.RetryAgentBridge} that reach {@link OkHttpEntry}:
 *
 * <ul>
 *   <li>{@code okhttp3.OkHttpClient$Builder}: every constructor calls {@code
 *       RetryAgentBridge.tell(OKHTTP_BUILDER, this)} before it returns, and so does {@code build()}
 *       first (the agent's interceptors must follow those the application added since).
 *   <li>the call class ({@code okhttp3.RealCall} in 3.x, {@code
 *       okhttp3.internal.connection.RealCall} in 4.x and 5.x): a prologue at the start of {@code
 *       enqueue(Callback)} hands the call, its {@code client} field and the callback to hook {@code
 *       OKHTTP_ENQUEUE}, and skips the original body when the agent took the call over; the start
 *       of {@code cancel()} calls {@code RetryAgentBridge.tell(OKHTTP_CANCEL, this)}.
 *   <li>{@code okhttp3.Dispatcher}: the start of {@code cancelAll()} calls {@code
 *       RetryAgentBridge.tell(OKHTTP_CANCEL, this)} (the same hook: the handler tells a dispatcher
 *       from a call), so that it reaches the calls that wait for a retry, which the dispatcher does
 *       not hold.
 *   <li>{@code okhttp3.internal.http.CallServerInterceptor}, the last interceptor of every call,
 *       which writes each request to its connection: {@code intercept(Chain)} calls {@code
 *       RetryAgentBridge.tell(OKHTTP_SENDING, chain)} first, and {@code tell(OKHTTP_SEND_FAILED,
 *       new Object[] {chain, exception})} before an {@code IOException} leaves it (a handler over
 *       the whole method, after its own). That is how the agent counts OkHttp's own resends and
 *       keeps it from resending what the engine would not, without a network interceptor, which
 *       OkHttp would pay a chain copy for on every call (issue 13).
 * </ul>
 *
 * <p>The {@code enqueue} prologue is the {@link BridgePrologue} every hook uses. Nothing is added
 * but instructions: no member, field or interface, so retransformation stays possible. Only the
 * hooked methods are rewritten; every other method is copied byte for byte: {@link ProloguePatcher}
 * patches them into the class file's bytes, so that an OkHttp application loads none of ASM's
 * classes (~29, run interpreted as its first client is built: ~10-15 ms of start-up, issue 13);
 * only a class file the patcher leaves alone (a constructor with two {@code return}s, say) is read
 * and written with ASM ({@link WithAsm}), which also says what is missing.
 */
final class OkHttpHook {
  static final String BUILDER = OkHttpTransformer.BUILDER;
  static final String CALL_3 = OkHttpTransformer.CALL_3;
  static final String CALL_4 = OkHttpTransformer.CALL_4;
  static final String DISPATCHER = OkHttpTransformer.DISPATCHER;
  static final String SEND = OkHttpTransformer.SEND;

  private static final String CALLBACK_DESC = "(Lokhttp3/Callback;)V";
  private static final String CLIENT_DESC = "Lokhttp3/OkHttpClient;";
  private static final String CHAIN = "okhttp3/Interceptor$Chain";
  private static final String INTERCEPT_DESC = "(L" + CHAIN + ";)Lokhttp3/Response;";

  private OkHttpHook() {}

  /** The builder's: {@code build()} first, and every constructor before it returns. */
  private static final List<Target> BUILDER_TARGETS =
      List.of(
          Target.tell("build", "()Lokhttp3/OkHttpClient;", Bridge.OKHTTP_BUILDER, 0),
          Target.tellBeforeReturn(Bridge.OKHTTP_BUILDER));

  /** The call's: {@code enqueue(callback)} with {@code this}, its client and the callback. */
  private static final List<Target> CALL_TARGETS =
      List.of(
          new Target(
                  "enqueue",
                  CALLBACK_DESC,
                  Bridge.OKHTTP_ENQUEUE,
                  new int[] {0, Target.THIS_FIELD, 1},
                  null)
              .withField("client", CLIENT_DESC),
          Target.tell("cancel", "()V", Bridge.OKHTTP_CANCEL, 0));

  private static final List<Target> DISPATCHER_TARGETS =
      List.of(Target.tell("cancelAll", "()V", Bridge.OKHTTP_CANCEL, 0));

  private static final List<Target> SEND_TARGETS =
      List.of(
          Target.tellAndOnIoException(
              "intercept", INTERCEPT_DESC, Bridge.OKHTTP_SENDING, 1, Bridge.OKHTTP_SEND_FAILED));

  /**
   * Returns {@code classfile} with the hooks of its class added: patched into the bytes ({@link
   * ProloguePatcher}, no ASM class loaded), or, for a class file the patcher leaves alone, written
   * with ASM ({@link WithAsm}).
   *
   * @throws IllegalStateException if a method (or the call's {@code client} field) is missing, in
   *     which case nothing must be changed
   */
  static byte[] instrument(String internalName, byte[] classfile) {
    byte[] patched = patch(internalName, classfile);
    return patched != null ? patched : WithAsm.instrument(internalName, classfile);
  }

  /** The class file with the hooks patched in by {@link ProloguePatcher}; null if it declines. */
  static byte[] patch(String internalName, byte[] classfile) {
    List<Target> targets = targetsOf(internalName, classfile);
    return targets == null ? null : ProloguePatcher.patch(classfile, targets);
  }

  /** What the patcher writes into {@code internalName}; null to leave the class to ASM. */
  private static List<Target> targetsOf(String internalName, byte[] classfile) {
    if (internalName.equals(BUILDER)) {
      return BUILDER_TARGETS;
    }
    if (internalName.equals(SEND)) {
      return SEND_TARGETS;
    }
    if (internalName.equals(DISPATCHER)) {
      return DISPATCHER_TARGETS;
    }
    // The call: its prologue reads the client field, so the field must be there.
    ClassBytes c = ClassBytes.read(classfile);
    return c != null && c.hasInstanceField("client", CLIENT_DESC) ? CALL_TARGETS : null;
  }

  /**
   * The same hooks written with ASM. A class of its own, so that verifying {@link OkHttpHook} loads
   * none of ASM's classes.
   */
  static final class WithAsm {
    private WithAsm() {}

    static byte[] instrument(String internalName, byte[] classfile) {
      ClassReader reader = new ClassReader(classfile);
      ClassWriter writer = new ClassWriter(reader, 0);
      if (internalName.equals(BUILDER)) {
        BuilderHooks hooks = new BuilderHooks(writer);
        reader.accept(hooks, 0);
        if (hooks.constructors == 0) {
          throw new IllegalStateException(BUILDER + " has no constructor");
        }
      } else if (internalName.equals(SEND)) {
        SendHooks hooks = new SendHooks(writer);
        reader.accept(hooks, 0);
        if (!hooks.intercept) {
          throw new IllegalStateException(SEND + " has no intercept(Chain) in this OkHttp");
        }
        if (hooks.storesIntoArguments) {
          // The handler's frame says local 0 is this and local 1 the chain all over the method;
          // a store into either (locals reallocated by a shrinker, say) would fail verification of
          // the class, and so every call. Left alone, as ProloguePatcher leaves it: the agent
          // counts resends with a network interceptor instead.
          throw new IllegalStateException(
              SEND + ".intercept(Chain) stores into this or the chain's local, not rewritten");
        }
        if (hooks.framesDropArguments) {
          // So too for a frame of the method's own that marks either local unused (a preverifier
          // that trims dead locals from its frames, with no store): the handler's frame does not
          // match it there.
          throw new IllegalStateException(
              SEND + ".intercept(Chain) has a frame without this or the chain, not rewritten");
        }
      } else if (internalName.equals(DISPATCHER)) {
        DispatcherHooks hooks = new DispatcherHooks(writer);
        reader.accept(hooks, 0);
        if (!hooks.cancelAll) {
          throw new IllegalStateException(DISPATCHER + " has no cancelAll() in this OkHttp");
        }
      } else {
        if (!hasClientField(reader, internalName)) {
          throw new IllegalStateException(
              internalName.replace('/', '.') + " has no field client, an unsupported OkHttp");
        }
        CallHooks hooks = new CallHooks(writer, internalName);
        reader.accept(hooks, 0);
        if (!hooks.enqueue || !hooks.cancel) {
          throw new IllegalStateException(
              internalName.replace('/', '.')
                  + " has no "
                  + (hooks.enqueue ? "" : "enqueue(Callback) ")
                  + (hooks.cancel ? "" : "cancel() ")
                  + "in this OkHttp");
        }
      }
      return writer.toByteArray();
    }

    private static boolean hasClientField(ClassReader reader, String owner) {
      boolean[] found = new boolean[1];
      reader.accept(
          new ClassVisitor(Opcodes.ASM9) {
            @Override
            public FieldVisitor visitField(
                int access, String name, String desc, String signature, Object value) {
              if (name.equals("client")
                  && desc.equals(CLIENT_DESC)
                  && (access & Opcodes.ACC_STATIC) == 0) {
                found[0] = true;
              }
              return null;
            }
          },
          ClassReader.SKIP_CODE | ClassReader.SKIP_DEBUG | ClassReader.SKIP_FRAMES);
      return found[0];
    }
  }

  private static final class BuilderHooks extends ClassVisitor {
    int constructors;

    BuilderHooks(ClassVisitor next) {
      super(Opcodes.ASM9, next);
    }

    @Override
    public MethodVisitor visitMethod(
        int access, String name, String desc, String signature, String[] exceptions) {
      MethodVisitor mv = super.visitMethod(access, name, desc, signature, exceptions);
      if (name.equals("build") && desc.equals("()Lokhttp3/OkHttpClient;")) {
        return new TellAtStart(mv, Bridge.OKHTTP_BUILDER);
      }
      if (!name.equals("<init>")) {
        return mv;
      }
      constructors++;
      return new MethodVisitor(Opcodes.ASM9, mv) {
        @Override
        public void visitInsn(int opcode) {
          if (opcode == Opcodes.RETURN) {
            // `this` is initialised at every return
            BridgePrologue.tellThis(mv, Bridge.OKHTTP_BUILDER);
          }
          super.visitInsn(opcode);
        }

        @Override
        public void visitMaxs(int maxStack, int maxLocals) {
          // whatever the stack holds at a return, and the two values of the tell
          super.visitMaxs(maxStack + 2, maxLocals);
        }
      };
    }
  }

  private static final class CallHooks extends PublicMethodHooks {
    private final String owner;
    boolean enqueue;
    boolean cancel;

    CallHooks(ClassVisitor next, String owner) {
      super(next);
      this.owner = owner;
    }

    @Override
    protected MethodVisitor hook(MethodVisitor mv, String name, String desc) {
      if (name.equals("enqueue") && desc.equals(CALLBACK_DESC)) {
        enqueue = true;
        return new EnqueuePrologue(mv, owner);
      }
      if (name.equals("cancel") && desc.equals("()V")) {
        cancel = true;
        return new TellAtStart(mv, Bridge.OKHTTP_CANCEL);
      }
      return mv;
    }
  }

  private static final class DispatcherHooks extends PublicMethodHooks {
    boolean cancelAll;

    DispatcherHooks(ClassVisitor next) {
      super(next);
    }

    @Override
    protected MethodVisitor hook(MethodVisitor mv, String name, String desc) {
      if (name.equals("cancelAll") && desc.equals("()V")) {
        cancelAll = true;
        return new TellAtStart(mv, Bridge.OKHTTP_CANCEL);
      }
      return mv;
    }
  }

  private static final class SendHooks extends PublicMethodHooks {
    boolean intercept;
    boolean storesIntoArguments;
    boolean framesDropArguments;

    SendHooks(ClassVisitor next) {
      super(next);
    }

    @Override
    protected MethodVisitor hook(MethodVisitor mv, String name, String desc) {
      if (name.equals("intercept") && desc.equals(INTERCEPT_DESC)) {
        intercept = true;
        return new TellSending(mv, this);
      }
      return mv;
    }
  }

  /**
   * {@code intercept(chain)} as
   *
   * <pre>{@code
   * RetryAgentBridge.tell(OKHTTP_SENDING, chain);
   * try {
   *   ...original body...
   * } catch (IOException e) {
   *   RetryAgentBridge.tell(OKHTTP_SEND_FAILED, new Object[] {chain, e});   // never throws
   *   throw e;
   * }
   * }</pre>
   *
   * The handler is entered in the exception table after the method's own, so each of those still
   * catches first (the table is searched in order), and it is written after the method's last
   * instruction. Its frame has the method's two arguments as locals: no OkHttp version stores into
   * either ({@code OkHttpHookTest} and the integration tests run 3.x, 4.x and 5.x through the
   * verifier), and a method that does (its locals reallocated by a shrinker, say), or whose own
   * frames mark either unused (a preverifier that trims dead locals), is reported to {@link
   * SendHooks} and not rewritten, as {@link ProloguePatcher} refuses it.
   */
  private static final class TellSending extends MethodVisitor {
    private final Label start = new Label();
    private final SendHooks hooks;
    // The entries of the locals of the method's frame so far, from its implicit first: this and
    // the chain (the frames come compressed, the class read without EXPAND_FRAMES)
    private int locals = 2;

    TellSending(MethodVisitor next, SendHooks hooks) {
      super(Opcodes.ASM9, next);
      this.hooks = hooks;
    }

    @Override
    public void visitVarInsn(int opcode, int var) {
      // ISTORE to ASTORE: a long or double stored into local 0 covers local 1 too
      if (opcode >= Opcodes.ISTORE && opcode <= Opcodes.ASTORE && var <= 1) {
        hooks.storesIntoArguments = true;
      }
      super.visitVarInsn(opcode, var);
    }

    @Override
    public void visitFrame(int type, int numLocal, Object[] local, int numStack, Object[] stack) {
      // A frame whose locals lack this or the chain (top, or chopped off) fails verification
      // against the handler's, which holds both over the whole method.
      if (type == Opcodes.F_CHOP) {
        locals -= numLocal;
      } else if (type == Opcodes.F_APPEND) {
        locals += numLocal;
      } else if (type == Opcodes.F_FULL || type == Opcodes.F_NEW) {
        locals = numLocal;
        if (numLocal >= 2 && !(SEND.equals(local[0]) && CHAIN.equals(local[1]))) {
          hooks.framesDropArguments = true;
        }
      }
      if (locals < 2) {
        hooks.framesDropArguments = true;
      }
      super.visitFrame(type, numLocal, local, numStack, stack);
    }

    @Override
    public void visitCode() {
      super.visitCode();
      BridgePrologue.tell(mv, Bridge.OKHTTP_SENDING, 1);
      super.visitLabel(start);
    }

    @Override
    public void visitMaxs(int maxStack, int maxLocals) {
      Label end = new Label();
      Label handler = new Label();
      super.visitLabel(end);
      super.visitTryCatchBlock(start, end, handler, "java/io/IOException");
      super.visitLabel(handler);
      super.visitFrame(
          Opcodes.F_FULL, 2, new Object[] {SEND, CHAIN}, 1, new Object[] {"java/io/IOException"});
      // As ProloguePatcher writes it: stack operations only, the exception left for the throw.
      super.visitInsn(Opcodes.DUP);
      super.visitIntInsn(Opcodes.BIPUSH, Bridge.OKHTTP_SEND_FAILED);
      super.visitInsn(Opcodes.SWAP);
      super.visitInsn(Opcodes.ICONST_2);
      super.visitTypeInsn(Opcodes.ANEWARRAY, "java/lang/Object");
      super.visitInsn(Opcodes.DUP_X1);
      super.visitInsn(Opcodes.SWAP);
      super.visitInsn(Opcodes.ICONST_1);
      super.visitInsn(Opcodes.SWAP);
      super.visitInsn(Opcodes.AASTORE);
      super.visitInsn(Opcodes.DUP);
      super.visitInsn(Opcodes.ICONST_0);
      super.visitVarInsn(Opcodes.ALOAD, 1);
      super.visitInsn(Opcodes.AASTORE);
      super.visitMethodInsn(
          Opcodes.INVOKESTATIC, BridgePrologue.BRIDGE, "tell", "(ILjava/lang/Object;)V", false);
      super.visitInsn(Opcodes.ATHROW);
      // the exception, the hook's number, the array and its copy, the index and the element
      super.visitMaxs(Math.max(maxStack, 6), Math.max(maxLocals, 2));
    }
  }

  /** {@code RetryAgentBridge.tell(hook, this)} first in the method; the bridge never throws. */
  private static final class TellAtStart extends MethodVisitor {
    private final int hook;

    TellAtStart(MethodVisitor next, int hook) {
      super(Opcodes.ASM9, next);
      this.hook = hook;
    }

    @Override
    public void visitCode() {
      super.visitCode();
      BridgePrologue.tellThis(mv, hook);
    }

    @Override
    public void visitMaxs(int maxStack, int maxLocals) {
      // the hook's number and `this`
      super.visitMaxs(Math.max(maxStack, 2), maxLocals);
    }
  }

  /**
   * The {@code enqueue} prologue: {@code RetryAgentBridge.enter(OKHTTP_ENQUEUE, this, this.client,
   * callback)}.
   */
  private static final class EnqueuePrologue extends BridgePrologue {
    private final String owner;

    EnqueuePrologue(MethodVisitor next, String owner) {
      super(next, Bridge.OKHTTP_ENQUEUE, 3, null);
      this.owner = owner;
    }

    @Override
    protected void pushArguments(MethodVisitor mv) {
      mv.visitVarInsn(Opcodes.ALOAD, 0);
      mv.visitVarInsn(Opcodes.ALOAD, 0);
      mv.visitFieldInsn(Opcodes.GETFIELD, owner, "client", CLIENT_DESC);
      mv.visitVarInsn(Opcodes.ALOAD, 1);
    }
  }
}
