package dev.retryagent.agent.jdk;

import dev.retryagent.agent.tooling.Bridge;
import dev.retryagent.agent.tooling.BridgePrologue;
import dev.retryagent.agent.tooling.ClassBytes;
import dev.retryagent.agent.tooling.ProloguePatcher;
import dev.retryagent.agent.tooling.PublicMethodHooks;
import java.util.List;
import net.bytebuddy.jar.asm.ClassReader;
import net.bytebuddy.jar.asm.ClassVisitor;
import net.bytebuddy.jar.asm.ClassWriter;
import net.bytebuddy.jar.asm.MethodVisitor;
import net.bytebuddy.jar.asm.Opcodes;

/**
 * Rewrites {@code jdk.internal.net.http.HttpClientFacade}, the {@code HttpClient} every application
 * holds ({@code HttpClient.newHttpClient()} and the builder return it): a {@link BridgePrologue} at
 * the start of {@code send(HttpRequest, BodyHandler)}, {@code sendAsync(HttpRequest, BodyHandler)}
 * and {@code sendAsync(HttpRequest, BodyHandler, PushPromiseHandler)} hands the call to the agent
 * through {@code java.lang.RetryAgentBridge} as hooks {@link Bridge#JDK_SEND} and {@link
 * Bridge#JDK_SEND_ASYNC} (see {@link BridgePrologue} for the prologue in Java terms), with the
 * facade itself as the client (a 2-argument {@code sendAsync} with a null push-promise handler). On
 * Java 21+ the facade's {@code shutdown()}, {@code shutdownNow()} and {@code close()} get a
 * prologue too ({@link Bridge#JDK_SHUTDOWN} and the next two, {@link ShutdownEntry}).
 *
 * <p>Why the facade and not {@code HttpClientImpl}, which does the work: other agents instrument
 * {@code HttpClientImpl} (the OpenTelemetry agent's {@code java-http-client} instrumentation
 * excludes the facade by name), and a prologue in a method another agent also rewrites runs inside
 * or outside that agent's code depending on the {@code -javaagent} order. In the facade it always
 * runs first, so each of the agent's attempts (the facade's original body, then {@code
 * HttpClientImpl}) is what such an agent sees, in either order (docs/opentelemetry.md). Holding the
 * facade also keeps the JDK from shutting the client down while an asynchronous retry waits, even
 * when the application dropped its reference right after {@code sendAsync}.
 *
 * <p>Every other method is copied byte for byte: {@link ProloguePatcher} patches the hooked ones
 * into the class file's bytes; only a class file it leaves alone is read with ASM, without
 * expanding frames, and written with the reader's constant pool.
 */
final class JdkHttpHook {
  static final String TARGET = "jdk/internal/net/http/HttpClientFacade";
  static final String TARGET_NAME = "jdk.internal.net.http.HttpClientFacade";
  static final String TARGET_MODULE = "java.net.http";

  /**
   * Java 21 gave {@code HttpClient} its {@code shutdown}, {@code shutdownNow} and {@code close}.
   */
  static final boolean SHUTS_DOWN = Runtime.version().feature() >= 21;

  private static final String SEND_DESC =
      "(Ljava/net/http/HttpRequest;Ljava/net/http/HttpResponse$BodyHandler;)"
          + "Ljava/net/http/HttpResponse;";
  private static final String SEND_ASYNC_2_DESC =
      "(Ljava/net/http/HttpRequest;Ljava/net/http/HttpResponse$BodyHandler;)"
          + "Ljava/util/concurrent/CompletableFuture;";
  private static final String SEND_ASYNC_DESC =
      "(Ljava/net/http/HttpRequest;Ljava/net/http/HttpResponse$BodyHandler;"
          + "Ljava/net/http/HttpResponse$PushPromiseHandler;)"
          + "Ljava/util/concurrent/CompletableFuture;";
  private static final String FUTURE = "java/util/concurrent/CompletableFuture";

  private JdkHttpHook() {}

