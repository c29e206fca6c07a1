package dev.retryagent.internal.observe;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;

import dev.retryagent.config.PathMask;
import java.io.IOException;
import java.time.Duration;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.ValueSource;

class SanitizerTest {

  @Test
  void aMessageAServerMadeLongIsCleanedFromItsStartAloneAndEndsInAnEllipsis() {
    // OkHttp quotes a status line of up to 256 KiB in its ProtocolException; 400 KB of "x://"
    // took 10 s to clean on the application's thread, growing with the square of the length.
    String junk = "Unexpected status line: " + "x://".repeat(500_000);
    String[] clean = new String[1];
    assertTimeoutPreemptively(
        Duration.ofSeconds(20), () -> clean[0] = Sanitizer.message(junk, null));
    assertThat(clean[0]).startsWith("Unexpected status line:").endsWith("...");
    assertThat(clean[0].length()).isLessThanOrEqualTo(Sanitizer.MAX_MESSAGE_CHARS + 3);
  }

  @Test
  void aLongWholeUrlPathWithAnAtPastTheCutIsWrittenBoundedWhateverComesBeforeItsScheme() {
    // The text before "://" was written whole (r25: 1 MB of it into every line and span).
    String path = "a".repeat(1_000_000) + "://alice:pw@h/x";
    String shown = Sanitizer.path(path);
    assertThat(shown).doesNotContain("alice").doesNotContain("pw");
    assertThat(shown.length()).isLessThanOrEqualTo(Sanitizer.MAX_CLEANED_CHARS + 3);
    // r26: what comes before "://" is written only when it is a scheme.
    String word = "admin:hunter2@h/cb?next=https://app/" + "a/".repeat(2_100) + "@x";
    assertThat(Sanitizer.path(word)).doesNotContain("hunter2").doesNotContain("admin");
    // A short scheme is still written.
    String url = "http://h/" + "x/".repeat(3_000) + "y@z";
    assertThat(Sanitizer.path(url)).startsWith("http://<redacted>").endsWith("...");
  }

  @Test
  void aMessageCutInsideAUrlDropsTheCutWordSoNoPartOfItsUserInfoShows() {
    // Cut just before the '@', http://user:secretpassword would read as a host and a port.
    String url = "http://user:secretpassword@api.example/x";
    String head = "a".repeat(Sanitizer.MAX_CLEANED_CHARS - 20) + " ";
    String text = head + url + " and more";
    assertThat(text.indexOf('@')).isGreaterThan(Sanitizer.MAX_CLEANED_CHARS);
    assertThat(Sanitizer.cleanable(text)).isEqualTo(head.trim() + " ...");
    assertThat(Sanitizer.message("error " + text.substring(6), null)).doesNotContain("secr");
    // Short enough, a message is cleaned whole.
    assertThat(Sanitizer.cleanable("x " + url)).isEqualTo("x " + url);
  }

  /**
   * A line of quoted or bracketed URLs over {@link Sanitizer#MAX_CLEANED_CHARS}, each closed before
   * the cut (r34): each was taken for one running past the cut and dropped, then the line, and only
   * "..." was written.
   */
  @ParameterizedTest
  @ValueSource(
      strings = {
        "\"https://api.example.com/v1/items/%d\", ",
        "'https://api.example.com/v1/items/%d', ",
        "<https://api.example.com/v1/items/%d>, ",
        "(https://api.example.com/v1/items/%d), ",
      })
  void aLongLineOfClosedUrlsKeepsItsHead(String form) {
    StringBuilder text = new StringBuilder("Upstream said: {\"links\": [");
    for (int n = 1000; text.length() < 2 * Sanitizer.MAX_CLEANED_CHARS; n++) {
      text.append(String.format(form, n));
    }
    String clean = Sanitizer.message(text.toString(), null);
    assertThat(clean)
        .startsWith("Upstream said: {\"links\": [" + String.format(form, 1000).trim())
        .hasSize(Sanitizer.MAX_MESSAGE_CHARS + 3);
  }

  @ParameterizedTest
  @ValueSource(
      strings = {
        "failed; proxy \"http://alice:correct horse@proxy.example/\": refused",
        "Illegal character in authority at index 7: http://alice:correct horse@h.example/x",
        "redirect refused: //alice:correct horse@h.example/x",
        "failed; proxy 'http:\\/\\/alice:correct horse@proxy.example\\/': refused"
      })
  void aCutAtABlankInsideAUserInfoFollowedPastBlanksLeavesNoPartOfIt(String url) {
    // A quoted URL, or one written last, is followed past blanks to its user-info's last '@'. A
    // cut at the blank inside "correct horse" left no '@', and "alice:correct" read as a host.
    for (int off = -120; off <= 0; off++) {
      StringBuilder query = new StringBuilder("GET https://s3.example/b/o?X-Amz-Signature=");
      while (query.length() < Sanitizer.MAX_CLEANED_CHARS + off) {
        query.append('a');
      }
      String text = query.append(' ').append(url).toString();
      assertThat(Sanitizer.message(text, null)).doesNotContain("alice").doesNotContain("correct");
    }
    for (int n = 3990; n < Sanitizer.MAX_CLEANED_CHARS; n++) {
      // A server's body of blanks, folded: the URL near the cut is what would be printed.
      String text = "upstream said:" + " ".repeat(n) + "retry via " + url + " failed";
      assertThat(Sanitizer.message(text, null)).doesNotContain("alice").doesNotContain("correct");
    }
  }

  @Test
  void aUrlThatEndsAtItsWordOrItsLineIsKeptWhenTheCutFallsLaterOnTheLine() {
    // Only a URL that may go on to the cut is dropped with it: not one in prose, nor one whose
    // line ends before the cut.
    String body = "x ".repeat(Sanitizer.MAX_CLEANED_CHARS);
    assertThat(Sanitizer.message("GET http://h.example/x failed " + body, null))
        .startsWith("GET http://h.example/x failed x x");
    assertThat(Sanitizer.message("for \"http://h.example/x\": refused\n" + body, null))
        .startsWith("for \"http://h.example/x\": refused x x");
  }

  @Test
  void aLongPathIsCutAfterASlashAndEndsInAnEllipsis() {
    String path = "/api/" + "segment/".repeat(1000) + "tail?token=SECRET";
    String clean = Sanitizer.path(path);
    assertThat(clean).startsWith("/api/segment/segment/").endsWith("/...");
    assertThat(clean.length()).isLessThanOrEqualTo(Sanitizer.MAX_CLEANED_CHARS + 3);
    String url = "http://h.example/" + "segment/".repeat(1000) + "tail?token=SECRET";
    assertThat(Sanitizer.path(url)).startsWith("http://h.example/segment/").endsWith("/...");
    // A segment a mask matches whole is not cut in part: a cut falls only after a '/'.
    String hex = "0123456789abcdef0123456789abcdef";
    String masked =
        Sanitizer.path("/" + (hex + "/").repeat(200), PathMask.of(List.of("[0-9a-f]{32}")));
    assertThat(masked).doesNotContain("0123").endsWith("/...");
    // An ordinary path is as it was: no cut, no ellipsis.
    assertThat(Sanitizer.path("/api/v1/items/42")).isEqualTo("/api/v1/items/42");
  }

