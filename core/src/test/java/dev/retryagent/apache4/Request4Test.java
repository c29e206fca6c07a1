package dev.retryagent.apache4;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Arrays;
import org.apache.http.Header;
import org.apache.http.HttpHost;
import org.apache.http.client.methods.HttpGet;
import org.apache.http.client.methods.HttpRequestWrapper;
import org.apache.http.message.BasicHttpRequest;
import org.junit.jupiter.api.Test;

/** What a call leaves on the application's own request object: what it had before, as it was. */
class Request4Test {
  private static String[] headers(HttpGet request) {
    return Arrays.stream(request.getAllHeaders())
        .map(h -> h.getName() + ": " + h.getValue())
        .toArray(String[]::new);
  }

  @Test
  void theRequestsOwnHeadersAreLeftInTheirOrderAfterACallThatSetTheAttemptAndTraceHeaders() {
    HttpGet request = new HttpGet("http://localhost/items");
    request.addHeader("Accept", "application/json");
    request.addHeader("X-Attempt", "mine");
    request.addHeader("traceparent", "00-own-01");
    request.addHeader("X-Tail", "last");
    String[] before = headers(request);

    Request4 info = new Request4(null, request);
    info.prepare("X-Attempt");
    info.beforeAttempt(1);
    info.setSpanHeader("traceparent", "00-first-01");
    info.beforeAttempt(2);
    info.setSpanHeader("traceparent", "00-second-01");
    info.restore();

    // A later send of the same object puts the same header lines on the wire, in the same order.
    assertThat(headers(request)).containsExactly(before);
  }

  @Test
  void headersTheCallAddedAreGoneAfterIt() {
    HttpGet request = new HttpGet("http://localhost/items");
    request.addHeader("Accept", "application/json");

    Request4 info = new Request4(null, request);
    info.prepare("X-Attempt");
    info.beforeAttempt(1);
    info.setSpanHeader("traceparent", "00-first-01");
    info.restore();

    assertThat(headers(request)).containsExactly("Accept: application/json");
    assertThat(request.getAllHeaders()).extracting(Header::getName).doesNotContain("X-Attempt");
  }

  @Test
  void aWrappedRequestWithoutAUriIsSeenAtThePathOfItsRequestLine() {
    // HttpRequestWrapper is an HttpUriRequest whose getURI() is null when the request it wraps is
    // not one (a BasicHttpRequest): the view took the path as "/", and a policy for the route's
    // path (a payments route not retried, say) was not the one that applied.
    HttpRequestWrapper wrapped =
        HttpRequestWrapper.wrap(new BasicHttpRequest("GET", "/v1/payments/7?expand=all"));
    assertThat(wrapped.getURI()).isNull();

    Request4 info = new Request4(new HttpHost("api.example", 8443, "https"), wrapped);

    assertThat(info.path()).isEqualTo("/v1/payments/7");
    assertThat(info.host()).isEqualTo("api.example");
    assertThat(info.port()).isEqualTo(8443);
    assertThat(info.scheme()).isEqualTo("https");
  }
}
