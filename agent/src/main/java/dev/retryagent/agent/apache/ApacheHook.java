package dev.retryagent.agent.apache;

import dev.retryagent.agent.tooling.Bridge;
import dev.retryagent.agent.tooling.BridgePrologue;
import dev.retryagent.agent.tooling.ClassBytes;
import dev.retryagent.agent.tooling.ProloguePatcher;
import dev.retryagent.agent.tooling.ProloguePatcher.Target;
import java.util.List;
import net.bytebuddy.jar.asm.ClassReader;
import net.bytebuddy.jar.asm.ClassVisitor;
import net.bytebuddy.jar.asm.ClassWriter;
import net.bytebuddy.jar.asm.MethodVisitor;
import net.bytebuddy.jar.asm.Opcodes;

/**
 * Rewrites the Apache HttpClient classes the agent hooks, with calls to {@code
 * java.lang.RetryAgentBridge} that reach {@link ApacheEntry}:
 *
 * <ul>
 *   <li>4.5: {@code InternalHttpClient}, {@code MinimalHttpClient} and {@code AbstractHttpClient}
 *       (the deprecated {@code DefaultHttpClient} family): a {@link BridgePrologue} at the start of
 *       {@code doExecute(HttpHost, HttpRequest, HttpContext)}, the method every {@code execute}
 *       overload comes down to, hands the client and the three arguments to hook {@link
 *       Bridge#APACHE_EXECUTE}, and returns the agent's outcome when it took the call over;
 *   <li>5.x: {@code HttpClientBuilder}, {@code HttpAsyncClientBuilder} and the HTTP/2-only {@code
 *       H2AsyncClientBuilder}: every constructor calls {@code RetryAgentBridge.tell(APACHE_BUILDER,
 *       this)} before it returns, which adds the library's exec chain handlers to the builder and
 *       governs its retry strategy;
 *   <li>4.5: {@code HttpClientBuilder} the same way (the same hook), which governs its retry
 *       handler.
 * </ul>
 *
 * <p>Nothing is added but instructions: no member, field or interface, so retransformation stays
 * possible. Only the hooked methods are rewritten; every other method is copied byte for byte:
 * {@link ProloguePatcher} patches them into the class file's bytes, so that an application loads
 * none of ASM's classes for them (~29, run interpreted as its first client is built); only a class
 * file the patcher leaves alone (a constructor with two {@code return}s, say) is read and written
 * with ASM ({@link WithAsm}), which also says what is missing.
 */
final class ApacheHook {
  static final String BUILDER_5 = "org/apache/hc/client5/http/impl/classic/HttpClientBuilder";
  static final String BUILDER_5_ASYNC =
      "org/apache/hc/client5/http/impl/async/HttpAsyncClientBuilder";
  static final String BUILDER_5_H2 = "org/apache/hc/client5/http/impl/async/H2AsyncClientBuilder";
  static final String BUILDER_4 = "org/apache/http/impl/client/HttpClientBuilder";
  static final String INTERNAL_4 = "org/apache/http/impl/client/InternalHttpClient";
  static final String MINIMAL_4 = "org/apache/http/impl/client/MinimalHttpClient";
  static final String ABSTRACT_4 = "org/apache/http/impl/client/AbstractHttpClient";

  private static final String DO_EXECUTE_DESC =
      "(Lorg/apache/http/HttpHost;Lorg/apache/http/HttpRequest;Lorg/apache/http/protocol/HttpContext;)"
          + "Lorg/apache/http/client/methods/CloseableHttpResponse;";
  private static final String RESPONSE_4 = "org/apache/http/client/methods/CloseableHttpResponse";

  private ApacheHook() {}

  /**
   * The application's own copy of the library's 4.5 transport ({@code RetryingCloseableHttpClient}
   * of retry-agent-core, used by hand beside the agent): each of its attempts is made past the
   * client's hook ({@link Bridge#APACHE_LIBRARY_EXECUTE}), so that the library alone retries it.
   */
  static final String LIBRARY_4 =
      "dev/retryagent/apache4/RetryingCloseableHttpClient$DirectTransport";

  static final String LIBRARY_4_NAME =
      "dev.retryagent.apache4.RetryingCloseableHttpClient$DirectTransport";

  /** The transport's real client, which the library's attempts go to. */
  private static final String LIBRARY_FIELD = "client";

  private static final String CLIENT_4_DESC = "Lorg/apache/http/impl/client/CloseableHttpClient;";

  /**
   * The library's transport with its prologue, patched into the bytes.
   *
   * @throws IllegalStateException for a copy of the library without the transport's {@code client}
   *     field, or one the patcher declines: the class stays unchanged
   */
  static byte[] instrumentLibrary(byte[] classfile) {
    ClassBytes c = ClassBytes.read(classfile);
    if (c == null || !c.hasInstanceField(LIBRARY_FIELD, CLIENT_4_DESC)) {
      throw new IllegalStateException("no field " + LIBRARY_FIELD + " of type CloseableHttpClient");
    }
    byte[] patched =
        ProloguePatcher.patch(
            classfile,
            List.of(
                new Target(
                        "execute",
                        DO_EXECUTE_DESC,
                        Bridge.APACHE_LIBRARY_EXECUTE,
                        new int[] {Target.THIS_FIELD, 1, 2, 3},
                        RESPONSE_4)
                    .withField(LIBRARY_FIELD, CLIENT_4_DESC)));
    if (patched == null) {
      throw new IllegalStateException("its execute could not be patched");
    }
    return patched;
  }

