package dev.retryagent.okhttp;

import static org.assertj.core.api.Assertions.assertThat;

import okhttp3.OkHttpClient;
import org.junit.jupiter.api.Test;

/** Proves each test run of this package uses the OkHttp version it claims to. */
class OkHttpVersionTest {
  @Test
  void runsOnTheExpectedOkHttpVersion() throws Exception {
    String expected = System.getProperty("expected.okhttp", "3.14.9");
    java.net.URL jar = OkHttpClient.class.getProtectionDomain().getCodeSource().getLocation();

    assertThat(jar.toString()).contains(expected);
  }
}
