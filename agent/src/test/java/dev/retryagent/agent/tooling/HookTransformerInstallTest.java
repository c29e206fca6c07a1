package dev.retryagent.agent.tooling;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.lang.instrument.Instrumentation;
import java.lang.reflect.Field;
import java.lang.reflect.Proxy;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

class HookTransformerInstallTest {

  /** Rewrites every class named {@code x/Target} to a fixed byte array. */
  static final class Probe extends HookTransformer {
    Probe() {
      super("probe", "m", "Target");
    }

    @Override
    protected boolean matches(String internalName) {
      return "x/Target".equals(internalName);
    }

    @Override
    protected boolean accepts(Module module, ClassLoader loader, String internalName) {
      return true;
    }

    @Override
    protected byte[] rewrite(String internalName, byte[] classfile) {
      return new byte[] {1};
    }

    @Override
    protected void failed(ClassLoader loader, String internalName, Throwable cause) {}

    @Override
    protected String notHookedReason() {
      return null;
    }

    @Override
    protected boolean retransforms(Class<?> loaded) {
      return false;
    }
  }

  /**
   * A class loading while installAll ends: its thread saw "installing" before installAll's end
   * cleared the list, and records its loader after. The record must not outlive installAll (it
   * would hold that loader, a redeployed web application's, for the JVM's life).
   */
  @Test
  void aClassRewrittenAsInstallAllEndsLeavesNoLoaderBehind() throws Exception {
    Probe probe = new Probe();
    ClassLoader loader = new ClassLoader(null) {};
    AtomicReference<Thread> loading = new AtomicReference<>();
    Instrumentation inst =
        (Instrumentation)
            Proxy.newProxyInstance(
                getClass().getClassLoader(),
                new Class<?>[] {Instrumentation.class},
                (proxy, method, args) -> {
                  if (method.getName().equals("getAllLoadedClasses")) {
                    // installing is true now; the loading thread passes that check and then
                    // waits for the transformer's monitor, which this thread holds
                    Thread t =
                        new Thread(
                            () ->
                                probe.transform(null, loader, "x/Target", null, null, new byte[0]));
                    loading.set(t);
                    t.start();
                    await()
                        .atMost(Duration.ofSeconds(10))
                        .until(() -> t.getState() == Thread.State.BLOCKED);
                    return new Class<?>[0];
                  }
                  if (method.getName().equals("isRetransformClassesSupported")) {
                    return true;
                  }
                  return null;
                });
    synchronized (probe) {
      HookTransformer.installAll(inst, probe);
    }
    loading.get().join(10_000);
    assertThat(loading.get().isAlive()).isFalse();
    Field list = HookTransformer.class.getDeclaredField("rewrittenAtLoad");
    list.setAccessible(true);
    assertThat(list.get(probe)).isNull();
    assertThat(probe.hooked()).isEqualTo(1);
  }
}
