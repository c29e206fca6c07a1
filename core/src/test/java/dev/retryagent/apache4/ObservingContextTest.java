package dev.retryagent.apache4;

import static org.assertj.core.api.Assertions.assertThat;

import org.apache.http.HttpVersion;
import org.apache.http.message.BasicHttpRequest;
import org.apache.http.message.BasicHttpResponse;
import org.apache.http.protocol.BasicHttpContext;
import org.junit.jupiter.api.Test;

/**
 * The exchanges an attempt's context sees in the attributes HttpClient 4.5 writes, for an {@code
 * https} request through an HTTP proxy: the proxy's {@code CONNECT} first, which is not an exchange
 * of the call, then the application's request. HttpClient before 4.5.10 (4.5.3 here) does not set
 * {@code http.request} again for the application's request once the tunnel is up ({@code
 * MainClientExec}), so only the proxy's answer tells that the tunnel is set up.
 */
class ObservingContextTest {
  private final ObservingContext context = new ObservingContext(new BasicHttpContext(), null);

  private void connect(int proxyAnswers) {
    context.setAttribute(ObservingContext.REQUEST_SENT, Boolean.FALSE);
    context.setAttribute(ObservingContext.REQUEST_SENT, Boolean.TRUE);
    context.setAttribute(
        ObservingContext.RESPONSE, new BasicHttpResponse(HttpVersion.HTTP_1_1, proxyAnswers, "-"));
  }

  @Test
  void theApplicationsRequestThroughATunnelIsAnExchangeWhenHttpClientDoesNotNameItAgain() {
    // ProtocolExec names the application's request, MainClientExec then the CONNECT
    context.setAttribute(
        ObservingContext.REQUEST, new BasicHttpRequest("POST", "/v1/upload", HttpVersion.HTTP_1_1));
    context.setAttribute(
        ObservingContext.REQUEST,
        new BasicHttpRequest("CONNECT", "example.com:443", HttpVersion.HTTP_1_1));
    connect(407); // the proxy asks for credentials: a second CONNECT follows
    connect(200);
    assertThat(context.log().exchanges()).as("the CONNECTs are not the call's").isZero();

    // the application's request is written into the tunnel (4.5.3: http.request still the CONNECT)
    context.setAttribute(ObservingContext.REQUEST_SENT, Boolean.FALSE);

    assertThat(context.log().exchanges()).isEqualTo(1);
    assertThat(context.log().resends()).isZero();
  }

  @Test
  void aResendThroughANewTunnelFollowsTheFailureNotTheProxysAnswer() {
    context.setAttribute(
        ObservingContext.REQUEST, new BasicHttpRequest("GET", "/v1/items", HttpVersion.HTTP_1_1));
    context.setAttribute(ObservingContext.REQUEST_SENT, Boolean.FALSE);
    // no answer: the connection was dropped, and HttpClient resends on a new tunnel
    context.setAttribute(
        ObservingContext.REQUEST, new BasicHttpRequest("GET", "/v1/items", HttpVersion.HTTP_1_1));
    context.setAttribute(
        ObservingContext.REQUEST,
        new BasicHttpRequest("CONNECT", "example.com:443", HttpVersion.HTTP_1_1));
    connect(200);
    context.setAttribute(
        ObservingContext.REQUEST, new BasicHttpRequest("GET", "/v1/items", HttpVersion.HTTP_1_1));
    context.setAttribute(ObservingContext.REQUEST_SENT, Boolean.FALSE);

    assertThat(context.log().resentAfter()).containsExactly(-1);
  }
}