  /** A builder's: every constructor tells as it returns. */
  private static final List<Target> BUILDER_TARGETS =
      List.of(Target.tellBeforeReturn(Bridge.APACHE_BUILDER));

  /** 4.5's clients': {@code doExecute} with the client and its three arguments. */
  private static final List<Target> EXECUTE_TARGETS =
      List.of(
          new Target(
              "doExecute",
              DO_EXECUTE_DESC,
              Bridge.APACHE_EXECUTE,
              new int[] {0, 1, 2, 3},
              RESPONSE_4));

  /**
   * Returns {@code classfile} with the hooks of its class added: patched into the bytes ({@link
   * ProloguePatcher}, no ASM class loaded), or, for a class file the patcher leaves alone, written
   * with ASM ({@link WithAsm}).
   *
   * @throws IllegalStateException if the hooked method or constructor is missing, in which case
   *     nothing must be changed
   */
  static byte[] instrument(String internalName, byte[] classfile) {
    byte[] patched = patch(internalName, classfile);
    return patched != null ? patched : WithAsm.instrument(internalName, classfile);
  }

  /** The class file with the hooks patched in by {@link ProloguePatcher}; null if it declines. */
  static byte[] patch(String internalName, byte[] classfile) {
    return ProloguePatcher.patch(
        classfile, isBuilder(internalName) ? BUILDER_TARGETS : EXECUTE_TARGETS);
  }

  private static boolean isBuilder(String internalName) {
    return internalName.equals(BUILDER_5)
        || internalName.equals(BUILDER_5_ASYNC)
        || internalName.equals(BUILDER_5_H2)
        || internalName.equals(BUILDER_4);
  }

  /**
   * The same hooks written with ASM. A class of its own, so that verifying {@link ApacheHook} loads
   * none of ASM's classes.
   */
  static final class WithAsm {
    private WithAsm() {}

    static byte[] instrument(String internalName, byte[] classfile) {
      ClassReader reader = new ClassReader(classfile);
      ClassWriter writer = new ClassWriter(reader, 0);
      Hooks hooks = new Hooks(writer, isBuilder(internalName));
      reader.accept(hooks, 0);
      if (hooks.hooked == 0) {
        throw new IllegalStateException(
            internalName.replace('/', '.')
                + (hooks.builder
                    ? " has no constructor"
                    : " has no doExecute(HttpHost, HttpRequest, HttpContext)"));
      }
      return writer.toByteArray();
    }
  }

  private static final class Hooks extends ClassVisitor {
    final boolean builder;
    int hooked;

    Hooks(ClassVisitor next, boolean builder) {
      super(Opcodes.ASM9, next);
      this.builder = builder;
    }

    @Override
    public MethodVisitor visitMethod(
        int access, String name, String desc, String signature, String[] exceptions) {
      MethodVisitor mv = super.visitMethod(access, name, desc, signature, exceptions);
      if (builder && name.equals("<init>")) {
        hooked++;
        return new BuilderCreated(mv);
      }
      boolean concrete = (access & (Opcodes.ACC_STATIC | Opcodes.ACC_ABSTRACT)) == 0;
      if (!builder && concrete && name.equals("doExecute") && desc.equals(DO_EXECUTE_DESC)) {
        hooked++;
        return new ExecutePrologue(mv);
      }
      return mv;
    }
  }

  /**
   * Before every {@code return} of a constructor: {@code RetryAgentBridge.tell(APACHE_BUILDER,
   * this)}, which never throws.
   */
  private static final class BuilderCreated extends MethodVisitor {
    BuilderCreated(MethodVisitor next) {
      super(Opcodes.ASM9, next);
    }

    @Override
    public void visitInsn(int opcode) {
      if (opcode == Opcodes.RETURN) {
        // `this` is initialised at every return
        BridgePrologue.tellThis(mv, Bridge.APACHE_BUILDER);
      }
      super.visitInsn(opcode);
    }

    @Override
    public void visitMaxs(int maxStack, int maxLocals) {
      // whatever the stack holds at a return, and the two values of the tell
      super.visitMaxs(maxStack + 2, maxLocals);
    }
  }

  /** {@code RetryAgentBridge.enter(APACHE_EXECUTE, this, target, request, context)}. */
  private static final class ExecutePrologue extends BridgePrologue {
    ExecutePrologue(MethodVisitor next) {
      super(next, Bridge.APACHE_EXECUTE, 4, RESPONSE_4);
    }

    @Override
    protected void pushArguments(MethodVisitor mv) {
      for (int i = 0; i <= 3; i++) {
        mv.visitVarInsn(Opcodes.ALOAD, i);
      }
    }
  }
}
