package dev.retryagent.apache5;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retryagent.config.PathMask;
import dev.retryagent.internal.observe.Sanitizer;
import org.apache.hc.core5.http.HttpHost;
import org.apache.hc.core5.http.message.BasicClassicHttpRequest;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A request made from a string the JDK's {@code URI} refuses (a '{', a '|', a blank) keeps the
 * whole string as its path in HttpClient 5. When the password holds a '?' or '#', the request's
 * path as the agent reads it is cut there ({@code http://user:pa}), and that part of the password
 * was written as the path by log lines, dead letters, {@code RetryEvent.toString} and spans (all of
 * them write the path through {@link Sanitizer#path(String, PathMask, boolean)}).
 */
class WholeUrlPathTest {
  @ParameterizedTest
  @ValueSource(
      strings = {
        "http://user:pa?ss@h.example/x?q={a}",
        "http://user:pa#ss@h.example/x|y",
        "http://user:pa?ss@h.example/x y"
      })
  void noPartOfAPasswordWithAQuestionMarkOrHashIsWrittenAsThePath(String url) {
    BasicClassicHttpRequest request = new BasicClassicHttpRequest("GET", url);
    assertThat(request.getPath()).as("kept whole by HttpClient").isEqualTo(url);
    ClassicRequest view = new ClassicRequest(request, new HttpHost("http", "h.example", 80));

    String written = Sanitizer.path(view.path(), PathMask.NONE, view.atPastPath());

    assertThat(written).isEqualTo("http://<redacted>").doesNotContain("user").doesNotContain("pa");
  }

  @ParameterizedTest
  @ValueSource(strings = {"http://tok?en@h.example/x y", "http://tok#en@h.example/x y"})
  void noPartOfATokenAsTheUserWithAQuestionMarkOrHashIsWrittenAsThePath(String url) {
    BasicClassicHttpRequest request = new BasicClassicHttpRequest("GET", url);
    ClassicRequest view = new ClassicRequest(request, new HttpHost("http", "h.example", 80));

    assertThat(Sanitizer.path(view.path(), PathMask.NONE, view.atPastPath()))
        .isEqualTo("http://<redacted>");
  }
}
