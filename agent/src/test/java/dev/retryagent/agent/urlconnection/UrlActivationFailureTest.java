package dev.retryagent.agent.urlconnection;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retryagent.agent.CapturedStderr;
import dev.retryagent.agent.tooling.HookTransformer;
import java.lang.instrument.ClassFileTransformer;
import java.lang.instrument.Instrumentation;
import java.lang.reflect.Proxy;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * When the JDK's protocol packages cannot be opened to the agent, {@code HttpURLConnection} runs
 * without retries: the start-up line says "NOT hooked" with the cause, as the stderr line does,
 * never "hooked".
 */
class UrlActivationFailureTest {
  @RegisterExtension final CapturedStderr stderr = new CapturedStderr();

  /**
   * A JVM (late attach) that already holds {@code HttpURLConnection}, retransforms it through the
   * transformers added, and refuses to open {@code java.base}'s packages.
   */
  private static Instrumentation refusingToOpen(List<ClassFileTransformer> added) {
    return refusingToOpen(added, "no module may be redefined here");
  }

  private static Instrumentation refusingToOpen(List<ClassFileTransformer> added, String why) {
    return (Instrumentation)
        Proxy.newProxyInstance(
            Instrumentation.class.getClassLoader(),
            new Class<?>[] {Instrumentation.class},
            (proxy, method, args) -> {
              switch (method.getName()) {
                case "addTransformer":
                  added.add((ClassFileTransformer) args[0]);
                  return null;
                case "getAllLoadedClasses":
                  return new Class<?>[] {
                    Class.forName("sun.net.www.protocol.http.HttpURLConnection")
                  };
                case "isRetransformClassesSupported":
                  return true;
                case "retransformClasses":
                  for (Class<?> c : (Class<?>[]) args[0]) {
                    for (ClassFileTransformer t : added) {
                      t.transform(
                          c.getModule(),
                          c.getClassLoader(),
                          c.getName().replace('.', '/'),
                          c,
                          null,
                          new byte[0]);
                    }
                  }
                  return null;
                case "redefineModule":
                  throw new UnsupportedOperationException(why);
                default:
                  return method.getReturnType() == boolean.class ? Boolean.FALSE : null;
              }
            });
  }

  @Test
  void aFailedActivationIsNotHookedOnTheStartUpLine() {
    List<ClassFileTransformer> added = new ArrayList<>();
    Instrumentation inst = refusingToOpen(added);
    UrlConnectionTransformer transformer =
        new UrlConnectionTransformer(new UrlActivation(inst, null));

    String[] status = HookTransformer.installAll(inst, null, null, null, transformer);

    assertThat(transformer.hooked()).isZero();
    assertThat(status[3])
        .startsWith("url-connection NOT hooked (")
        .contains("no module may be redefined here");
    assertThat(stderr.text())
        .contains("url-connection NOT hooked, HttpURLConnection runs without retries");
  }

  @Test
  void aCauseSpanningLinesIsSaidOnOneLineWithoutTheUrlsSecrets() {
    List<ClassFileTransformer> added = new ArrayList<>();
    Instrumentation inst =
        refusingToOpen(added, "refused\n\tat http://user:hunter2@h.example/x?token=s3cret");
    UrlConnectionTransformer transformer =
        new UrlConnectionTransformer(new UrlActivation(inst, null));

    String[] status = HookTransformer.installAll(inst, null, null, null, transformer);

    assertThat(status[3])
        .startsWith("url-connection NOT hooked (")
        .contains("refused")
        .doesNotContain("\n")
        .doesNotContain("hunter2")
        .doesNotContain("s3cret");
    assertThat(stderr.text().lines())
        .allSatisfy(
            line ->
                assertThat(line)
                    .startsWith("retry-agent: ")
                    .doesNotContain("hunter2")
                    .doesNotContain("s3cret"));
  }
}
