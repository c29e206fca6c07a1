package dev.retryagent.internal.observe;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retryagent.config.PathMask;
import java.lang.management.ManagementFactory;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The built-in masks of Telegram, Slack and Discord tokens ({@link Sanitizer#withoutKnownTokens}):
 * found also in a JSON-escaped or percent-encoded URL and before any punctuation, and costing
 * nothing for an ordinary path (Sanitizer.path runs on every call with OpenTelemetry on).
 */
class KnownTokensTest {

  private static final String TG = "bot123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsawCANARY";

  @ParameterizedTest
  @CsvSource(
      delimiterString = " => ",
      value = {
        "{\"url\":\"https:\\/\\/api.telegram.org\\/"
            + TG
            + "\\/sendMessage\"}"
            + " => {\"url\":\"https:\\/\\/api.telegram.org\\/<redacted>\\/sendMessage\"}",
        "failed `https://api.telegram.org/"
            + TG
            + "` now"
            + " => failed `https://api.telegram.org/<redacted>` now",
        "failed **https://api.telegram.org/"
            + TG
            + "** now"
            + " => failed **https://api.telegram.org/<redacted>** now",
        "failed |https://api.telegram.org/"
            + TG
            + "| now"
            + " => failed |https://api.telegram.org/<redacted>| now",
        "failed https://api.telegram.org/"
            + TG
            + "\u2026 now"
            + " => failed https://api.telegram.org/<redacted>\u2026 now",
        "{\"url\":\"https:\\/\\/hooks.slack.com\\/services\\/T0ABCDEF1\\/B0ABCDEF2\\/"
            + "XXXXXXXXXXXXXXXXXXXXCANARY\"}"
            + " => {\"url\":\"https:\\/\\/hooks.slack.com\\/services\\/T0ABCDEF1\\/B0ABCDEF2\\/"
            + "<redacted>\"}",
        "failed http://p/fetch/https%3A%2F%2Fapi.telegram.org%2Fbot123456789%3A"
            + "AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsawCANARY%2FsendMessage now"
            + " => failed http://p/fetch/https%3A%2F%2Fapi.telegram.org%2F<redacted>%2FsendMessage now",
      })
  void aTokenInAnEscapedOrEncodedUrlOrBeforeAnyPunctuationIsMaskedInAMessage(
      String text, String expected) {
    assertThat(Sanitizer.message(text, null)).isEqualTo(expected).doesNotContain("CANARY");
  }

  @ParameterizedTest
  @CsvSource(
      delimiterString = " => ",
      value = {
        "/fetch/https%3A%2F%2Fapi.telegram.org%2Fbot123456789%3A"
            + "AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsawCANARY%2FsendMessage"
            + " => /fetch/https%3A%2F%2Fapi.telegram.org%2F<redacted>%2FsendMessage",
        "/bot123456789%3AAAHdqTcvCH1vGWJxfSeofSAs0K5PALDsawCANARY/sendMessage"
            + " => /<redacted>/sendMessage",
        "/fetch/https%3A%2F%2Fhooks.slack.com%2Fservices%2FT0ABCDEF1%2FB0ABCDEF2%2F"
            + "XXXXXXXXXXXXXXXXXXXXCANARY"
            + " => /fetch/https%3A%2F%2Fhooks.slack.com%2Fservices%2FT0ABCDEF1%2FB0ABCDEF2%2F<redacted>",
        // A UUID after webhooks/<id>/ is an id, no Discord token (68 characters).
        "/v1/webhooks/42/3f2a9c0e-7b1d-4e2f-9a6b-0c1d2e3f4a5b"
            + " => /v1/webhooks/42/3f2a9c0e-7b1d-4e2f-9a6b-0c1d2e3f4a5b",
      })
  void aTokenInAPercentEncodedPathIsMasked(String path, String expected) {
    assertThat(Sanitizer.path(path)).isEqualTo(expected).doesNotContain("CANARY");
  }

  @Test
  void anOrdinaryPathCostsNoAllocation() {
    com.sun.management.ThreadMXBean threads =
        (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
    long thread = Thread.currentThread().getId();
    // Words the pre-check looks for, in paths that hold no token (Kubernetes' /services/ proxy,
    // a chatbot, robots.txt, GitHub's webhook deliveries).
    String[] paths = {
      "/robots.txt",
      "/api/chatbot/messages",
      "/api/v1/namespaces/default/services/my-service/proxy/healthz",
      "/repos/o/r/webhooks/42/deliveries",
      "/bot1/status",
      "/v1/items/42"
    };
    int length = 0;
    for (int i = 0; i < 20_000; i++) { // warm up so that the measurement sees compiled code
      length += Sanitizer.path(paths[i % paths.length], PathMask.NONE, false).length();
    }
    long before = threads.getThreadAllocatedBytes(thread);
    for (int i = 0; i < 100_000; i++) {
      length += Sanitizer.path(paths[i % paths.length], PathMask.NONE, false).length();
    }
    long allocated = threads.getThreadAllocatedBytes(thread) - before;
    assertThat(length).isPositive();
    // 100k calls: one allocated object per call would be well over a megabyte.
    assertThat(allocated).isLessThan(64 * 1024);
  }
}