  @ParameterizedTest
  @ValueSource(
      strings = {
        "/fetch/http://alice:pa/%s/ss@h.example/x",
        "/fetch/http%%3A%%2F%%2Falice%%3Apa/%s/ss%%40h.example%%2Fx",
        "/alice:pa/%s/ss@h.example/x",
        "http://alice:pa/%s/ss@h.example/x"
      })
  void aPathCutBeforeTheAtOfAUserInfoWritesNoPartOfIt(String form) {
    // The user-info of the path (or of a URL inside it) ends at its last '@', past the cut: what
    // is kept of it would have no '@' left to show that it is one.
    String path = String.format(form, "x".repeat(Sanitizer.MAX_CLEANED_CHARS));
    String clean = Sanitizer.path(path);
    assertThat(clean).doesNotContain("alice").doesNotContain("pa/").endsWith("...");
  }

  @Test
  void aPathOfManyUrlsIsCleanedInLinearTime() {
    // Each URL in a path looked for its user-info's '@' back to the path's start, and each encoded
    // one for the next plain "://" to the path's end: 400 KB took 3.7 s on the caller's thread.
    String[] paths = {
      "/" + "x://".repeat(100_000),
      "/" + "x%3A%2F%2F".repeat(40_000),
      "/a/" + "x://".repeat(1000) + "/" + "x%3A%2F%2F/".repeat(30_000)
    };
    for (String path : paths) {
      String[] clean = new String[1];
      assertTimeoutPreemptively(Duration.ofSeconds(20), () -> clean[0] = Sanitizer.path(path));
      assertThat(clean[0]).endsWith("...");
      assertThat(clean[0].length()).isLessThanOrEqualTo(Sanitizer.MAX_CLEANED_CHARS + 3);
    }
    // The nested URLs' user-info removal alone, on text longer than any path is let be.
    String plain = "/" + "x://".repeat(400_000);
    String encoded = "/" + "x%3A%2F%2F".repeat(250_000);
    String[] clean = new String[2];
    assertTimeoutPreemptively(
        Duration.ofSeconds(20),
        () -> {
          clean[0] = Sanitizer.withoutNestedUserInfo(plain);
          clean[1] = Sanitizer.withoutNestedUserInfo(encoded);
        });
    assertThat(clean[0]).isEqualTo(plain);
    assertThat(clean[1]).isEqualTo(encoded);
  }

  static Stream<String> hostileMessages() {
    return Stream.of(
        "unexpected end of stream on http://api.example.com/v1/x?token=SECRET",
        "unexpected end of stream on https://api.example.com:8443/v1/x?a=1&token=SECRET",
        "failed: http://api.example.com/v1/x?token=SECRET, retrying",
        "(http://api.example.com/v1/x?token=SECRET)",
        "\"http://api.example.com/v1/x?token=SECRET\"",
        "<http://api.example.com/v1/x?token=SECRET>",
        "'http://h/p?x=o'SECRET'",
        "GET /v1/x?token=SECRET HTTP/1.1",
        "?token=SECRET",
        "http://h/p#access_token=SECRET",
        "http://h/p?#SECRET",
        "/v1/callback#id_token=SECRET",
        "http://user:SECRET@h/p",
        "https://SECRET@h/p",
        "Authorization: Bearer SECRET",
        "authorization=SECRET",
        "AUTHORIZATION:SECRET",
        "Proxy-Authorization: Basic SECRET",
        "Cookie: a=SECRET; b=SECRET",
        "Set-Cookie: id=SECRET; Path=/",
        "Idempotency-Key: SECRET",
        "header X-Api-Key=SECRET",
        "with Bearer SECRET in it",
        "Basic SECRET",
        "line one\r\nAuthorization: SECRET\r\nline three",
        "tabs\tand\u000bcontrol\u0000chars?q=SECRET",
        "line\u2028separator http://h/?q=SECRET",
        "{\"url\":\"http:\\/\\/user:SECRET@h\\/p\"}",
        "{\"url\":\"https:\\/\\/SECRET@h.example:8443\\/p?q=SECRET\"}");
  }

  /**
   * Credential headers as a JSON body, a header map's {@code toString()} or a request dump print
   * them: the name quoted, {@code :} or {@code =} after the quote.
   */
  static Stream<String> quotedCredentialHeaders() {
    return Stream.of(
        "400 {\"Cookie\":\"session=SECRET\"}",
        "{\"cookie\": \"SECRET\", \"accept\": \"*/*\"}",
        "upstream said {\"Set-Cookie\":\"id=SECRET; Path=/\"}",
        "{\"SET-COOKIE\" : \"SECRET\"}",
        "headers {\"Authorization\":\"Token SECRET\"}",
        "headers {\"Authorization\": \"Bearer SECRET\"}",
        "{\"authorization\":\"SECRET\"}",
        "{\"Proxy-Authorization\":\"Basic SECRET\"}",
        "{'Proxy-Authorization': 'SECRET'}",
        "headers {'cookie'='SECRET'}",
        "{\"Idempotency-Key\":\"SECRET\"}",
        "{\"X-Api-Key\":\"SECRET\"}");
  }

  /** The token and key headers of widely used APIs, beside the standard credential headers. */
  @ParameterizedTest
  @ValueSource(
      strings = {
        "X-Auth-Token: SECRET",
        "x-access-token: SECRET",
        "X-Refresh-Token: SECRET",
        "PRIVATE-TOKEN: SECRET",
        "X-Goog-Api-Key: SECRET",
        "X-Amz-Security-Token: SECRET",
        "Ocp-Apim-Subscription-Key: SECRET",
        "x-functions-key: SECRET",
        "X-CSRF-Token: SECRET",
        "X-XSRF-TOKEN: SECRET",
        "{\"X-Auth-Token\":\"SECRET\"}",
        "Unexpected char 0x0a at 3 in X-Auth-Token value: SEC\nRET"
      })
  void theTokenHeadersOfWidelyUsedApisAreRedacted(String hostile) {
    assertThat(Sanitizer.message(hostile, null)).doesNotContain("SECRET").doesNotContain("RET");
  }

  @ParameterizedTest
  @MethodSource("quotedCredentialHeaders")
  void aQuotedCredentialHeaderIsRedactedAsAPlainOneIs(String hostile) {
    assertThat(Sanitizer.message(hostile, null)).doesNotContain("SECRET").contains("<redacted>");
  }

  @Test
  void aQuotedHeaderKeepsItsNameAndTheRoutesKeyHeaderIsRedactedQuotedToo() {
    assertThat(Sanitizer.message("400 {\"Cookie\":\"session=SECRET\"}", null))
        .isEqualTo("400 {\"Cookie\":<redacted>");
    assertThat(Sanitizer.message("{\"X-Dedupe\": \"SECRET\"}", "X-Dedupe"))
        .isEqualTo("{\"X-Dedupe\": <redacted>");
  }

  @ParameterizedTest
  @MethodSource("hostileMessages")
  void aMessageNeverKeepsASecretOrALineBreak(String hostile) {
    String clean = Sanitizer.message(hostile, null);

    assertThat(clean).doesNotContain("SECRET");
    assertThat(clean.chars()).noneMatch(c -> Character.isISOControl(c) || c == '\u2028');
  }

  @Test
  void theRoutesIdempotencyKeyHeaderIsRedactedWhateverItIsCalled() {
    assertThat(Sanitizer.message("sent X-Dedupe: SECRET twice", "X-Dedupe"))
        .isEqualTo("sent X-Dedupe: <redacted>");
    assertThat(Sanitizer.message("x-dedupe=SECRET", "X-Dedupe")).isEqualTo("x-dedupe=<redacted>");
  }

