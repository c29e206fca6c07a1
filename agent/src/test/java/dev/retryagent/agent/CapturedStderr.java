package dev.retryagent.agent;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * What the code under test writes on stderr during each test (the agent's messages go there):
 * {@code @RegisterExtension final CapturedStderr stderr = new CapturedStderr();}.
 */
public final class CapturedStderr implements BeforeEachCallback, AfterEachCallback {
  private final ByteArrayOutputStream bytes = new ByteArrayOutputStream();
  private PrintStream original;

  @Override
  public void beforeEach(ExtensionContext context) {
    original = System.err;
    System.setErr(new PrintStream(bytes, true, StandardCharsets.UTF_8));
  }

  @Override
  public void afterEach(ExtensionContext context) {
    System.setErr(original);
  }

  /** Everything written so far. */
  public String text() {
    return bytes.toString(StandardCharsets.UTF_8);
  }
}
