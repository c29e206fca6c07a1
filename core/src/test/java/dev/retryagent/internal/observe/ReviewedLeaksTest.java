package dev.retryagent.internal.observe;

import static org.assertj.core.api.Assertions.assertThat;

import java.lang.management.ManagementFactory;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Forms of a secret a review found written whole in a message or a path: each is redacted, the text
 * around it kept.
 */
class ReviewedLeaksTest {

  @ParameterizedTest
  @CsvSource(
      delimiterString = " => ",
      value = {
        // A user-info after a '/' in a word that does not start with one.
        "failed redis/admin:hunterCANARY@db.example:6379 x"
            + " => failed redis/<redacted>@db.example:6379 x",
        "failed a/b/u:pwCANARY@h/x => failed a/b/<redacted>@h/x",
        // A redirect's Location, a relative path holding one.
        "Location: /proxy/user:pwCANARY@h/y => Location: /proxy/<redacted>@h/y",
        "redirect to /proxy/user:pwCANARY@h/y failed => redirect to /proxy/<redacted>@h/y failed",
        // A password that reads as a version when no dotted group comes before it, or a time when a
        // port or path follows its host.
        "connect root:hunterCANARY@1.2 failed => connect <redacted>@1.2 failed",
        "connect root:1.2.3@1.2 failed => connect <redacted>@1.2 failed",
        "connect 12:34@db:5432/x failed => connect <redacted>@db:5432/x failed",
        // A backslash starting the password: only a one-letter name before it is a drive.
        "connect admin:\\CANARY@host/x failed => connect <redacted>@host/x failed",
        // A password starting with a brace or a bracket (r32): no JSON key before its colon.
        "connect admin:{CANARY}@db failed => connect <redacted>@db failed",
        "connect admin:[CANARY]@db.example:5432 failed => connect <redacted>@db.example:5432 failed",
      })
  void aBareUserInfoIsRedacted(String text, String expected) {
    assertThat(Sanitizer.message(text, null)).isEqualTo(expected).doesNotContain("CANARY");
  }

  @ParameterizedTest
  @CsvSource(
      delimiterString = " => ",
      value = {
        // A blank in a password written without a scheme, last after ": " or quoted.
        "unexpected url: u:pw CANARY@h/x => unexpected url: <redacted>@h/x",
        // After a colon and a tab, or more than one blank (r32).
        // (a message's blanks are written as one)
        "failed:\tu:pw CANARY@h/x => failed: <redacted>@h/x",
        "failed:  u:pw CANARY@h/x => failed: <redacted>@h/x",
        "failed:  http://alice:pw CANARY@h/x => failed: http://h/x",
        "unexpected url: u:correct horse CANARY@h/x?q=1 z => unexpected url: <redacted>@h/x",
        "failed: 'u:pw CANARY@h' ok => failed: '<redacted>@h' ok",
        // A scheme-relative URL in quotes.
        "Invalid host: \"//alice:pw CANARY@h/x\" end => Invalid host: \"//h/x\" end",
        // A URL nested in a quoted URL's path.
        "request for \"http://h/fetch/http://alice:pw CANARY@t/x\" failed"
            + " => request for \"http://h/fetch/http://t/x\" failed",
        // A URL as a key's value.
        "bad url=http://alice:pw CANARY@h/x rest => bad url=http://h/x rest",
        // A scheme-relative URL or a user-info without a scheme as a key's value.
        "bad url=//alice:pw CANARY@h/x rest => bad url=//h/x rest",
        "bad url=alice:pw CANARY@h/x rest => bad url=<redacted>@h/x rest",
        // A URL in angle brackets or parentheses.
        "see <http://alice:pw CANARY@h/x> rest => see <http://h/x> rest",
        "see (http://alice:pw CANARY@h/x) rest => see (http://h/x) rest",
        "see <http://alice:correct horse CANARY@h/x> rest => see <http://h/x> rest",
      })
  void aUserInfoWithABlankIsRedactedWhole(String text, String expected) {
    assertThat(Sanitizer.message(text, null)).isEqualTo(expected).doesNotContain("CANARY");
  }

