package dev.retryagent.apache4;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retryagent.engine.RequestInfo;
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

    Call4 info = new Call4(null, null, request, null);
    info.beforeAttempt(1, "X-Attempt");
    info.setSpanHeader("traceparent", "00-first-01");
    info.beforeAttempt(2, "X-Attempt");
    info.setSpanHeader("traceparent", "00-second-01");
    info.restore();

    // A later send of the same object puts the same header lines on the wire, in the same order.
    assertThat(headers(request)).containsExactly(before);
  }

  @Test
  void headersTheCallAddedAreGoneAfterIt() {
    HttpGet request = new HttpGet("http://localhost/items");
    request.addHeader("Accept", "application/json");

    Call4 info = new Call4(null, null, request, null);
    info.beforeAttempt(1, "X-Attempt");
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

    HttpHost target = new HttpHost("api.example", 8443, "https");

    // The call's own view and the view of a request HttpClient made in an attempt read it alike.
    for (RequestInfo info :
        new RequestInfo[] {new Request4(target, wrapped), new Call4(null, target, wrapped, null)}) {
      assertThat(info.path()).isEqualTo("/v1/payments/7");
      assertThat(info.host()).isEqualTo("api.example");
      assertThat(info.port()).isEqualTo(8443);
      assertThat(info.scheme()).isEqualTo("https");
      assertThat(info.method()).isEqualTo("GET");
    }
  }
}