  @Test
  void harmlessTextIsKept() {
    assertThat(Sanitizer.message("Connection refused", null)).isEqualTo("Connection refused");
    assertThat(Sanitizer.message("is the server up?", null)).isEqualTo("is the server up?");
    assertThat(Sanitizer.message("unexpected end of stream on http://h.example/v1/x", null))
        .isEqualTo("unexpected end of stream on http://h.example/v1/x");
    assertThat(Sanitizer.message("attempt #2 failed", null)).isEqualTo("attempt #2 failed");
    assertThat(Sanitizer.message(null, null)).isEmpty();
  }

  @Test
  void queryUserInfoAndFragmentAreCutFromUrls() {
    assertThat(Sanitizer.message("on http://u:p@h.example:81/a/b?x=1#f now", null))
        .isEqualTo("on http://h.example:81/a/b now");
  }

  @Test
  void aUrlWithEscapedSlashesLosesItsUserInfoToo() {
    assertThat(Sanitizer.message("{\"url\":\"http:\\/\\/u:SECRET@h.example:81\\/a\"}", null))
        .isEqualTo("{\"url\":\"http:\\/\\/h.example:81\\/a\"}");
  }

  @Test
  void aUrlInsideAPathLosesItsUserInfoAsAUrlDoes() {
    // A proxy's or a redirector's path carries its target whole.
    assertThat(Sanitizer.path("/fetch/https://user:SECRET@target.example/x?k=SECRET"))
        .isEqualTo("/fetch/https://target.example/x");
    assertThat(
            Sanitizer.message(
                "unexpected end of stream on http://proxy.example/fetch/http://u:SECRET@t/x"
                    + " and /go/https://SECRET@t2/y",
                null))
        .isEqualTo(
            "unexpected end of stream on http://proxy.example/fetch/http://t/x and"
                + " /go/https://t2/y");
    assertThat(Sanitizer.path("/v1/a@b/c://d")).isEqualTo("/<redacted>@b/c://d");
  }

  /**
   * A password with an unencoded '/', '?', '#' or '@' (a generated one: base64 has '/'), as a Redis
   * client reads it: up to the last '@'. Cut at the first '/', '?' or '#', the rest of it was
   * written as the host and path, or the part before it kept as the host.
   */
  @ParameterizedTest
  @ValueSource(
      strings = {
        "redis://u:canary/pass@cache:6379",
        "redis://:canary?pass@cache:6379",
        "redis://u:canary#pass@cache:6379",
        "redis://canary/a?b#c@d@cache:6379",
        "redis://u:canary@pass/x@cache:6379"
      })
  void aPasswordWithAnUnencodedSlashQuestionMarkOrHashIsRemovedWhole(String url) {
    assertThat(Sanitizer.message("cannot reach " + url + ": refused", null))
        .isEqualTo("cannot reach redis://cache:6379: refused");
    assertThat(Sanitizer.message("I/O error for \"" + url + "/0\": refused", null))
        .isEqualTo("I/O error for \"redis://cache:6379/0\": refused");
    assertThat(
            Sanitizer.message("Illegal character at index 9: " + url.replace("u:", "u x:"), null))
        .isEqualTo("Illegal character at index 9: redis://cache:6379");
    assertThat(
            Sanitizer.message(
                "{\"url\":\"" + url.replace("/", "\\/") + "\\/0\",\"user\":\"a@b\"}", null))
        .isEqualTo("{\"url\":\"redis:\\/\\/cache:6379\\/0\",\"user\":\"a@b\"}");
    assertThat(Sanitizer.path(url + "/0")).isEqualTo("redis://cache:6379/0");
    assertThat(Sanitizer.path("/fetch/" + url + "/0")).isEqualTo("/fetch/redis://cache:6379/0");
    assertThat(Sanitizer.message("on http://proxy.example/fetch/" + url + "/0 now", null))
        .isEqualTo("on http://proxy.example/fetch/redis://cache:6379/0 now");
  }

  /**
   * User-info a naive reader and the client may split differently: a password with an unencoded '/'
   * ({@code u:12/canary}: the JDK and OkHttp read host u, port 12, path /canary@h/x), an IPv6 host,
   * an empty password, an encoded '@' or '/' in it. Wherever a URL is quoted in text (a message,
   * quoted, JSON with escaped slashes, a path that is a whole URL, a URL inside a path), nothing
   * before the last '@' is written.
   */
  @ParameterizedTest
  @ValueSource(
      strings = {
        "https://u:12/canary@h.example/x",
        "https://u:12/can/ary@h.example/x",
        "https://u:12/canary/@h.example/x",
        "https://canary:12@h.example/x",
        "https://canary@h.example/x",
        "https://canary:@h.example/x",
        "https://u:can%40ary@h.example/x",
        "https://u:can%2Fary@h.example/x",
        "https://u:canary@h.example/x@y",
        "https://u:canary@[::1]:8443/x",
        "https://u:12/canary@[::1]:8443/x"
      })
  void userInfoAClientAndANaiveReaderSplitDifferentlyIsNeverWritten(String url) {
    String[] written = {
      Sanitizer.message("unexpected end of stream on " + url + "?token=canary", null),
      Sanitizer.message("I/O error on GET request for \"" + url + "\": refused", null),
      Sanitizer.message("Illegal character in path at index 30: " + url + " x", null),
      Sanitizer.message("{\"url\":\"" + url.replace("/", "\\/") + "\"}", null),
      Sanitizer.path(url),
      Sanitizer.path("/fetch/" + url),
      // The path the client sends when it reads the password's '/' as the path's start.
      Sanitizer.path(url.substring(url.indexOf('/', 8))),
      Sanitizer.exception(new java.io.IOException("failed: " + url), true, null)
    };
    for (String w : written) {
      assertThat(w).as(url).doesNotContain("canary").doesNotContain("can%").doesNotContain("u:12");
    }
  }

  @Test
  void anAtInAUrlsPathTakesWhatComesBeforeItAsUserInfoRatherThanRiskAPassword() {
    // https://h.example/@user cannot be told from https://pa/ss@h.example by its text.
    assertThat(Sanitizer.message("on https://h.example/@user/x now", null))
        .isEqualTo("on https://user/x now");
    // ... but an '@' of another URL, or past a quoted URL's closing quote, is not its.
    assertThat(Sanitizer.message("on \"https://h.example/x\" for a@b now", null))
        .isEqualTo("on \"https://h.example/x\" for a@b now");
    assertThat(Sanitizer.message("{\"url\":\"https:\\/\\/h.example\\/x\",\"to\":\"a@b\"}", null))
        .isEqualTo("{\"url\":\"https:\\/\\/h.example\\/x\",\"to\":\"a@b\"}");
    assertThat(Sanitizer.message("http://h.example/a,http://u:p@t.example/b", null))
        .isEqualTo("http://h.example/a,http://t.example/b");
  }