  /**
   * A span without a scheme that goes on past blanks to its '@' (quoted, last after ": ", a key's
   * value, bracketed, a relative path): the 4 KiB cut at a blank inside its password left no '@',
   * and the user and the password's first word were written (u:correct). The text is a server's
   * body of blanks first, folded, so that what lies near the cut is what is printed.
   */
  @ParameterizedTest
  @ValueSource(
      strings = {
        "unexpected url: u:correct horse battery@h/x",
        "failed: 'u:correct horse battery@h' ok",
        "bad url=u:correct horse battery@h/x rest",
        "Invalid host: \"//alice:correct horse battery@h/x\" end",
        "see <http://alice:correct horse battery@h/x> rest",
        "see (http://alice:correct horse battery@h/x) rest",
        "Location: /proxy/alice:correct horse battery@h/y",
      })
  void aCutInsideASpanWithoutASchemeLeavesNoPartOfItsPassword(String span) {
    for (int n = 4040; n < Sanitizer.MAX_CLEANED_CHARS; n++) {
      String text = "upstream said:" + " ".repeat(n) + span + " " + "x ".repeat(100);
      assertThat(Sanitizer.message(text, null))
          .doesNotContain("alice")
          .doesNotContain("correct")
          .doesNotContain("horse")
          .doesNotContain("u:");
    }
  }

  /**
   * A password of three words or more (a passphrase): the '@' was looked for within two words after
   * the user name's, and the words were written whole (r33). A bracketed URL with no '/' after it
   * anywhere in the text was not followed at all.
   */
  @ParameterizedTest
  @CsvSource(
      delimiterString = " => ",
      value = {
        "unexpected url: u:a b c CANARY@h/x => unexpected url: <redacted>@h/x",
        "unexpected url: u:correct horse battery staple CANARY@h/x"
            + " => unexpected url: <redacted>@h/x",
        "failed: 'u:a b c CANARY@h' ok => failed: '<redacted>@h' ok",
        "bad url=u:a b c CANARY@h/x rest => bad url=<redacted>@h/x rest",
        "bad url=//alice:a b c CANARY@h/x rest => bad url=//h/x rest",
        "Invalid host: \"//alice:a b c CANARY@h/x\" end => Invalid host: \"//h/x\" end",
        "see <http://alice:a b c CANARY@h/x> rest => see <http://h/x> rest",
        "see (http://alice:a b c CANARY@h/x) rest => see (http://h/x) rest",
        "see <http://alice:pw CANARY@h> rest => see <http://h> rest",
      })
  void aPasswordOfManyWordsIsRedactedWhole(String text, String expected) {
    assertThat(Sanitizer.message(text, null)).isEqualTo(expected).doesNotContain("CANARY");
  }

  @ParameterizedTest
  @CsvSource(
      delimiterString = " => ",
      value = {
        // A user-info percent-encoded without a scheme, once or twice: written decoded, cleaned.
        "bad u%3ApwCANARY%40h%2Fx rest => bad <redacted>@h/x rest",
        "bad u%253ApwCANARY%2540h%252Fx rest => bad <redacted>@h/x rest",
        // Three times (r33).
        "bad u%25253ApwCANARY%252540h%25252Fx rest => bad <redacted>@h/x rest",
        "bad http%25253A%25252F%25252Fadmin%25253AhunterCANARY%252540h rest"
            + " => bad http%3A%2F%2Fh rest",
        // A URL encoded twice, alone or in a path.
        "bad http%253A%252F%252Fadmin%253AhunterCANARY%2540h rest => bad http%3A%2F%2Fh rest",
        "bad /fetch/http%253A%252F%252Fadmin%253AhunterCANARY%2540h/x rest"
            + " => bad /fetch/http%3A%2F%2Fh/x rest",
        // Also when the plain pass drops something else first (a query), once or twice encoded.
        "bad u%3ApwCANARY%40h?x=1 rest => bad <redacted>@h rest",
        "bad http%253A%252F%252Fadmin%253AhunterCANARY%2540h%253Fq%253D1 rest"
            + " => bad http%3A%2F%2Fh rest",
      })
  void anEncodedUserInfoIsRedacted(String text, String expected) {
    assertThat(Sanitizer.message(text, null)).isEqualTo(expected).doesNotContain("CANARY");
  }

  @ParameterizedTest
  @CsvSource(
      delimiterString = " => ",
      value = {
        "/fetch/http%253A%252F%252Fadmin%253AhunterCANARY%2540h => /fetch/http%3A%2F%2Fh",
        // Three times (r33).
        "/fetch/http%25253A%25252F%25252Fadmin%25253AhunterCANARY%252540h"
            + " => /fetch/http%3A%2F%2Fh",
        "/fetch/http%253A%252F%252Fu%253ApwCANARY%2540h%252Fx%253Ftoken%253DS"
            + " => /fetch/http%3A%2F%2Fh%2Fx",
        // A user-info removed before (as it came, or encoded once) does not stop a twice-encoded
        // one after it from being looked at (r34: CANARY was written).
        "/p/http://a:b@h/n/http%253A%252F%252Fu%253ACANARY%2540h2"
            + " => /p/http://h/n/http%3A%2F%2Fh2",
        "/p/http%3A%2F%2Fa%3Ab%40h/n/http%253A%252F%252Fu%253ACANARY%2540h2"
            + " => /p/http%3A%2F%2Fh/n/http%3A%2F%2Fh2",
        // An address encoded twice in a path is kept, as one encoded once is.
        "/users/a%2540b.example => /users/a%2540b.example",
      })
  void aUrlEncodedTwiceInAPathLosesItsUserInfo(String path, String expected) {
    assertThat(Sanitizer.path(path)).isEqualTo(expected).doesNotContain("CANARY");
  }

