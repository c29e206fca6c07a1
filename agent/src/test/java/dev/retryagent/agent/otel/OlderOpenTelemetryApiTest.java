package dev.retryagent.agent.otel;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retryagent.config.PathMask;
import dev.retryagent.engine.CallContext;
import java.io.IOException;
import java.io.InputStream;
import java.util.concurrent.atomic.AtomicReference;
import net.bytebuddy.jar.asm.ClassReader;
import net.bytebuddy.jar.asm.ClassVisitor;
import net.bytebuddy.jar.asm.ClassWriter;
import net.bytebuddy.jar.asm.MethodVisitor;
import net.bytebuddy.jar.asm.Opcodes;
import org.junit.jupiter.api.Test;

/**
 * The glue against an OpenTelemetry API from before 1.57, whose {@code GlobalOpenTelemetry} has no
 * {@code isSet()} (nor {@code getOrNoop()}): the API of every OpenTelemetry agent before 2.23
 * (December 2025). The glue called {@code isSet()} and failed to link with a {@code
 * NoSuchMethodError}: with such an agent no call was ever traced (one line at the first call). The
 * API here is the test class path's, its {@code GlobalOpenTelemetry} rewritten without those two
 * methods, defined with the glue by a class loader of the test's (the relocation aside, what the
 * glue's loader does at run time).
 */
class OlderOpenTelemetryApiTest {
  private static final String GLOBAL = "io.opentelemetry.api.GlobalOpenTelemetry";

  /** The API, the SDK and the glue defined here, GlobalOpenTelemetry as before API 1.57. */
  private static final class OlderApiLoader extends ClassLoader {
    OlderApiLoader() {
      super(OlderOpenTelemetryApiTest.class.getClassLoader());
    }

    @Override
    protected Class<?> loadClass(String name, boolean resolve) throws ClassNotFoundException {
      if (!name.startsWith("io.opentelemetry.")
          && !name.startsWith("dev.retryagent.agent.otel.glue.")) {
        return super.loadClass(name, resolve);
      }
      synchronized (getClassLoadingLock(name)) {
        Class<?> c = findLoadedClass(name);
        if (c == null) {
          byte[] bytes = bytesOf(name);
          if (name.equals(GLOBAL)) {
            bytes = withoutMethods(bytes, "isSet", "getOrNoop");
          }
          c = defineClass(name, bytes, 0, bytes.length);
        }
        if (resolve) {
          resolveClass(c);
        }
        return c;
      }
    }

    private byte[] bytesOf(String name) throws ClassNotFoundException {
      try (InputStream in = getParent().getResourceAsStream(name.replace('.', '/') + ".class")) {
        if (in == null) {
          throw new ClassNotFoundException(name);
        }
        return in.readAllBytes();
      } catch (IOException e) {
        throw new ClassNotFoundException(name, e);
      }
    }
  }

  private static byte[] withoutMethods(byte[] classfile, String... names) {
    ClassWriter writer = new ClassWriter(0);
    new ClassReader(classfile)
        .accept(
            new ClassVisitor(Opcodes.ASM9, writer) {
              @Override
              public MethodVisitor visitMethod(
                  int access, String name, String descriptor, String signature, String[] ex) {
                for (String n : names) {
                  if (n.equals(name)) {
                    return null;
                  }
                }
                return super.visitMethod(access, name, descriptor, signature, ex);
              }
            },
            0);
    return writer.toByteArray();
  }

  @Test
  void theGlueLinksToAnApiWithoutIsSetAndTellsWhetherItIsSet() throws Exception {
    ClassLoader loader = new OlderApiLoader();
    Class<?> global = loader.loadClass(GLOBAL);
    assertThat(global.getMethods()).noneMatch(m -> m.getName().equals("isSet"));
    Class<?> openTelemetry = loader.loadClass("io.opentelemetry.api.OpenTelemetry");
    Class<?> glue = loader.loadClass("dev.retryagent.agent.otel.glue.OtelCallContexts");

    assertThat(OtelSupport.isSet(global)).as("before the agent sets it").isFalse();
    global
        .getMethod("set", openTelemetry)
        .invoke(null, openTelemetry.getMethod("noop").invoke(null));
    try {
      assertThat(OtelSupport.isSet(global)).as("once the agent set it").isTrue();

      Object factory =
          glue.getConstructor(AtomicReference.class)
              .newInstance(new AtomicReference<>(PathMask.NONE));

      assertThat(factory).isInstanceOf(CallContext.Factory.class);
    } finally {
      global.getMethod("resetForTest").invoke(null);
    }
  }
}
