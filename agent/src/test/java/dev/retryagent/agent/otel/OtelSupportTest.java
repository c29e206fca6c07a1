package dev.retryagent.agent.otel;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retryagent.agent.otel.glue.OtelCallContexts;
import dev.retryagent.config.PathMask;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.atomic.AtomicReference;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

class OtelSupportTest {
  private static final Pattern OTEL_NAME = Pattern.compile("(?<!shaded/)io/opentelemetry/[a-z]+");

  private static byte[] bytesOf(Class<?> c) throws IOException {
    try (InputStream in =
        c.getClassLoader().getResourceAsStream(c.getName().replace('.', '/') + ".class")) {
      return in.readAllBytes();
    }
  }

  /** Every {@code io/opentelemetry/...} name in the class file, in order. */
  private static String names(byte[] classfile) {
    Matcher m = OTEL_NAME.matcher(new String(classfile, StandardCharsets.ISO_8859_1));
    StringBuilder b = new StringBuilder();
    while (m.find()) {
      b.append(m.group()).append(' ');
    }
    return b.toString();
  }

  @Test
  void withoutTheOpenTelemetryAgentThereIsNoFactoryAndNoError() {
    // this test JVM has no OpenTelemetry agent: its relocated API is not on the bootstrap path
    assertThat(
            OtelSupport.load(
                OtelSupport.class.getClassLoader(), new AtomicReference<>(PathMask.NONE)))
        .isNull();
  }

  @Test
  void theGlueIsRelocatedOntoTheOpenTelemetryAgentsNames() throws IOException {
    byte[] plain = bytesOf(OtelCallContexts.class);
    assertThat(names(plain)).contains("io/opentelemetry/api", "io/opentelemetry/instrumentation");

    byte[] relocated = new OtelSupport.Relocation().rewrite(plain);

    // after the rewrite, every OpenTelemetry name is under the agent's relocated prefix
    assertThat(names(relocated).split(" "))
        .isNotEmpty()
        .allMatch(n -> n.equals("io/opentelemetry/javaagent"));
    assertThat(new String(relocated, StandardCharsets.ISO_8859_1))
        .contains("io/opentelemetry/javaagent/shaded/io/opentelemetry/api/GlobalOpenTelemetry")
        .contains("io/opentelemetry/javaagent/shaded/io/opentelemetry/context/Context")
        .contains(
            "io/opentelemetry/javaagent/shaded/instrumentation/api/semconv/http/"
                + "HttpClientRequestResendCount")
        .contains("dev/retryagent/engine/CallContext");
  }

  @Test
  void theOperatorCanSwitchItOff() {
    String before = System.getProperty("retryagent.otel.disabled");
    System.setProperty("retryagent.otel.disabled", "true");
    try {
      assertThat(OtelSupport.forEngine()).isNull();
    } finally {
      if (before == null) {
        System.clearProperty("retryagent.otel.disabled");
      } else {
        System.setProperty("retryagent.otel.disabled", before);
      }
    }
    assertThat(OtelSupport.forEngine()).isNotNull();
  }
}