  @ParameterizedTest
  @CsvSource(
      delimiterString = " => ",
      value = {
        // A session id after the host, its ';' percent-encoded: not read as a user-info.
        "bad http://h%3Bjsessionid=AB@CD/y rest => bad http://<redacted>/y rest",
        "bad http://h%3bjsessionid=AB@CD rest => bad http://<redacted> rest",
        // Encoded twice or three times (r33).
        "bad http://h%253Bjsessionid=AB@CD/y rest => bad http://<redacted>/y rest",
        "bad http://h%25253bjsessionid=AB@CD/y rest => bad http://<redacted>/y rest",
      })
  void anEncodedSessionIdAfterTheHostIsNotWrittenAsAHost(String text, String expected) {
    assertThat(Sanitizer.message(text, null)).isEqualTo(expected).doesNotContain("CD");
  }

  @Test
  void aJsonSecretEscapedTwiceOrWithSingleQuotesIsRedacted() {
    assertThat(
            Sanitizer.message("body {\\\\\\\"password\\\\\\\":\\\\\\\"CANARY\\\\\\\"} end", null))
        .isEqualTo("body {\\\\\\\"password\\\\\\\":\\\\\\\"<redacted>\\\\\\\"} end");
    assertThat(
            Sanitizer.message("body {\\\\\\\"password\\\\\\\": \\\\\\\"CAN ARY\\\\\\\"} end", null))
        .isEqualTo("body {\\\\\\\"password\\\\\\\": \\\\\\\"<redacted>\\\\\\\"} end");
    assertThat(
            Sanitizer.message(
                "body {\\\\\\\\\\\\\\\"password\\\\\\\\\\\\\\\":\\\\\\\\\\\\\\\"CANARY\\\\\\\\\\\\\\\"} end",
                null))
        .isEqualTo(
            "body {\\\\\\\\\\\\\\\"password\\\\\\\\\\\\\\\":\\\\\\\\\\\\\\\"<redacted>\\\\\\\\\\\\\\\"} end");
    assertThat(Sanitizer.message("body {\\'password\\':\\'CAN ARY\\'} end", null))
        .isEqualTo("body {\\'password\\':\\'<redacted>\\'} end");
    assertThat(Sanitizer.message("body {\\'password\\': \\'CANARY\\', \\'a\\': 1} end", null))
        .isEqualTo("body {\\'password\\': \\'<redacted>\\', \\'a\\': 1} end");
    assertThat(Sanitizer.message("body {\\\\\\\"Cookie\\\\\\\":\\\\\\\"CANARY\\\\\\\"}", null))
        .isEqualTo("body {\\\\\\\"Cookie\\\\\\\":<redacted>");
  }

  /**
   * A JSON text escaped twice whose secret value holds a quote of its own (escaped once more: 7
   * backslashes where the value's quotes have 3): the value was cut at it, the rest written (r33).
   * A backslash of the value's own before its closing quote does not hide that quote.
   */
  @Test
  void aJsonSecretEscapedTwiceWithAQuoteInsideIsRedactedWhole() {
    String q3 = "\\\\\\\"";
    String q7 = "\\\\\\\\\\\\\\\"";
    String b8 = "\\\\\\\\\\\\\\\\";
    assertThat(
            Sanitizer.message(
                "body {"
                    + q3
                    + "password"
                    + q3
                    + ":"
                    + q3
                    + "CAN"
                    + q7
                    + "ARY SEC RET"
                    + q3
                    + ", "
                    + q3
                    + "a"
                    + q3
                    + ":1} end",
                null))
        .isEqualTo(
            "body {"
                + q3
                + "password"
                + q3
                + ":"
                + q3
                + "<redacted>"
                + q3
                + ", "
                + q3
                + "a"
                + q3
                + ":1} end");
    // Ending in a backslash of its own (8, then the closing quote's 3): closed there.
    assertThat(
            Sanitizer.message(
                "body {" + q3 + "password" + q3 + ":" + q3 + "CANARY" + b8 + q3 + ", x} end", null))
        .isEqualTo("body {" + q3 + "password" + q3 + ":" + q3 + "<redacted>" + q3 + ", x} end");
  }