  /**
   * agent.redact.pathSegments matches the text between two '/' whole: a segment with a blank (in a
   * URL a parser refused and quoted) whole too, not each of its words alone; a segment with more
   * around the token ({tok_x}) is matched with it, as configuration.md says.
   */
  @Test
  void aPathSegmentWithABlankIsMatchedWholeByTheMask() {
    dev.retryagent.config.PathMask mask = dev.retryagent.config.PathMask.of(List.of("tok_.*"));
    assertThat(
            Sanitizer.message(
                "Illegal character in path at index 14: http://h/tok_canary part2/x?sig=S S2",
                null,
                mask))
        .isEqualTo("Illegal character in path at index 14: http://h/<redacted>/x");
    assertThat(Sanitizer.message("Invalid redirect URI: /r/tok_canary part2/x", null, mask))
        .isEqualTo("Invalid redirect URI: /r/<redacted>/x");
    // Not a whole match: the words on their own (a word that matches alone is masked, as before).
    assertThat(Sanitizer.message("Invalid redirect URI: /r/my dir/x", null, mask))
        .isEqualTo("Invalid redirect URI: /r/my dir/x");
    assertThat(Sanitizer.path("http://h/{tok_x}/y", mask)).isEqualTo("http://h/{tok_x}/y");
    assertThat(
            Sanitizer.path(
                "http://h/{tok_x}/y", dev.retryagent.config.PathMask.of(List.of("\\{?tok_.*"))))
        .isEqualTo("http://h/<redacted>/y");
  }

  @Test
  void longMessagesAreCut() {
    String clean = Sanitizer.message("x".repeat(1000), null);

    assertThat(clean).hasSize(Sanitizer.MAX_MESSAGE_CHARS + 3).endsWith("...");
  }

  @Test
  void pathsLoseTheirQueryAndFragment() {
    assertThat(Sanitizer.path("/v1/x?token=SECRET")).isEqualTo("/v1/x");
    assertThat(Sanitizer.path("/v1/x#SECRET")).isEqualTo("/v1/x");
    assertThat(Sanitizer.path("/v1/a\nb")).isEqualTo("/v1/a b");
    assertThat(Sanitizer.path(null)).isEmpty();
  }

  @Test
  void pathsAndUrlsLoseTheirPathParametersASessionIdAmongThem() {
    assertThat(Sanitizer.path("/app;jsessionid=SECRET/v1/items")).isEqualTo("/app/v1/items");
    assertThat(Sanitizer.path("/v1/items;jsessionid=SECRET")).isEqualTo("/v1/items");
    assertThat(Sanitizer.path("/a;x=1;y=2/b;z/c")).isEqualTo("/a/b/c");
    assertThat(Sanitizer.path("/v1/items;jsessionid=SECRET?q=1")).isEqualTo("/v1/items");
    assertThat(Sanitizer.path("/v1/items")).isEqualTo("/v1/items");
    assertThat(
            Sanitizer.message(
                "unexpected end of stream on http://h.example/app;jsessionid=SECRET/x; retrying",
                null))
        .isEqualTo("unexpected end of stream on http://h.example/app/x; retrying");
    assertThat(Sanitizer.message("reset; then refused", null)).isEqualTo("reset; then refused");
  }

  @Test
  void aPathThatIsAWholeUrlLosesItsUserInfo() {
    // Apache HttpClient 5 keeps as the path the whole URI it could not parse (a '{' in it), so
    // user-info reached log lines, dead letters and spans.
    assertThat(Sanitizer.path("http://user:SECRET@h.example/a{b}?token=SECRET"))
        .isEqualTo("http://h.example/a{b}");
    assertThat(Sanitizer.path("https://SECRET@h.example:8443/a;jsessionid=SECRET/b"))
        .isEqualTo("https://h.example:8443/a/b");
    assertThat(Sanitizer.path("/v1/a@b")).isEqualTo("/<redacted>@b");
  }

  /**
   * A whole URL as the path whose password holds a '?' or '#': the adapter cuts it at the first of
   * them ({@code http://user:pa}), the '@' past the cut; that rest was written as the path.
   */
  @Test
  void aPathThatIsAWholeUrlCutInsideItsUserInfoWritesNoneOfIt() {
    assertThat(Sanitizer.path("http://user:pa", PathMask.NONE, true))
        .isEqualTo("http://<redacted>");
    assertThat(Sanitizer.path("http://tok", PathMask.NONE, true)).isEqualTo("http://<redacted>");
    // Without an '@' past the cut, the URL is cleaned as before.
    assertThat(Sanitizer.path("http://h.example/a{b}", PathMask.NONE, false))
        .isEqualTo("http://h.example/a{b}");
  }

  @Test
  void aPathWithAnAtIsWrittenFromItsLastAtAsAUrlIsUnlessTheAtBeginsThePath() {
    // https://u:12/canary@h.example/x: a password with an unencoded '/'. The JDK and OkHttp
    // connect to host u, port 12, and send the path /canary@h.example/x: written whole, it was
    // read back (a log line, a span's url.full) as the URL with its password.
    assertThat(Sanitizer.path("/canary@h.example/x?k=v")).isEqualTo("/<redacted>@h.example/x");
    assertThat(Sanitizer.path("/can/ary@h.example/x")).isEqualTo("/<redacted>@h.example/x");
    // An '@' after a ';' in its segment may as well be inside a path parameter's value
    // (;jsessionid=AB@CD): the segment goes whole (aPathParameterIsRemovedWhole...).
    assertThat(Sanitizer.path("/ca;nary@h.example/x")).isEqualTo("/<redacted>/x");
    assertThat(Sanitizer.path("/a@b/@me")).isEqualTo("/<redacted>@me");
    // An '@' that begins a later segment may end a password that ends with its '/'
    // (https://u:12/canary/@h.example/x): a handle there is redacted before it too.
    assertThat(Sanitizer.path("/canary/@h.example/x")).isEqualTo("/<redacted>@h.example/x");
    assertThat(Sanitizer.path("/users/@me/x")).isEqualTo("/<redacted>@me/x");
    // An '@' right after the path's '/' has nothing before it (a scope); an encoded one is no
    // delimiter to any reader.
    assertThat(Sanitizer.path("/@scope/pkg")).isEqualTo("/@scope/pkg");
    assertThat(Sanitizer.path("/users/a%40b/x")).isEqualTo("/users/a%40b/x");
    // An '@' in a query the path came with is past the path: all of it comes before that '@'.
    assertThat(Sanitizer.path("/x?to=a@b")).isEqualTo("/<redacted>");
    assertThat(Sanitizer.path("/?to=a@b")).isEqualTo("/");
  }

  /**
   * A password with a '/' and then a '?' or '#': https://u:12/ca?nary@h.example/x goes to host u,
   * port 12, path /ca, the '@' in the query (or fragment). Each client's path() is without its
   * query, so Sanitizer.path never saw that '@' and wrote /ca, part of the password; the request
   * tells it now (RequestInfo.atPastPath), read here as java.net.URI reads the URL, and the path is
   * written /<redacted>.
   */
  @ParameterizedTest
  @ValueSource(
      strings = {
        "https://u:12/ca?nary@h.example/x|ca",
        "https://u:12/ca#nary@h.example/x|ca",
        "https://u:12/c/a?nary@h.example|c/a",
        "https://u:12/ca;x?nary@h.example/x|ca",
        "https://u:12/c@a?nary@h.example/x|c@a",
        "https://u:12/ca?k=v#nary@h.example/x|ca"
      })
  void aPasswordWithASlashThenAQueryOrFragmentIsNotWrittenAsThePath(String urlAndSecret)
      throws Exception {
    String url = urlAndSecret.substring(0, urlAndSecret.indexOf('|'));
    String secret = urlAndSecret.substring(urlAndSecret.indexOf('|') + 1);
    java.net.URI uri = new java.net.URI(url);
    assertThat(uri.getRawUserInfo()).as(url).isNull();
    assertThat(uri.getHost()).as(url).isEqualTo("u");
    assertThat(uri.getRawPath()).as(url).startsWith("/" + secret);
    boolean atPastPath = Sanitizer.atPastPath(uri.getRawQuery(), uri.getRawFragment());

    assertThat(atPastPath).as(url).isTrue();
    assertThat(Sanitizer.path(uri.getRawPath(), PathMask.NONE, atPastPath))
        .as(url)
        .isEqualTo("/<redacted>");
    // A path that came with its query (Apache HttpClient 5 keeps one so) tells it itself.
    String withQuery = url.substring("https://u:12".length());
    assertThat(Sanitizer.path(withQuery)).as(url).isEqualTo("/<redacted>");
    if (uri.getRawFragment() == null) {
      assertThat(Sanitizer.atPastPath(withQuery)).as(url).isTrue();
    }
  }

