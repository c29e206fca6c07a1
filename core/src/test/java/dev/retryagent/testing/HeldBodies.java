package dev.retryagent.testing;

import java.util.stream.Stream;
import org.junit.jupiter.params.provider.Arguments;

/**
 * The retried bodies a server holds that the Apache classic tests let go of: each framing ({@link
 * ScriptedHttpServer.Framing}), plain, and gzipped with a length and chunked (a body with no length
 * is not gzipped there). For {@code @MethodSource("dev.retryagent.testing.HeldBodies#all")} with
 * parameters {@code (Framing framing, boolean gzipped)}.
 */
public final class HeldBodies {
  private HeldBodies() {}

  public static Stream<Arguments> all() {
    return Stream.of(
        Arguments.of(ScriptedHttpServer.Framing.LENGTH, false),
        Arguments.of(ScriptedHttpServer.Framing.CHUNKED, false),
        Arguments.of(ScriptedHttpServer.Framing.UNTIL_CLOSE, false),
        Arguments.of(ScriptedHttpServer.Framing.LENGTH, true),
        Arguments.of(ScriptedHttpServer.Framing.CHUNKED, true));
  }
}