  @ParameterizedTest
  @CsvSource(
      delimiterString = " => ",
      value = {
        // A path's own encoded '?', once or twice, with something after it.
        "/a/b%3Ftoken%3DCANARY => /a/b",
        "/a/b%3ftoken%3dCANARY?x=1 => /a/b",
        "/a/b%253Ftoken%253DCANARY => /a/b",
        // A lone trailing one hides nothing; an encoded URL's query goes as before.
        "/files/what%3F => /files/what%3F",
        "/fetch/http%3A%2F%2Fh%2Fx%3Ftoken%3DCANARY => /fetch/http%3A%2F%2Fh%2Fx",
      })
  void aPathsOwnEncodedQueryIsNotWritten(String path, String expected) {
    assertThat(Sanitizer.path(path)).isEqualTo(expected).doesNotContain("CANARY");
  }

  @ParameterizedTest
  @ValueSource(
      strings = {
        "/fetch/http%3A%2F%2Fh%2Fx",
        "/fetch/http://h/x",
        "/api/v1/items",
        // An encoded '@' and '%' with no URL in the path: nothing decoded (was 128 and 160 B).
        "/users/a%2540b.example",
        "/users/a%40b.example/files/100%25.txt",
        "/users/a%252540b.example",
      })
  void aPathWithNothingToRemoveAllocatesNothing(String path) {
    com.sun.management.ThreadMXBean threads =
        (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
    long id = Thread.currentThread().getId();
    for (int i = 0; i < 20_000; i++) {
      Sanitizer.path(path);
    }
    long before = threads.getThreadAllocatedBytes(id);
    for (int i = 0; i < 1_000; i++) {
      Sanitizer.path(path);
    }
    long allocated = threads.getThreadAllocatedBytes(id) - before;
    // Nothing per call (before: 176 to 200 bytes each); the bound leaves room for the counter's
    // own noise.
    assertThat(allocated).isLessThan(16_000L);
  }

  @ParameterizedTest
  @CsvSource(
      delimiterString = " => ",
      value = {
        // A URL percent-encoded whole, bare in a message.
        "fetch https%3A%2F%2Fapi.telegram.org%2Fbot123456%3AAAHdqTcvCH1vGWJxfSeofSAs0K5PALCANARY"
            + "%2Fsend failed => fetch https%3A%2F%2Fapi.telegram.org%2F<redacted>%2Fsend failed",
        // A Telegram bot token without a URL, with or without its "bot".
        "token bot123456:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaCANARY failed => token <redacted> failed",
        "123456:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaCANARY => <redacted>",
        // After a quote, a bracket or a JSON key, or written upper case (r33).
        "token \"bot123456:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaCANARY\" failed"
            + " => token \"<redacted>\" failed",
        "token [bot123456:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaCANARY] failed"
            + " => token [<redacted>] failed",
        "token (123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaCANARY) failed"
            + " => token (<redacted>) failed",
        "body {\"t\":\"bot123456:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaCANARY\"} failed"
            + " => body {\"t\":\"<redacted>\"} failed",
        "token BOT123456:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaCANARY failed => token <redacted> failed",
        "GET https://api.telegram.org/Bot123456:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaCANARY/getMe x"
            + " => GET https://api.telegram.org/<redacted>/getMe x",
        // Slack: ids written lower case; a workflow's and a trigger's webhook.
        "post https://hooks.slack.com/services/t0001/b0002/XXXXXXXXXXXXXXXXCANARY failed"
            + " => post https://hooks.slack.com/services/t0001/b0002/<redacted> failed",
        "post https://hooks.slack.com/workflows/T0001/A0002/123456789/XXXXXXXXXXXXXXCANARY x"
            + " => post https://hooks.slack.com/workflows/T0001/A0002/123456789/<redacted> x",
        "post https://hooks.slack.com/triggers/T0001/123456789/XXXXXXXXXXXXXXXXCANARY x"
            + " => post https://hooks.slack.com/triggers/T0001/123456789/<redacted> x",
      })
  void aKnownTokenIsMaskedWhereverTheMessageHoldsIt(String text, String expected) {
    assertThat(Sanitizer.message(text, null)).isEqualTo(expected).doesNotContain("CANARY");
  }

  @ParameterizedTest
  @CsvSource(
      delimiterString = " => ",
      value = {
        "failed: //alice:pw CANARY@h/x then http://b/y => failed: //h/x then http://b/y",
        "failed: //alice:pw CANARY@h/x then http://u:pCANARY@b/y => failed: //h/x then http://b/y",
        "Location: //alice:pw CANARY@h/x see https://b/y => Location: //h/x see https://b/y",
        "unexpected url: u:pw CANARY@h/x then http://b/y"
            + " => unexpected url: <redacted>@h/x then http://b/y",
      })
  void aLooseUrlFirstOnItsLineLosesItsUserInfoWhenAUrlFollows(String text, String expected) {
    assertThat(Sanitizer.message(text, null)).isEqualTo(expected).doesNotContain("CANARY");
  }

  @ParameterizedTest
  @CsvSource(
      delimiterString = " => ",
      value = {
        // A mail header's name is a user name too: over-redacted rather than a password kept.
        "send to:a@b.example failed => send <redacted>@b.example failed",
        "unexpected url: to:hunterCANARY@db.example => unexpected url: <redacted>@db.example",
        "failed: from:hunterCANARY@mail.example => failed: <redacted>@mail.example",
        "failed: cc:hunterCANARY@mail.example) => failed: <redacted>@mail.example)",
        "x bcc:hunterCANARY@mail.example y => x <redacted>@mail.example y",
        "pool [::1]:8080@pool-2 failed => pool [::1]:8080@pool-2 failed",
        "link mailto:ops@example.com?subject=hi bad => link mailto:ops@example.com bad",
        // Still a user-info: a port or path after the host, a password after an IPv6 literal or
        // in a mailto.
        "to:pwCANARY@db.example:5432 => <redacted>@db.example:5432",
        "x [::1]:pwCANARY@h y => x [<redacted>@h y",
        "link mailto:a:pwCANARY@example.com?x bad => link <redacted>@example.com bad",
      })
  void anAddressOrAnIpv6HostAndPortIsNotTakenForAUserInfo(String text, String expected) {
    assertThat(Sanitizer.message(text, null)).isEqualTo(expected).doesNotContain("CANARY");
  }

  /**
   * A host and port, a time, or a word whose '@' comes only after a '(' or ',' or three words
   * later, last after ": ": no user-info with a blank in it, the line written as it is.
   */
  @ParameterizedTest
  @ValueSource(
      strings = {
        "Failed to connect: localhost:6379 via io.netty.channel.nio.NioEventLoop@5e9f23b4",
        "Timeout: 12:30:01 waiting for lock owned by worker@node-3",
        "Read timed out: 10.0.0.5:443 (conn pool-1@3a4b)",
        "HTTP 503: api:v2 unavailable, contact ops@example.com",
        "Caused by: java.net.ConnectException: localhost:5432 - failed for user@example.com",
      })
  void aColonWordLastAfterAColonIsNotFollowedToALaterAt(String text) {
    assertThat(Sanitizer.message(text, null)).isEqualTo(text);
  }

  /**
   * Many URLs each a key's value ({@code =http://a =http://a ...}): each opens a span to the line's
   * end and the URLs in it were each searched to the span's end, 4 KB taking 20 to 40 times as long
   * as 1 KB (10 to 35 ms). So too words that each look ahead on their line for an '@' ending a
   * password of many words (k=a:b c, after ": ", quoted, bracketed: r33) with none there. Linear,
   * four times the length takes about four times as long. Measured in this thread's CPU time, best
   * of several rounds, so that other work on the machine does not count.
   */
  @ParameterizedTest
  @ValueSource(
      strings = {
        "=http://a ",
        "=http://a:b c ",
        "k=a:b c ",
        "x: a:b c ",
        "'a:b c ",
        "<http://a:b c "
      })
  void manyUrlsEachAKeysValueAreCleanedInLinearTime(String unit) {
    String small = unit.repeat(1024 / unit.length());
    String large = unit.repeat(4096 / unit.length());
    for (int i = 0; i < 300; i++) {
      Sanitizer.message(small, null);
      Sanitizer.message(large, null);
    }
    double ratio = (double) cpuNanos(large) / cpuNanos(small);
    assertThat(ratio).isLessThan(12.0); // linear: ~4; the quadratic walk was 19-23
  }

  private static long cpuNanos(String text) {
    java.lang.management.ThreadMXBean threads = ManagementFactory.getThreadMXBean();
    long best = Long.MAX_VALUE;
    for (int round = 0; round < 7; round++) {
      long start = threads.getCurrentThreadCpuTime();
      for (int i = 0; i < 20; i++) {
        Sanitizer.message(text, null);
      }
      best = Math.min(best, threads.getCurrentThreadCpuTime() - start);
    }
    return Math.max(best, 1);
  }

  /** 64 hex digits, as a sha256 digest. */
  private static final String HEX =
      "0123456789abcdef0123456789abcdef" + "0123456789abcdef0123456789abcdef";

  /** An image's digest after its name and tag is no user-info and no host: kept. */
  @ParameterizedTest
  @ValueSource(
      strings = {
        "pull failed for docker.io/library/redis:7.2@sha256:" + HEX,
        "pull failed for redis:7.2@sha256:" + HEX + ".",
        "pull failed for ghcr.io/o/app:v1@sha512:" + HEX + HEX + " x",
        // Shortened, as a log line may write it.
        "pull failed for docker.io/library/redis:7.2@sha256:0123456789abcdef",
      })
  void anImagesDigestIsKept(String text) {
    assertThat(Sanitizer.message(text, null)).isEqualTo(text);
  }

  @ParameterizedTest
  @CsvSource(
      delimiterString = " => ",
      value = {
        // Not a digest: too short, or not hex; or a user-info before it on the word.
        "failed redis/admin:hunterCANARY@sha256:1234 x => failed redis/<redacted>@sha256:1234 x",
        "failed redis/admin:hunterCANARY@sha256:123456789012345 x"
            + " => failed redis/<redacted>@sha256:123456789012345 x",
        "failed redis/admin:hunterCANARY@sha256:db.example:6379 x"
            + " => failed redis/<redacted>@sha256:db.example:6379 x",
        "x admin:pwCANARY@db,img:1@sha256:" + HEX + " y => x <redacted>@sha256:" + HEX + " y",
      })
  void aPasswordBeforeWhatOnlyLooksLikeADigestIsRedacted(String text, String expected) {
    assertThat(Sanitizer.message(text, null)).isEqualTo(expected).doesNotContain("CANARY");
  }

  /** A %40 in a parsed URL's path is a character of the path, not the end of a user-info. */
  @ParameterizedTest
  @ValueSource(
      strings = {
        "unexpected end of stream on http://api.example/users/alice%40example.com/orders",
        "I/O error on GET request for \"https://api.example/users/a%40b.example\": Read timed out",
        "https://h/files/2026-12-07T12%3A30%40utc.log",
      })
  void anEncodedAtInAUrlsPathKeepsTheHost(String text) {
    assertThat(Sanitizer.message(text, null)).isEqualTo(text);
  }

  @ParameterizedTest
  @CsvSource(
      delimiterString = " => ",
      value = {
        "failed: a@b.example then http://b/y",
        "id 1234567:short ok",
        "at 12:30 on 10.0.0.1:8080 ok",
        "mail a%40b.example ok",
        "error: foo:bar baz qux",
        "failed: 'a:b' then c",
        "dep org.acme:lib@1.2.3 missing",
        "at 12:30@worker-3 done",
        "open C:\\Users\\a@b failed",
        "open C:/Users/a@b failed",
        "GET /users/a@b.example failed",
        "see (http://h/x for a@b.example) rest",
        "see (http://h/x then) a@b rest",
        "<https://h/x> mail a@b",
        "at=12:30 by x@y",
        "k=v:w, ops@example.com",
        "HTTP 503: api:v2, contact ops@example.com",
      })
  void whatOnlyLooksLikeOneIsKept(String text) {
    assertThat(Sanitizer.message(text, null)).isEqualTo(text);
  }

  /**
   * A secret key's value of backslashes only (r34): the look for an escaped quote ran past the
   * value's end and threw StringIndexOutOfBoundsException out of message() and exception().
   */
  @ParameterizedTest
  @CsvSource(
      delimiterString = " => ",
      value = {
        "password=\\ => password=<redacted>",
        "token=\\\\ rest => token=<redacted> rest",
        "login failed: password=\\\\\\ for u => login failed: password=<redacted> for u",
      })
  void aSecretValueOfBackslashesOnlyIsRedacted(String text, String expected) {
    assertThat(Sanitizer.message(text, null)).isEqualTo(expected);
    assertThat(Sanitizer.exception(new IllegalStateException(text), false, null))
        .isEqualTo("IllegalStateException: " + expected);
  }

  /**
   * A Telegram bot token after a character that is not a token's (r34): it was looked for only at a
   * segment's start or after a quote, a bracket, '=', ':' or ',', and was written whole after a
   * backtick and others.
   */
  @ParameterizedTest
  @ValueSource(strings = {"`", "*", "|", ";", "&", "!", ".", "@", "%22"})
  void aTelegramTokenAfterAnyMarkIsMasked(String mark) {
    String token = "123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw";
    assertThat(Sanitizer.message("invalid token " + mark + token + mark + " rest", null))
        .startsWith("invalid token ")
        .endsWith(" rest")
        .doesNotContain("AAHdqTcv");
    assertThat(Sanitizer.path("/api/" + mark + token + "/x"))
        .endsWith("/x")
        .doesNotContain("AAHdqTcv");
    // A token's character before the digits is masked too (r35): an escape's last letter (\n,
    // %3A) is one, and nothing tells it from a word's (x123456789:AA... is over-redacted).
    assertThat(Sanitizer.message("id x" + token + " ok", null)).isEqualTo("id x<redacted> ok");
  }

  /**
   * Telegram bot tokens after the first in one segment, and one right after an escape whose last
   * character is a letter or a digit (r35): a token was looked for once per segment, at the start
   * of a run of a token's characters only, and the rest were written whole.
   */
  @ParameterizedTest
  @CsvSource(
      delimiterString = " => ",
      value = {
        "bad [" + TG1 + "," + TG2 + "] x => bad [<redacted>,<redacted>] x",
        "body {\"a\":\""
            + TG1
            + "\",\"b\":\""
            + TG2
            + "\"} x"
            + " => body {\"a\":\"<redacted>\",\"b\":\"<redacted>\"} x",
        "body {\"m\":\"x\\n" + TG1 + "\"} x => body {\"m\":\"x\\n<redacted>\"} x",
        "fetch q=a%3A" + TG1 + " x => fetch q=a%3A<redacted> x",
        "fetch q=a%0A" + TG2 + " x => fetch q=a%0A<redacted> x",
        "fetch q=a%3A123456789%3AAAHdqTcvCH1vGWJxfSeofSAs0K5PALDsawCANARY x"
            + " => fetch q=a%3A<redacted> x",
      })
  void everyTelegramTokenOfASegmentIsMaskedAlsoAfterAnEscape(String text, String expected) {
    assertThat(Sanitizer.message(text, null)).isEqualTo(expected).doesNotContain("CANARY");
    String path = "/api/" + text.substring(text.indexOf(' ') + 1, text.lastIndexOf(' ')) + "/x";
    assertThat(Sanitizer.path(path)).endsWith("/x").doesNotContain("CANARY");
  }

  private static final String TG1 = "bot123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsawCANARY";
  private static final String TG2 = "bot987654:BBHdqTcvCH1vGWJxfSeofSAs0K5PALDsawCANARY";

  /**
   * A secret value of a JSON text escaped twice, not closed on its line and longer than 2048
   * characters (r34): redacted only 2048 characters on, the rest written.
   */
  @Test
  void anUnclosedTwiceEscapedSecretIsRedactedToItsLinesEnd() {
    String text =
        "body {\\\\\\\"password\\\\\\\":\\\\\\\"a" + " ".repeat(2100) + "CANARY rest\nnext line";
    assertThat(Sanitizer.message(text, null))
        .isEqualTo("body {\\\\\\\"password\\\\\\\":\\\\\\\"<redacted> next line");
  }

  /**
   * A user-info percent-encoded in a path segment without a scheme or after an encoded {@code //},
   * and a URL percent-encoded five times or more (r35): path() looked for an encoded user-info only
   * after an encoded {@code ://}, decoding three levels at most, and message() four; the password
   * was written.
   */
  @ParameterizedTest
  @CsvSource(
      delimiterString = " => ",
      value = {
        "/p/%2F%2Fu%3ApwCANARY%40h2 => /p/<redacted>%40h2",
        "/p/%2f%2fu%3apwCANARY%40h2/x => /p/<redacted>%40h2/x",
        "/p/%252F%252Fu%253ApwCANARY%2540h2 => /p/<redacted>%2540h2",
        "/p/u%3ApwCANARY%40h2/x => /p/<redacted>%40h2/x",
        "/p/http%25252525253A%25252525252F%25252525252Fu%25252525253ApwCANARY%252525252540h2"
            + " => /p/http%3A%2F%2Fh2",
        "/p/http%2525252525253A%2525252525252F%2525252525252Fu%2525252525253AC%252525252525"
            + "2540h2 => /p/http%3A%2F%2Fh2",
      })
  void anEncodedUserInfoWithoutASchemeOrEncodedFiveTimesLeavesAPath(String path, String expected) {
    assertThat(Sanitizer.path(path)).isEqualTo(expected).doesNotContain("CANARY");
    assertThat(Sanitizer.message("failed http://proxy" + path + " now", null))
        .isEqualTo("failed http://proxy" + expected + " now");
  }

  @ParameterizedTest
  @ValueSource(
      strings = {
        "u%25252525253ApwCANARY%252525252540h2",
        "http%25252525253A%25252525252F%25252525252Fu%25252525253ApwCANARY%252525252540h2",
      })
  void aWordEncodedFiveTimesLosesItsUserInfo(String word) {
    assertThat(Sanitizer.message("failed " + word + " now", null))
        .startsWith("failed ")
        .endsWith("h2 now")
        .doesNotContain("CANARY");
  }

  /** An encoded '@' with no ':' before it, a time or a digest: no user-info, the path kept. */
  @ParameterizedTest
  @ValueSource(
      strings = {
        "/users/a%40b.example/orders",
        "/files/2026-12-07T12%3A30%40utc.log",
        "/v2/redis%3A7.2%40sha256%3A0123456789abcdef0123/x",
      })
  void anEncodedAtWithoutAUserInfoIsKept(String path) {
    assertThat(Sanitizer.path(path)).isEqualTo(path);
  }

  /**
   * A password with a blank in it after a colon and a Unicode blank other than ' ' and a tab (r35):
   * the URL was not taken as last after ": ", its span ended at the first blank and the user and
   * the password's first word were written.
   */
  @ParameterizedTest
  @ValueSource(strings = {"\u2003", "\u3000", "\u2009", "\u2002\u2002", "\u1680", "\u205f"})
  void aPasswordAfterAColonAndAUnicodeBlankIsRedacted(String blank) {
    assertThat(Sanitizer.message("failed:" + blank + "u:pw CANARY@h/x", null))
        .endsWith("<redacted>@h/x")
        .doesNotContain("pw")
        .doesNotContain("CANARY");
    assertThat(Sanitizer.message("failed:" + blank + "http://u:pw CANARY@h/x", null))
        .endsWith("http://h/x")
        .doesNotContain("CANARY");
    assertThat(Sanitizer.message("failed:" + blank + "//u:pw CANARY@h/x", null))
        .endsWith("//h/x")
        .doesNotContain("CANARY");
  }

  /**
   * A password of many words holding a ',', '(' or '[' inside a word (r35): the look for its '@'
   * stopped there, as at prose's ", " or " (", and the user and the password's first words were
   * written.
   */
  @ParameterizedTest
  @CsvSource(
      delimiterString = " => ",
      value = {
        "failed: u:pw CAN,ARY@h/x => failed: <redacted>@h/x",
        "failed: u:pw CAN(ARY@h/x => failed: <redacted>@h/x",
        "failed: u:pw CAN[ARY@h/x => failed: <redacted>@h/x",
        "failed: //u:pw CAN,ARY@h/x => failed: //h/x",
        "failed url=u:pw CAN[ARY@h/x => failed url=<redacted>@h/x",
        "failed: \"u:pw CAN,ARY@h/x\" now => failed: \"<redacted>@h/x\" now",
        "failed: 'u:pw CAN(ARY@h/x' now => failed: '<redacted>@h/x' now",
      })
  void aPasswordOfManyWordsWithAMarkInsideAWordIsRedacted(String text, String expected) {
    assertThat(Sanitizer.message(text, null)).isEqualTo(expected).doesNotContain("ARY");
  }

  /**
   * An exception whose getMessage() throws an Error (r35): exception() caught a RuntimeException
   * only, and the Error left the caller's catch (the agent's internal-error line of a hook, after
   * the application's main) into the application's call.
   */
  @Test
  void anErrorFromGetMessageIsNoMessage() {
    Throwable broken =
        new IllegalStateException() {
          @Override
          public String getMessage() {
            throw new AssertionError("broken");
          }
        };
    assertThat(Sanitizer.exception(broken, true, null)).isEqualTo(broken.getClass().getName());
  }

  /**
   * A quote inside the password of a quoted URL or user-info (r35): taken as the closing quote, it
   * cut the URL before its '@', and the user and the password were written.
   */
  @ParameterizedTest
  @CsvSource(
      delimiterString = " => ",
      value = {
        "failed \"http://u:pw\"CANARY@h/x\" now => failed \"http://h/x\" now",
        "failed 'http://u:pw'CANARY@h/x' now => failed 'http://h/x' now",
        "failed \"http://u:pw CAN\"ARY@h/x\" now => failed \"http://h/x\" now",
        "failed \"//u:pw CAN\"ARY@h/x\" now => failed \"//h/x\" now",
        "failed \"u:pw CAN\"ARY@h/x\" now => failed \"<redacted>@h/x\" now",
        "failed: 'u:p'w CANARY@h/x' => failed: '<redacted>@h/x'",
        "body {\"url\":\"http://u:p\\\"w CANARY@h/x\"} => body {\"url\":\"http://h/x\"}",
        "url=\"http://u:pw\"CANARY@h/x\" now => url=\"http://h/x\" now",
      })
  void aQuoteInsideAQuotedPasswordClosesNothing(String text, String expected) {
    assertThat(Sanitizer.message(text, null)).isEqualTo(expected).doesNotContain("ARY");
  }
}
