package dev.retryagent.internal.observe;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A user-info written without a scheme (OkHttp 3's {@code unexpected url: u:pw@h/x}): redacted even
 * when a URL follows in the same word, and not taken from text that only looks like one (an ARN, an
 * IAM member, a mailto, a version, a time).
 */
class BareUserInfoTest {

  @ParameterizedTest
  @CsvSource(
      delimiter = '|',
      value = {
        // A redirect's target after the user-info's host: its separator hid the user-info.
        "unexpected url: user:pwCANARY@host/cb?redirect=https://app.example/home"
            + "|unexpected url: <redacted>@host/cb",
        "unexpected url: user:pwCANARY@host/cb?redirect=//app.example/home"
            + "|unexpected url: <redacted>@host/cb",
        "unexpected url: user:pwCANARY@host/cb?r=https:\\/\\/app|unexpected url: <redacted>@host/cb",
        "unexpected url: user:pwCANARY@host/fetch/http://t/x"
            + "|unexpected url: <redacted>@host/fetch/http://t/x",
        "unexpected url: user:pwCANARY@host/ab:/c|unexpected url: <redacted>@host/ab:/c",
        // The later URL's own user-info goes too.
        "unexpected url: u:pwCANARY@h/x?r=//a:bCANARY@c/d|unexpected url: <redacted>@h/x",
        "unexpected url: u:pwCANARY@h/x/https://a:bCANARY@c/d"
            + "|unexpected url: <redacted>@h/x/https://c/d",
        // As before: with no URL after it, with a port, and a user named as an address prefix but
        // followed by a path, a port or a host without a domain.
        "unexpected url: u:pwCANARY@h/x|unexpected url: <redacted>@h/x",
        "unexpected url: u:pwCANARY@h:8080/x|unexpected url: <redacted>@h:8080/x",
        "unexpected url: user:pwCANARY@db.example/x|unexpected url: <redacted>@db.example/x",
        "unexpected url: user:pwCANARY@db.example:5432|unexpected url: <redacted>@db.example:5432",
        "unexpected url: user:pwCANARY@localhost|unexpected url: <redacted>@localhost",
        "unexpected url: org.acme:pwCANARY@10.0.0.1|unexpected url: <redacted>@10.0.0.1",
      })
  void aBareUserInfoIsRedactedEvenWithAUrlLaterInTheWord(String text, String expected) {
    String clean = Sanitizer.message(text, null);
    assertThat(clean).isEqualTo(expected).doesNotContain("CANARY");
  }

  @ParameterizedTest
  @ValueSource(
      strings = {
        "User: arn:aws:sts::123456789012:assumed-role/AWSReservedSSO_Dev/alice@example.com is not"
            + " authorized to perform: s3:GetObject",
        "Permission denied for serviceAccount:deploy-bot@proj.iam.gserviceaccount.com on bucket",
        "invalid link mailto:support@example.com.",
        "call sip:alice@pbx.example.com failed",
        "dep org.acme:lib@1.2.3 missing",
        "dep org.acme:lib@1.2.3-SNAPSHOT missing",
        "at 12:30@worker-3 done",
        "clone git@github.com:org/repo.git failed",
        "object java.lang.Object@1b6d3586 at Foo.java:12",
      })
  void anAddressOrAVersionAfterAColonIsNoUserInfo(String text) {
    assertThat(Sanitizer.message(text, null)).isEqualTo(text);
  }

  @ParameterizedTest
  @CsvSource(
      delimiterString = " => ",
      value = {
        // An IAM member's type that is also a common user name: over-redacted, as a database URL
        // without its scheme (user:hunter2@db.example) reads the same.
        "member user:alice@example.com lacks role => member <redacted>@example.com lacks role",
        "connect user:hunterCANARY@db.example => connect <redacted>@db.example",
        "member group:admins@example.com, and more => member <redacted>@example.com, and more",
        "login email:pwCANARY@smtp.example failed => login <redacted>@smtp.example failed",
      })
  void aCommonUserNameBeforeAColonIsAUserInfoWhateverItsHost(String text, String expected) {
    assertThat(Sanitizer.message(text, null)).isEqualTo(expected).doesNotContain("CANARY");
  }

  @ParameterizedTest
  @CsvSource(
      delimiterString = " => ",
      value = {
        // r26: a SIP URI's user and password, a second user-info after an address.
        "INVITE sip:alice:pwCANARY@pbx.example SIP/2.0 => INVITE <redacted>@pbx.example SIP/2.0",
        "to mailto:admin:hunterCANARY@db.example => to <redacted>@db.example",
        "to mailto:a@b.example,admin:hunterCANARY@db.example => to <redacted>@db.example",
      })
  void anAddressPrefixKeepsNoWordWhoseAddressHoldsAPasswordOrASecondUserInfo(
      String text, String expected) {
    assertThat(Sanitizer.message(text, null)).isEqualTo(expected).doesNotContain("CANARY");
  }

  @ParameterizedTest
  @ValueSource(
      strings = {
        "{\"code\":400,\"email\":\"a@b.example\"}",
        "{\"id\":1,\"owner\":\"a@b.example\",\"ts\":\"12:30\"}",
        "{\"a\":{\"email\":\"a@b.example\"}}",
      })
  void anAddressInACompactJsonErrorBodyIsKept(String text) {
    // r26: a key's colon before a number or an object was taken for a user-info's.
    assertThat(Sanitizer.message(text, null)).isEqualTo(text);
  }

  @ParameterizedTest
  @CsvSource(
      delimiterString = " => ",
      value = {
        // A compact JSON text: the key's colon is no user-info's, the address is kept.
        "{\"email\":\"a@b.example\"} => {\"email\":\"a@b.example\"}",
        "{\"email\":\"a@b.example\",\"url\":\"https://x/y\"}"
            + " => {\"email\":\"a@b.example\",\"url\":\"https://x/y\"}",
        // A user-info in a value after it is still found.
        "{\"url\":\"u:pwCANARY@h/x\"} => {\"url\":\"<redacted>@h/x\"}",
        "{\"a\":\"b\",\"c\":\"u:pwCANARY@h/x\"} => {\"a\":\"b\",\"c\":\"<redacted>@h/x\"}",
      })
  void aJsonKeysColonIsNoUserInfos(String text, String expected) {
    assertThat(Sanitizer.message(text, null)).isEqualTo(expected).doesNotContain("CANARY");
  }
}
