package dev.retryagent.agent.otel;

import dev.retryagent.agent.runtime.AgentLog;
import dev.retryagent.agent.tooling.GlueClassLoader;
import dev.retryagent.config.PathMask;
import dev.retryagent.engine.CallContext;
import dev.retryagent.engine.RetryCall;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.util.concurrent.atomic.AtomicReference;
import net.bytebuddy.jar.asm.ClassReader;
import net.bytebuddy.jar.asm.ClassWriter;
import net.bytebuddy.jar.asm.Opcodes;
import net.bytebuddy.jar.asm.commons.ClassRemapper;
import net.bytebuddy.jar.asm.commons.Remapper;

/**
 * The engine's {@link CallContext.Factory} when the OpenTelemetry Java agent runs in the same JVM:
 * every attempt of a retried call becomes a CLIENT span of the same trace (docs/opentelemetry.md).
 *
 * <p>How the agent reaches OpenTelemetry without a second SDK: the OpenTelemetry agent puts its
 * copy of the API on the bootstrap class path, relocated under {@code
 * io.opentelemetry.javaagent.shaded}, backed by its SDK (and bridges the application's own API onto
 * it). The glue ({@code dev.retryagent.agent.otel.glue}) is compiled against the plain API and
 * defined by a {@link GlueClassLoader} whose parent is the bootstrap loader, with those names
 * rewritten to the relocated ones: it links to the OpenTelemetry agent's API and to the agent's
 * engine. No OpenTelemetry class is in the agent's jar.
 *
 * <p>Looked for once, at the first call that is not a pass-through (after every {@code premain}, so
 * whichever {@code -javaagent} comes first), with one bootstrap lookup that initialises nothing; a
 * call made while the OpenTelemetry agent is still starting runs untraced and decides nothing.
 * Without the OpenTelemetry agent nothing more is loaded; with {@code
 * -Dretryagent.otel.disabled=true} not even that lookup is made. If the glue cannot link (an
 * OpenTelemetry agent whose relocated names differ), one line says so and calls run untraced.
 */
public final class OtelSupport implements CallContext.Factory {
  static final String SHADED = "io/opentelemetry/javaagent/shaded/";

  /** Every relocated class the glue needs, looked up before the glue is defined. */
  private static final String[] REQUIRED = {
    "io.opentelemetry.javaagent.shaded.io.opentelemetry.api.GlobalOpenTelemetry",
    "io.opentelemetry.javaagent.shaded.io.opentelemetry.context.Context",
    "io.opentelemetry.javaagent.shaded.io.opentelemetry.context.propagation.TextMapSetter",
    "io.opentelemetry.javaagent.shaded.instrumentation.api.semconv.http"
        + ".HttpClientRequestResendCount",
  };

  private static final String GLUE_PACKAGE = "dev.retryagent.agent.otel.glue.";
  private static final String GLUE = GLUE_PACKAGE + "OtelCallContexts";

  private final Object lock = new Object();
  private volatile boolean resolved;
  private volatile CallContext.Factory glue;

  /** {@code agent.redact.pathSegments}, for the paths our spans carry; shared with the glue. */
  private final AtomicReference<PathMask> pathMask = new AtomicReference<>(PathMask.NONE);

  /** The factory for the engine, or null when the operator disabled tracing. */
  public static OtelSupport forEngine() {
    return Boolean.getBoolean("retryagent.otel.disabled") ? null : new OtelSupport();
  }

  private OtelSupport() {}

  /** Masks the paths of spans started from now on as {@code mask} says (at start and on reload). */
  public void usePathMask(PathMask mask) {
    pathMask.set(mask);
  }

  @Override
  public CallContext create(RetryCall call) {
    if (!resolved) {
      if (notSetYet()) {
        return null;
      }
      resolve();
    }
    CallContext.Factory g = glue;
    return g == null ? null : g.create(call);
  }

