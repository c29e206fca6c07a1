package dev.retryagent.agent.jdk;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.InputStream;
import java.io.PrintStream;
import java.net.http.HttpClient;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

class JdkHttpTransformerTest {
  private final JdkHttpTransformer transformer = new JdkHttpTransformer();
  private final ByteArrayOutputStream err = new ByteArrayOutputStream();
  private PrintStream originalErr;

  @BeforeEach
  void captureStderr() {
    originalErr = System.err;
    System.setErr(new PrintStream(err, true, StandardCharsets.UTF_8));
  }

  @AfterEach
  void restoreStderr() {
    System.setErr(originalErr);
  }

  private static byte[] realHttpClientImpl() throws Exception {
    try (InputStream in =
        ClassLoader.getPlatformClassLoader().getResourceAsStream(JdkHttpHook.TARGET + ".class")) {
      return in.readAllBytes();
    }
  }

  @Test
  void instrumentsHttpClientImplOfTheJavaNetHttpModule() throws Exception {
    byte[] out =
        transformer.transform(
            HttpClient.class.getModule(),
            null,
            JdkHttpHook.TARGET,
            null,
            null,
            realHttpClientImpl());

    assertThat(out).isNotNull();
    assertThat(transformer.hooked()).isEqualTo(1);
    assertThat(err.toString(StandardCharsets.UTF_8)).isEmpty();
  }

  @Test
  void leavesEveryOtherClassAlone() throws Exception {
    byte[] bytes = realHttpClientImpl();

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
    assertThat(err.toString(StandardCharsets.UTF_8).lines())
        .singleElement()
        .asString()
        .startsWith("retry-agent: jdk-http NOT hooked, java.net.http calls run without retries");
  }

  @Test
  void theStartUpFragmentSaysArmedUntilHttpClientImplIsRewrittenThenHooked() throws Exception {
    byte[] garbage = {(byte) 0xCA, (byte) 0xFE, 1, 2, 3};
    assertThat(transformer.status()).isEqualTo("jdk-http armed (send, sendAsync)");

    transformer.transform(
        HttpClient.class.getModule(), null, JdkHttpHook.TARGET, null, null, garbage);
    assertThat(transformer.status()).isEqualTo("jdk-http armed (send, sendAsync)");

    transformer.transform(
        HttpClient.class.getModule(), null, JdkHttpHook.TARGET, null, null, realHttpClientImpl());
    assertThat(transformer.status()).isEqualTo("jdk-http hooked (send, sendAsync)");
  }
}