  @Test
  void aQueryOrFragmentWithoutAnAtLeavesThePathAsItWas() {
    assertThat(Sanitizer.atPastPath("k=v", "f")).isFalse();
    assertThat(Sanitizer.atPastPath(null, null)).isFalse();
    assertThat(Sanitizer.atPastPath("/a@b/x?k=v")).isFalse();
    assertThat(Sanitizer.atPastPath("/a/x")).isFalse();
    assertThat(Sanitizer.path("/a/x", PathMask.NONE, false)).isEqualTo("/a/x");
    assertThat(Sanitizer.path("/", PathMask.NONE, true)).isEqualTo("/");
  }

  /**
   * Why the '@' rule cannot keep an address in a path ({@code /users/a@b.example}): each narrower
   * rule that would keep it lets a URL an application can write through with part of its
   * credential. Each URL is read here as the JDK client reads it (java.net.URI: OkHttp and
   * HttpURLConnection split it the same way); the agent writes the host, the port when it is not
   * the scheme's default, and Sanitizer.path. What the path holds before its last '@' is the
   * credential (or part of it), and nothing in the text tells it from an address: keep "seg@host"
   * or "seg/seg@host" and some credential is written.
   */
  @ParameterizedTest
  @ValueSource(
      strings = {
        // "Only when the written host has a ':'": a password that starts "443/" loses its port
        // to the default, so the written host is just "svc".
        "https://svc:443/users/a@b.example|users/a",
        "http://svc:/users/a@b.example|users/a",
        // "Only when the '@' is in the first segment": a password with two '/'.
        "https://svc:8443/users/a@b.example|users/a",
        // "Only when the text before the '@' holds a ':'": a token as the user name, no password
        // (https://TOKEN@git.example is how many hosts take one), with a '/' in it.
        "https://tok/users/a@b.example|users/a",
        // "Only when a path follows the host after the '@'", or "not when the segment reads as an
        // address": the URL the application wrote ends at its host.
        "https://svc:12/a.b@b.example|a.b",
        // "Not when the '@' begins a segment": a password that ends with its '/'.
        "https://svc:12/users/@me/x|users/",
        // A user name with a '/' and a password: the ':' is in the path.
        "https://us/er:pa.ss@b.example/users|er:pa.ss"
      })
  void anAddressInAPathCannotBeToldFromACredentialSoItIsRedacted(String urlAndSecret)
      throws Exception {
    String url = urlAndSecret.substring(0, urlAndSecret.indexOf('|'));
    String secret = urlAndSecret.substring(urlAndSecret.indexOf('|') + 1);
    java.net.URI uri = new java.net.URI(url);
    // The client sees no user-info: the credential is in the path it sends.
    assertThat(uri.getRawUserInfo()).as(url).isNull();
    assertThat(uri.getRawPath()).as(url).startsWith("/" + secret);
    int port = uri.getPort();
    boolean defaultPort =
        port < 0
            || ("https".equals(uri.getScheme()) && port == 443)
            || ("http".equals(uri.getScheme()) && port == 80);
    String written =
        uri.getScheme()
            + "://"
            + uri.getHost()
            + (defaultPort ? "" : ":" + port)
            + Sanitizer.path(uri.getRawPath());

    assertThat(written).as(url).doesNotContain(secret).contains("/<redacted>@");
  }

  /**
   * Secrets with a blank in them, quoted as clients quote what they refused: word-by-word redaction
   * showed what came after the blank (SECRET2).
   */
  static Stream<String> secretsWithABlank() {
    return Stream.of(
        // JDK: new URI(...) / URI.create(...) quote the refused input last, blank and all.
        "Illegal character in authority at index 7: http://user:SECRET SECRET2@h.example/v1",
        "Illegal character in query at index 29: https://h.example/v1?token=SECRET SECRET2",
        "Illegal character in fragment at index 22: http://h.example/p#id_token=SECRET SECRET2",
        // ... a relative one (a redirect's Location), and one whose blank comes before the query.
        "Illegal character in query at index 9: /v1/x?sig=SECRET SECRET2#SECRET3",
        "Illegal character in path at index 5: /r/my dir/x?sig=SECRET SECRET2#SECRET3",
        "Illegal character in authority at index 7: http://bad host/x?sig=SECRET SECRET2",
        "Illegal character in path at index 14: http://h/my dir/a;jsessionid=SECRET SECRET2/b",
        // JDK HttpURLConnection.setRequestProperty with a line break in the value.
        "Illegal character(s) in message header value: Bearer SECRET SECRET2\r\nX: SECRET3",
        // OkHttp 3 Headers.checkValue: the refused value, line break and all.
        "Unexpected char 0x0a at 15 in Authorization value: Bearer SECRET SECRET2\nSECRET3",
        "Unexpected char 0x0d at 20 in Cookie value: session=SECRET SECRET2\r\nx=SECRET3",
        // Apache HttpClient 4 and 5 DefaultRedirectStrategy: the Location it could not parse.
        "Invalid redirect URI: https://h.example/cb?code=SECRET SECRET2&state=SECRET3",
        "Invalid redirect URI: http://u:SECRET SECRET2@h.example/next",
        // Spring's RestTemplate quotes the URL.
        "I/O error on GET request for \"http://h.example/v1?token=SECRET SECRET2\": Connection"
            + " refused",
        "I/O error on POST request for \"http://u:SECRET SECRET2@h.example/v1\": Read timed out",
        // A request dump, a JSON error body, a map's toString().
        "400 Bad Request: {\"error\":\"bad\",\"password\": \"SECRET SECRET2\",\"user\":\"bob\"}",
        "login failed for password=\"SECRET SECRET2\" user=bob",
        "login failed for password='SECRET SECRET2' user=bob",
        "{'client_secret': 'SECRET \\' SECRET2', 'scope': 'read'}",
        "{\"access_token\":\"SECRET \\\" SECRET2\"}",
        "config {db.password=SECRET, user=bob}",
        "Cookie: a=SECRET b=SECRET2; c=SECRET3");
  }

  @ParameterizedTest
  @MethodSource("secretsWithABlank")
  void aSecretWithABlankIsRedactedWhole(String hostile) {
    assertThat(Sanitizer.message(hostile, null)).doesNotContain("SECRET");
  }

