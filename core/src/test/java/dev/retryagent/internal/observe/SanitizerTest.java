package dev.retryagent.internal.observe;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

class SanitizerTest {
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
    assertThat(Sanitizer.path("/v1/a@b")).isEqualTo("/v1/a@b");
  }

  @Test
  void anExceptionIsItsClassAndItsCleanMessage() {
    IOException e = new IOException("reset on http://h/p?token=SECRET");

    assertThat(Sanitizer.exception(e, false, null)).isEqualTo("IOException: reset on http://h/p");
    assertThat(Sanitizer.exception(e, true, null))
        .isEqualTo("java.io.IOException: reset on http://h/p");
    assertThat(Sanitizer.exception(new IOException(), false, null)).isEqualTo("IOException");
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
}