  /**
   * The application's own copy of the library's transport ({@code RetryingHttpClient} of
   * retry-agent-core, used by hand beside the agent): each of its attempts is sent past the
   * facade's hook ({@link Bridge#JDK_LIBRARY_SEND}), so that the library alone retries it.
   */
  static final String LIBRARY = "dev/retryagent/jdk/RetryingHttpClient$DirectTransport";

  static final String LIBRARY_NAME = "dev.retryagent.jdk.RetryingHttpClient$DirectTransport";

  /** The transport's real client, which the library's attempts go to. */
  private static final String LIBRARY_FIELD = "delegate";

  private static final String CLIENT_DESC = "Ljava/net/http/HttpClient;";

  private static final List<ProloguePatcher.Target> LIBRARY_TARGETS =
      List.of(
          new ProloguePatcher.Target(
                  "send",
                  SEND_DESC,
                  Bridge.JDK_LIBRARY_SEND,
                  new int[] {ProloguePatcher.Target.THIS_FIELD, 1, 2},
                  "java/net/http/HttpResponse")
              .withField(LIBRARY_FIELD, CLIENT_DESC),
          new ProloguePatcher.Target(
                  "sendAsync",
                  SEND_ASYNC_DESC,
                  Bridge.JDK_LIBRARY_SEND_ASYNC,
                  new int[] {ProloguePatcher.Target.THIS_FIELD, 1, 2, 3},
                  FUTURE)
              .withField(LIBRARY_FIELD, CLIENT_DESC));

  /**
   * The library's transport with its two prologues, patched into the bytes.
   *
   * @throws IllegalStateException for a copy of the library without the transport's {@code
   *     delegate} field (older than the agent's recognition of it), or one the patcher declines:
   *     the class stays unchanged
   */
  static byte[] instrumentLibrary(byte[] classfile) {
    ClassBytes c = ClassBytes.read(classfile);
    if (c == null || !c.hasInstanceField(LIBRARY_FIELD, CLIENT_DESC)) {
      throw new IllegalStateException("no field " + LIBRARY_FIELD + " of type HttpClient");
    }
    byte[] patched = ProloguePatcher.patch(classfile, LIBRARY_TARGETS);
    if (patched == null) {
      throw new IllegalStateException("its methods could not be patched");
    }
    return patched;
  }

  /** What {@code shutdown()}, {@code shutdownNow()} and {@code close()} take and return. */
  private static final String VOID_DESC = "()V";

  /** The three sending methods, as {@link ProloguePatcher} takes them over. */
  private static final List<ProloguePatcher.Target> SENDING =
      List.of(
          new ProloguePatcher.Target(
              "send",
              SEND_DESC,
              Bridge.JDK_SEND,
              new int[] {0, 1, 2},
              "java/net/http/HttpResponse"),
          new ProloguePatcher.Target(
              "sendAsync",
              SEND_ASYNC_2_DESC,
              Bridge.JDK_SEND_ASYNC,
              new int[] {0, 1, 2, -1},
              FUTURE),
          new ProloguePatcher.Target(
              "sendAsync", SEND_ASYNC_DESC, Bridge.JDK_SEND_ASYNC, new int[] {0, 1, 2, 3}, FUTURE));

  /**
   * What is taken over, as {@link ProloguePatcher} takes it: the three sending methods, and on Java
   * 21+ the facade's {@code shutdown()}, {@code shutdownNow()} and {@code close()}, so that a
   * shutdown lets the calls waiting for a retry finish ({@link ShutdownEntry}).
   */
  static final List<ProloguePatcher.Target> TARGETS =
      SHUTS_DOWN
          ? List.of(
              SENDING.get(0),
              SENDING.get(1),
              SENDING.get(2),
              new ProloguePatcher.Target(
                  "shutdown", VOID_DESC, Bridge.JDK_SHUTDOWN, new int[] {0}, null),
              new ProloguePatcher.Target(
                  "shutdownNow", VOID_DESC, Bridge.JDK_SHUTDOWN_NOW, new int[] {0}, null),
              new ProloguePatcher.Target("close", VOID_DESC, Bridge.JDK_CLOSE, new int[] {0}, null))
          : SENDING;

