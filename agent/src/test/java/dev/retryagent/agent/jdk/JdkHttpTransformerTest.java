package dev.retryagent.agent.jdk;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retryagent.agent.CapturedStderr;
import java.io.InputStream;
import java.net.http.HttpClient;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

class JdkHttpTransformerTest {
  private final JdkHttpTransformer transformer = new JdkHttpTransformer();
  @RegisterExtension final CapturedStderr stderr = new CapturedStderr();

  private static byte[] realHttpClientFacade() throws Exception {
    try (InputStream in =
        ClassLoader.getPlatformClassLoader().getResourceAsStream(JdkHttpHook.TARGET + ".class")) {
      return in.readAllBytes();
    }
  }

  @Test
  void instrumentsHttpClientFacadeOfTheJavaNetHttpModule() throws Exception {
    byte[] out =
        transformer.transform(
            HttpClient.class.getModule(),
            null,
            JdkHttpHook.TARGET,
            null,
            null,
            realHttpClientFacade());

    assertThat(out).isNotNull();
    assertThat(transformer.hooked()).isEqualTo(1);
    assertThat(stderr.text()).isEmpty();
  }

  @Test
  void aCauseSpanningLinesIsSaidOnOneLineWithoutTheUrlsSecrets() {
    transformer.failed(
        null,
        JdkHttpHook.TARGET,
        new IllegalStateException("bad frame\n\tat http://user:hunter2@h.example/x?token=s3cret"));

    assertThat(stderr.text().lines())
        .singleElement()
        .asString()
        .startsWith("retry-agent: jdk-http NOT hooked")
        .contains("java.lang.IllegalStateException: bad frame")
        .doesNotContain("hunter2")
        .doesNotContain("s3cret");
    assertThat(transformer.notHookedReason())
        .contains("bad frame")
        .doesNotContain("\n")
        .doesNotContain("hunter2")
        .doesNotContain("s3cret");
  }

  @Test
  void leavesEveryOtherClassAlone() throws Exception {
    byte[] bytes = realHttpClientFacade();

    assertThat(
            transformer.transform(
                HttpClient.class.getModule(), null, "java/net/http/HttpClient", null, null, bytes))
        .isNull();
    // same name outside the JDK module: not the class we mean
    assertThat(
            transformer.transform(
                getClass().getModule(), null, JdkHttpHook.TARGET, null, null, bytes))
        .isNull();
    assertThat(transformer.hooked()).isZero();
  }

  @Test
  void aFailureIsReportedOnceAndLeavesTheClassUnchanged() {
    byte[] garbage = {(byte) 0xCA, (byte) 0xFE, 1, 2, 3};

    byte[] first =
        transformer.transform(
            HttpClient.class.getModule(), null, JdkHttpHook.TARGET, null, null, garbage);
    byte[] second =
        transformer.transform(
            HttpClient.class.getModule(), null, JdkHttpHook.TARGET, null, null, garbage);

    assertThat(first).isNull();
    assertThat(second).isNull();
    assertThat(transformer.failure()).isNotNull();
    assertThat(stderr.text().lines())
        .singleElement()
        .asString()
        .startsWith("retry-agent: jdk-http NOT hooked, java.net.http calls run without retries");
  }

  @Test
  void theStartUpFragmentSaysArmedUntilHttpClientFacadeIsRewrittenThenHooked() throws Exception {
    byte[] garbage = {(byte) 0xCA, (byte) 0xFE, 1, 2, 3};
    assertThat(transformer.status()).isEqualTo("jdk-http armed (send, sendAsync)");

    transformer.transform(
        HttpClient.class.getModule(), null, JdkHttpHook.TARGET, null, null, garbage);
    assertThat(transformer.status()).isEqualTo("jdk-http armed (send, sendAsync)");

    transformer.transform(
        HttpClient.class.getModule(), null, JdkHttpHook.TARGET, null, null, realHttpClientFacade());
    assertThat(transformer.status()).isEqualTo("jdk-http hooked (send, sendAsync)");
  }
}