  @Test
  void aQuotedSecretIsRedactedToItsClosingQuoteAndTheRestIsKept() {
    assertThat(Sanitizer.message("login failed for password=\"SECRET SECRET2\" user=bob", null))
        .isEqualTo("login failed for password=\"<redacted>\" user=bob");
    assertThat(
            Sanitizer.message(
                "400 {\"password\": \"SECRET \\\" SECRET2\", \"user\": \"bob\"}", null))
        .isEqualTo("400 {\"password\": \"<redacted>\", \"user\": \"bob\"}");
    assertThat(
            Sanitizer.message(
                "I/O error on GET request for \"http://u:SECRET S2@h.example/v1?token=SECRET"
                    + " SECRET2\": Connection refused",
                null))
        .isEqualTo("I/O error on GET request for \"http://h.example/v1\": Connection refused");
    assertThat(
            Sanitizer.message(
                "Illegal character in authority at index 7: http://user:SECRET S2@h.example/v1",
                null))
        .isEqualTo("Illegal character in authority at index 7: http://h.example/v1");
  }

  @Test
  void aHeaderValueOkHttpRefusedIsRedactedToTheEndOfTheMessageTheRoutesKeyHeaderToo() {
    assertThat(
            Sanitizer.message(
                "Unexpected char 0x0a at 6 in Cookie value: a=SECRET\nb=SECRET2 c=SECRET3", null))
        .isEqualTo("Unexpected char 0x0a at 6 in Cookie value: <redacted>");
    assertThat(
            Sanitizer.message(
                "Unexpected char 0x0d at 3 in X-Dedupe value: SEC\r\nRET2 SECRET3", "X-Dedupe"))
        .isEqualTo("Unexpected char 0x0d at 3 in X-Dedupe value: <redacted>");
  }

  @Test
  void aLongQuotedSecretOrALongLineOfUrlsIsCleanedWithoutOverflowingTheStack() {
    // Cut at MAX_CLEANED_CHARS first: the closing quote is past the cut, so the value runs to the
    // text's end and is redacted with the " ..." the cut left.
    assertThat(Sanitizer.message("password=\"" + "SECRET ".repeat(50_000) + "\"", null))
        .isEqualTo("password=\"<redacted>");
    assertThat(Sanitizer.message("password=\"" + "SECRET ".repeat(500) + "\"", null))
        .isEqualTo("password=\"<redacted>\"");
    // One word past the cut: dropped whole, and what the cut left (" ...") is the value.
    assertThat(Sanitizer.message("{'token': '" + "\\'SECRET".repeat(50_000) + "'}", null))
        .isEqualTo("{'token': <redacted>");
    assertThat(Sanitizer.message("{'token': '" + "\\'SECRET".repeat(400) + "'}", null))
        .isEqualTo("{'token': '<redacted>'}");
    assertThat(Sanitizer.message("at: " + "http://h.example/p ".repeat(20_000), null))
        .startsWith("at: http://h.example/p http://h.example/p")
        .hasSize(Sanitizer.MAX_MESSAGE_CHARS + 3);
  }

  /**
   * A header named for a token, key or secret that is not among the listed ones ({@code
   * X-Vault-Token}, {@code X-Api-Token}, {@code Client-Secret}): written {@code Name: value} it was
   * kept as prose ("invalid token: expired"). A key with a '-' is a header's name, not prose.
   */
  @ParameterizedTest
  @ValueSource(
      strings = {
        "X-Vault-Token: hvs.SECRET",
        "request headers: X-Api-Token: SECRET, Accept: */*",
        "Client-Secret: SECRET",
        "x-custom-api-key : SECRET"
      })
  void aHeaderNamedForATokenKeyOrSecretIsRedacted(String message) {
    assertThat(Sanitizer.message(message, null)).doesNotContain("SECRET").contains("<redacted>");
  }

  @Test
  void proseAboutCredentialsAndUrlsIsKept() {
    assertThat(Sanitizer.message("invalid token: expired", null))
        .isEqualTo("invalid token: expired");
    assertThat(Sanitizer.message("the refresh token: expired", null))
        .isEqualTo("the refresh token: expired");
    assertThat(Sanitizer.message("password authentication failed for user bob", null))
        .isEqualTo("password authentication failed for user bob");
    assertThat(Sanitizer.message("tokens=5 left", null)).isEqualTo("tokens=5 left");
    assertThat(Sanitizer.message("Connect to http://h.example:80 failed: refused (retry 2)", null))
        .isEqualTo("Connect to http://h.example:80 failed: refused (retry 2)");
    assertThat(Sanitizer.message("failed: http://h.example/v1/x refused (retry 2)", null))
        .isEqualTo("failed: http://h.example/v1/x refused (retry 2)");
    assertThat(Sanitizer.message("GET \"http://h.example/v1\" gave 503 twice", null))
        .isEqualTo("GET \"http://h.example/v1\" gave 503 twice");
  }

  @Test
  void anExceptionIsItsClassAndItsCleanMessage() {
    IOException e = new IOException("reset on http://h/p?token=SECRET");

    assertThat(Sanitizer.exception(e, false, null)).isEqualTo("IOException: reset on http://h/p");
    assertThat(Sanitizer.exception(e, true, null))
        .isEqualTo("java.io.IOException: reset on http://h/p");
    assertThat(Sanitizer.exception(new IOException(), false, null)).isEqualTo("IOException");
  }

  /**
   * Apache HttpClient takes {@code ss@h.example} as the host of {@code
   * http://user:pa@ss@h.example/} and names it bare in its messages and the JDK's: no URL around it
   * to strip a user-info from.
   */
  @Test
  void anExceptionNamingACallsHostWithAnAtLosesWhatComesBeforeThatAt() {
    String host = "ss@h.example";
    assertThat(
            Sanitizer.exception(
                new java.net.UnknownHostException("ss@h.example: Name or service not known"),
                false,
                null,
                PathMask.NONE,
                host))
        .isEqualTo("UnknownHostException: <redacted>@h.example: Name or service not known");
    assertThat(
            Sanitizer.exception(
                new java.net.ConnectException(
                    "Connect to ss@h.example:443 [ss@h.example/10.0.0.1] failed: Connection refused"),
                false,
                null,
                PathMask.NONE,
                host))
        .isEqualTo(
            "ConnectException: Connect to <redacted>@h.example:443 [<redacted>@h.example/10.0.0.1]"
                + " failed: Connection refused");
    assertThat(
            Sanitizer.exception(
                new IOException("Connect to http://SS@h.example:80 [ss@h.example/10.0.0.1] failed"),
                false,
                null,
                PathMask.NONE,
                host))
        .isEqualTo(
            "IOException: Connect to http://h.example:80 [<redacted>@h.example/10.0.0.1] failed");
    // A host without user-info, or an empty one, changes nothing.
    IOException plain = new IOException("Connect to a@b.example failed");
    assertThat(Sanitizer.exception(plain, false, null, PathMask.NONE, "h.example"))
        .isEqualTo("IOException: Connect to a@b.example failed");
    assertThat(Sanitizer.exception(plain, false, null, PathMask.NONE, "@b.example"))
        .isEqualTo("IOException: Connect to a@b.example failed");
    assertThat(Sanitizer.exception(plain, false, null, PathMask.NONE, null))
        .isEqualTo("IOException: Connect to a@b.example failed");
  }