  /**
   * True while the OpenTelemetry agent is present but has not set its global instance yet: a call
   * made inside its {@code premain} with retry-agent's hooks already in place (retry-agent's {@code
   * -javaagent} first), say by its GCP resource detector, which asks the metadata server through
   * {@code HttpURLConnection}, or by an extension. Resolved then, the glue would find the API
   * unusable and every call of the JVM's life would go untraced; that call runs untraced instead,
   * and a later one resolves.
   */
  private boolean notSetYet() {
    try {
      return !isSet(Class.forName(REQUIRED[0], false, null));
    } catch (ClassNotFoundException absent) {
      return false; // resolve() finds it absent, for good
    } catch (ReflectiveOperationException | RuntimeException | LinkageError e) {
      return false; // resolve() tells what cannot be linked
    }
  }

  /**
   * Whether {@code global}, the OpenTelemetry agent's relocated {@code GlobalOpenTelemetry}, has
   * its instance set, without setting one: {@code get()} on an unset instance pins a no-op for good
   * (and the OpenTelemetry agent's own {@code set()} then fails). Its {@code isSet()} came with API
   * 1.57 (OpenTelemetry agent 2.23, December 2025); before it, the field that {@code set()} writes,
   * {@code globalOpenTelemetry} in every version. Asked only until the first call that is not a
   * pass-through resolves the glue ({@link #notSetYet}), and by the glue before it asks for a
   * tracer. Public for the glue, which its own class loader defines.
   *
   * @throws ReflectiveOperationException when {@code global} has neither
   */
  public static boolean isSet(Class<?> global) throws ReflectiveOperationException {
    Method isSet;
    try {
      isSet = global.getMethod("isSet");
    } catch (NoSuchMethodException beforeApi157) {
      Field instance = global.getDeclaredField("globalOpenTelemetry");
      instance.setAccessible(true); // the bootstrap loader's unnamed module: open to everyone
      return instance.get(null) != null;
    }
    return Boolean.TRUE.equals(isSet.invoke(null));
  }

  private void resolve() {
    synchronized (lock) {
      if (!resolved) {
        glue = load(OtelSupport.class.getClassLoader(), pathMask);
        resolved = true;
      }
    }
  }

  /** The glue's factory, or null when the OpenTelemetry agent is absent or cannot be linked. */
  static CallContext.Factory load(ClassLoader agentLoader, AtomicReference<PathMask> pathMask) {
    try {
      // Looked up, never initialised: GlobalOpenTelemetry must not be touched before it is set.
      Class.forName(REQUIRED[0], false, null);
    } catch (ClassNotFoundException absent) {
      return null;
    }
    try {
      for (String name : REQUIRED) {
        Class.forName(name, false, null);
      }
      GlueClassLoader loader =
          new GlueClassLoader(
              "retry-agent-otel", null, agentLoader, new Relocation(), GLUE_PACKAGE);
      Object factory =
          loader
              .loadClass(GLUE)
              .getDeclaredConstructor(AtomicReference.class)
              .newInstance(pathMask);
      return (CallContext.Factory) factory;
    } catch (ReflectiveOperationException | RuntimeException | LinkageError e) {
      AgentLog.error(
          "the OpenTelemetry agent is present, but retried calls are not traced: its API could"
              + " not be linked ("
              + e
              + ")");
      return null;
    }
  }

  /** Rewrites the plain OpenTelemetry API's names to the OpenTelemetry agent's relocated ones. */
  static final class Relocation implements GlueClassLoader.Rewriter {
    private static final String[][] PREFIXES = {
      {"io/opentelemetry/api/", SHADED + "io/opentelemetry/api/"},
      {"io/opentelemetry/context/", SHADED + "io/opentelemetry/context/"},
      {"io/opentelemetry/instrumentation/api/", SHADED + "instrumentation/api/"},
    };

    @Override
    public byte[] rewrite(byte[] classfile) {
      ClassReader reader = new ClassReader(classfile);
      ClassWriter writer = new ClassWriter(0);
      reader.accept(new ClassRemapper(writer, new Names()), 0);
      return writer.toByteArray();
    }

    private static final class Names extends Remapper {
      Names() {
        super(Opcodes.ASM9);
      }

      @Override
      public String map(String internalName) {
        for (String[] p : PREFIXES) {
          if (internalName.startsWith(p[0])) {
            return p[1] + internalName.substring(p[0].length());
          }
        }
        return internalName;
      }
    }
  }
}