  /**
   * Returns {@code classfile} with the prologues added: patched into the bytes ({@link
   * ProloguePatcher}, no ASM class loaded), or, for a class file the patcher leaves alone, written
   * with ASM ({@link WithAsm}), which also says what is missing.
   *
   * @throws IllegalStateException if any of the methods is missing (an unsupported JDK), in which
   *     case nothing must be changed
   */
  static byte[] instrument(byte[] classfile) {
    byte[] patched = ProloguePatcher.patch(classfile, TARGETS);
    return patched != null ? patched : WithAsm.instrument(classfile);
  }

  /**
   * The same prologues written with ASM. A class of its own, so that verifying {@link JdkHttpHook}
   * loads none of ASM's classes.
   */
  static final class WithAsm {
    private WithAsm() {}

    static byte[] instrument(byte[] classfile) {
      ClassReader reader = new ClassReader(classfile);
      ClassWriter writer = new ClassWriter(reader, 0);
      Hooks hooks = new Hooks(writer);
      reader.accept(hooks, 0);
      if (!hooks.send || !hooks.sendAsync2 || !hooks.sendAsync) {
        throw new IllegalStateException(
            reader.getClassName().replace('/', '.')
                + " has no "
                + (hooks.send ? "" : "send(HttpRequest, BodyHandler) ")
                + (hooks.sendAsync2 ? "" : "sendAsync(HttpRequest, BodyHandler) ")
                + (hooks.sendAsync
                    ? ""
                    : "sendAsync(HttpRequest, BodyHandler, PushPromiseHandler) ")
                + "on this JDK");
      }
      return writer.toByteArray();
    }
  }

  private static final class Hooks extends PublicMethodHooks {
    boolean send;
    boolean sendAsync2;
    boolean sendAsync;

    Hooks(ClassVisitor next) {
      super(next);
    }

    @Override
    protected MethodVisitor hook(MethodVisitor mv, String name, String desc) {
      if (name.equals("send") && desc.equals(SEND_DESC)) {
        send = true;
        return new Prologue(mv, 2, Bridge.JDK_SEND, 2, "java/net/http/HttpResponse");
      }
      if (name.equals("sendAsync") && desc.equals(SEND_ASYNC_2_DESC)) {
        sendAsync2 = true;
        return new Prologue(mv, 2, Bridge.JDK_SEND_ASYNC, 3, FUTURE);
      }
      if (name.equals("sendAsync") && desc.equals(SEND_ASYNC_DESC)) {
        sendAsync = true;
        return new Prologue(mv, 3, Bridge.JDK_SEND_ASYNC, 3, FUTURE);
      }
      if (SHUTS_DOWN && desc.equals(VOID_DESC)) {
        int hook =
            name.equals("shutdown")
                ? Bridge.JDK_SHUTDOWN
                : name.equals("shutdownNow")
                    ? Bridge.JDK_SHUTDOWN_NOW
                    : name.equals("close") ? Bridge.JDK_CLOSE : -1;
        if (hook >= 0) {
          // Optional: without it, a shutdown does not wait for a call waiting to retry, as before.
          return new Prologue(mv, 0, hook, 0, null);
        }
      }
      return mv;
    }
  }

  /**
   * The prologue: {@code this}, then the arguments, then null for a push-promise handler the method
   * does not take ({@code sendAsync(request, handler)}).
   */
  private static final class Prologue extends BridgePrologue {
    private final int parameters;
    private final int bridgeParameters;

    /**
     * @param parameters the hooked method's
     * @param bridgeParameters what the hook takes after the client: 2 for send, 3 for sendAsync
     */
    Prologue(
        MethodVisitor next, int parameters, int hook, int bridgeParameters, String returnType) {
      super(next, hook, bridgeParameters + 1, returnType);
      this.parameters = parameters;
      this.bridgeParameters = bridgeParameters;
    }

    @Override
    protected void pushArguments(MethodVisitor mv) {
      mv.visitVarInsn(Opcodes.ALOAD, 0);
      for (int i = 1; i <= parameters; i++) {
        mv.visitVarInsn(Opcodes.ALOAD, i);
      }
      for (int i = parameters; i < bridgeParameters; i++) {
        mv.visitInsn(Opcodes.ACONST_NULL);
      }
    }
  }
}