  /** A proxy's path may carry its target percent-encoded, as a path segment must. */
  @Test
  void aPercentEncodedUrlInsideAPathOrAMessageLosesItsUserInfo() {
    assertThat(Sanitizer.path("/fetch/https%3A%2F%2Fuser%3Apassword%40target%2Fx"))
        .isEqualTo("/fetch/https%3A%2F%2Ftarget%2Fx");
    assertThat(Sanitizer.path("/fetch/https%3a%2f%2fuser%3Apa%40ss%40target%2Fx"))
        .isEqualTo("/fetch/https%3a%2f%2ftarget%2Fx");
    assertThat(
            Sanitizer.message(
                "Server returned HTTP response code: 500 for URL:"
                    + " https://h/fetch/https%3A%2F%2Fuser%3Apassword%40target%2Fx",
                null))
        .isEqualTo(
            "Server returned HTTP response code: 500 for URL: https://h/fetch/https%3A%2F%2Ftarget%2Fx");
    assertThat(Sanitizer.message("failed http%3A%2F%2Fu%3Apw%40host%2Fx rest", null))
        .isEqualTo("failed http%3A%2F%2Fhost%2Fx rest");
    // An encoded '@' in a path with no URL in it is kept (guarantees.md).
    assertThat(Sanitizer.path("/users/a%40b.example")).isEqualTo("/users/a%40b.example");
  }

  /** A URL without its two slashes after a scheme still has a user-info. */
  @Test
  void aSchemeRelativeOrOneSlashUrlInAMessageLosesItsUserInfo() {
    assertThat(Sanitizer.message("Invalid redirect URI: //user:password@h/x?tok=1", null))
        .isEqualTo("Invalid redirect URI: //h/x");
    assertThat(Sanitizer.message("Location: //user:password@h/x", null))
        .isEqualTo("Location: //h/x");
    assertThat(Sanitizer.message("Invalid redirect URI: //user:pa ss@h/x", null))
        .isEqualTo("Invalid redirect URI: //h/x");
    assertThat(Sanitizer.message("failed http:/u:pw@host/x?token=abc", null))
        .isEqualTo("failed http:/host/x");
    assertThat(Sanitizer.message("failed url='//u:pw@host/x'", null))
        .isEqualTo("failed url='//host/x'");
    // A Windows drive is no scheme; a path alone keeps its '@' (written as a path is, elsewhere).
    assertThat(Sanitizer.message("cannot open C:/Users/a@b/f", null))
        .isEqualTo("cannot open C:/Users/a@b/f");
  }

  /** A session id is a path parameter of the host too, and its value may hold an '@'. */
  @Test
  void aPathParameterIsRemovedWholeEvenWithAnAtInItAndAfterTheHost() {
    assertThat(Sanitizer.path("/x;jsessionid=AB@CD/y")).isEqualTo("/<redacted>/y");
    assertThat(Sanitizer.path("/x;jsessionid=AB@CD")).isEqualTo("/<redacted>");
    // https://u:12/ca;nary@h/x: the password's part before the ';' is not written either.
    assertThat(Sanitizer.path("/ca;nary@h/x")).isEqualTo("/<redacted>/x");
    assertThat(Sanitizer.path("/a;v=1/b@c/d")).isEqualTo("/<redacted>@c/d");
    assertThat(Sanitizer.message("failed http://host;jsessionid=SECRET rest", null))
        .isEqualTo("failed http://host rest");
    assertThat(Sanitizer.message("failed http://host:8080;jsessionid=SECRET/a rest", null))
        .isEqualTo("failed http://host:8080/a rest");
    assertThat(Sanitizer.message("failed on http://h; retrying", null))
        .isEqualTo("failed on http://h; retrying");
  }

  /**
   * In a message, a URL's last '@' ends its user-info; one inside a path parameter's value left the
   * rest of that value written as the host ({@code http://CD/y}).
   */
  @Test
  void aUrlWhosePathParameterHoldsAnAtWritesNoneOfThatParameter() {
    assertThat(Sanitizer.message("failed http://h/x;jsessionid=AB@CD/y rest", null))
        .isEqualTo("failed http://<redacted>/y rest");
    assertThat(Sanitizer.message("failed http://h/x;jsessionid=AB@CD?q=1 rest", null))
        .isEqualTo("failed http://<redacted> rest");
    assertThat(
            Sanitizer.message("Illegal character in path at index 9: http://h/x;s=A B@CD/y", null))
        .isEqualTo("Illegal character in path at index 9: http://<redacted>/y");
    // An '@' with no ';' before it in its segment ends a user-info, as before.
    assertThat(Sanitizer.message("failed http://u:p@h/x;jsessionid=S/y rest", null))
        .isEqualTo("failed http://h/x/y rest");
    assertThat(Sanitizer.path("http://h/x;jsessionid=AB@CD/y")).isEqualTo("http://<redacted>/y");
  }

  @Test
  void anExceptionWhoseMessageThrowsIsJustItsClass() {
    IOException weird =
        new IOException() {
          private static final long serialVersionUID = 1L;

          @Override
          public String getMessage() {
            throw new IllegalStateException("boom");
          }
        };

    assertThat(Sanitizer.exception(weird, true, null))
        .startsWith("dev.retryagent.internal.observe.");
  }

  @Test
  void aPercentEncodedQueryOrFragmentInAMessageIsNotWritten() {
    assertThat(Sanitizer.message("failed http://h/x%3Fkey%3Dsecret rest", null))
        .isEqualTo("failed http://h/x rest");
    assertThat(Sanitizer.message("failed http://h/x%3ftoken%3Dsecret", null))
        .isEqualTo("failed http://h/x");
    assertThat(Sanitizer.message("failed http://h/x%23access_token%3Dsecret", null))
        .isEqualTo("failed http://h/x");
    assertThat(Sanitizer.message("redirect to /x%3Ftoken%3Dsecret", null))
        .isEqualTo("redirect to /x");
    // A URL encoded whole (a redirect's target in a query value cut off already, or alone).
    assertThat(Sanitizer.message("next=http%3A%2F%2Fh%2Fx%3Ftoken%3Dsecret", null))
        .isEqualTo("next=http%3A%2F%2Fh%2Fx");
    assertThat(Sanitizer.message("failed /fetch/https%3A%2F%2Fh%2Fx%23id_token%3Dsecret", null))
        .isEqualTo("failed /fetch/https%3A%2F%2Fh%2Fx");
    // A lone encoded '?' at the end hides nothing; the path's own encoded text stays.
    assertThat(Sanitizer.message("is it up%3F", null)).isEqualTo("is it up%3F");
    assertThat(Sanitizer.message("failed http://h/a%20b/c", null))
        .isEqualTo("failed http://h/a%20b/c");
  }

  @Test
  void aPathHoldingAPercentEncodedUrlLosesThatUrlsQuery() {
    assertThat(Sanitizer.path("/fetch/http%3A%2F%2Fh%2Fx%3Ftoken%3Dsecret"))
        .isEqualTo("/fetch/http%3A%2F%2Fh%2Fx");
    assertThat(Sanitizer.path("/fetch/http%3A%2F%2Fh%2Fx%23access_token%3Dsecret"))
        .isEqualTo("/fetch/http%3A%2F%2Fh%2Fx");
    // A request path's own encoded '?' before any URL is part of the path, as sent.
    assertThat(Sanitizer.path("/files/what%3F")).isEqualTo("/files/what%3F");
  }

  @Test
  void aUserInfoWrittenWithoutSchemeLosesItsPassword() {
    // OkHttp 3's Request.Builder.url: "unexpected url: " + the string it could not parse.
    assertThat(Sanitizer.message("unexpected url: u:pw@h/x", null))
        .isEqualTo("unexpected url: <redacted>@h/x");
    assertThat(Sanitizer.message("unexpected url: u:pw@h", null))
        .isEqualTo("unexpected url: <redacted>@h");
    assertThat(Sanitizer.message("bad target \"u:pa@ss@h:8080\"", null))
        .isEqualTo("bad target \"<redacted>@h:8080\"");
    assertThat(Sanitizer.message("target=u:pw@h/x", null)).isEqualTo("target=<redacted>@h/x");
    assertThat(
            Sanitizer.exception(
                new IOException("unexpected url: u:pw@other/x"), false, null, PathMask.NONE, "h"))
        .isEqualTo("IOException: unexpected url: <redacted>@other/x");
    // An address, a host and port, a scoped package: no ':' before the '@'.
    assertThat(Sanitizer.message("mail to a@b.example failed", null))
        .isEqualTo("mail to a@b.example failed");
    assertThat(Sanitizer.message("Connect to h.example:443 [h.example/10.0.0.1] failed", null))
        .isEqualTo("Connect to h.example:443 [h.example/10.0.0.1] failed");
  }

  @Test
  void headerAndKeySecretsInOtherSpellingsAreRedacted() {
    assertThat(Sanitizer.message("Cookie : a=SECRET", null)).isEqualTo("Cookie : <redacted>");
    assertThat(Sanitizer.message("Set-Cookie2: a=SECRET; Version=1", null))
        .isEqualTo("Set-Cookie2: <redacted>");
    assertThat(Sanitizer.message("Cookie2: $Version=1 SECRET", null))
        .isEqualTo("Cookie2: <redacted>");
    // A JSON text quoted inside a JSON string (a server's error body, logged twice).
    assertThat(Sanitizer.message("body {\\\"password\\\":\\\"SE CRET\\\",\\\"a\\\":1}", null))
        .isEqualTo("body {\\\"password\\\":\\\"<redacted>\\\",\\\"a\\\":1}");
    assertThat(Sanitizer.message("{\\\"client_secret\\\": \\\"SECRET\\\"}", null))
        .isEqualTo("{\\\"client_secret\\\": \\\"<redacted>\\\"}");
    assertThat(Sanitizer.message("{\\\"Cookie\\\":\\\"a=SECRET\\\"}", null))
        .isEqualTo("{\\\"Cookie\\\":<redacted>");
  }

  @Test
  void aSessionIdHoldingAnAtAfterAUrlsHostIsNotWrittenAsTheHost() {
    assertThat(Sanitizer.message("failed http://h;jsessionid=AB@CD/y rest", null))
        .isEqualTo("failed http://<redacted>/y rest");
    assertThat(Sanitizer.message("failed http://h:8080;jsessionid=AB@CD?q=1 rest", null))
        .isEqualTo("failed http://<redacted> rest");
    // Nested in a path, plain or percent-encoded: the rest of the session id is no host either.
    assertThat(Sanitizer.path("/fetch/http://h;jsessionid=AB@CD/y"))
        .isEqualTo("/fetch/http://<redacted>/y");
    assertThat(Sanitizer.path("/fetch/http%3A%2F%2Fh%3Bjsessionid%3DAB%40CD%2Fy"))
        .isEqualTo("/fetch/http%3A%2F%2F<redacted>%2Fy");
    assertThat(Sanitizer.path("/fetch/http%3A%2F%2Fh%2Fx%3Bjsessionid%3DAB%40CD%2Fy"))
        .isEqualTo("/fetch/http%3A%2F%2F<redacted>%2Fy");
    assertThat(Sanitizer.message("failed /fetch/http%3A%2F%2Fh%3Bsid%3DAB%40CD rest", null))
        .isEqualTo("failed /fetch/http%3A%2F%2F<redacted> rest");
    // A user-info without ';' is cut at its '@' as before.
    assertThat(Sanitizer.path("/fetch/http%3A%2F%2Fu%3Apw%40h%2Fy"))
        .isEqualTo("/fetch/http%3A%2F%2Fh%2Fy");
  }

  @Test
  void aHostLongerThanADnsNameIsCut() {
    String longHost = "a".repeat(254);
    assertThat(Sanitizer.boundedHost("a".repeat(253))).isEqualTo("a".repeat(253));
    assertThat(Sanitizer.boundedHost(longHost)).isEqualTo("a".repeat(253) + "...");
    assertThat(Sanitizer.boundedHost(longHost + ":8080")).isEqualTo("a".repeat(253) + "...:8080");
    assertThat(Sanitizer.boundedHost("https://" + longHost + ":443"))
        .isEqualTo("https://" + "a".repeat(253) + "...:443");
    assertThat(Sanitizer.boundedHost("https://h.example:443")).isEqualTo("https://h.example:443");
  }

  @Test
  void theTokensInTheUrlsOfWellKnownWebhooksAndBotsAreMaskedWithoutConfiguration() {
    String telegram = "/bot123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw/sendMessage";
    String slack = "/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX";
    String discord =
        "/api/webhooks/123456789012345678/abcDEFghiJKLmnoPQRstuVWXyz0123456789_-abcdefghijKLMNOP";
    assertThat(Sanitizer.path(telegram)).isEqualTo("/<redacted>/sendMessage");
    assertThat(Sanitizer.path("/file" + telegram)).isEqualTo("/file/<redacted>/sendMessage");
    assertThat(Sanitizer.path(slack)).isEqualTo("/services/T00000000/B00000000/<redacted>");
    assertThat(Sanitizer.path(discord + "?wait=true"))
        .isEqualTo("/api/webhooks/123456789012345678/<redacted>");
    assertThat(Sanitizer.path("/api/v10/webhooks/1234/" + "t".repeat(68) + "/messages/1"))
        .isEqualTo("/api/v10/webhooks/1234/<redacted>/messages/1");
    // In a message's URL, and with a configured mask as well.
    assertThat(Sanitizer.message("failed https://api.telegram.org" + telegram + " rest", null))
        .isEqualTo("failed https://api.telegram.org/<redacted>/sendMessage rest");
    assertThat(Sanitizer.message("POST https://hooks.slack.com" + slack + ": 503", null))
        .isEqualTo("POST https://hooks.slack.com/services/T00000000/B00000000/<redacted>: 503");
    assertThat(Sanitizer.message("(https://discord.com" + discord + "), retrying", null))
        .isEqualTo("(https://discord.com/api/webhooks/123456789012345678/<redacted>), retrying");
    assertThat(Sanitizer.path(slack, PathMask.of(List.of("T[0-9]+"))))
        .isEqualTo("/services/<redacted>/B00000000/<redacted>");
    // Paths like them that hold no token are kept.
    assertThat(Sanitizer.path("/bots/42/status")).isEqualTo("/bots/42/status");
    assertThat(Sanitizer.path("/bot1:short/x")).isEqualTo("/bot1:short/x");
    assertThat(Sanitizer.path("/services/T1/B2/status")).isEqualTo("/services/T1/B2/status");
    assertThat(Sanitizer.path("/webhooks/42/deliveries")).isEqualTo("/webhooks/42/deliveries");
    assertThat(Sanitizer.path("/v1/items/42")).isEqualTo("/v1/items/42");
  }
}
