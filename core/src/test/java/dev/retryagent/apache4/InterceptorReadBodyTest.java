package dev.retryagent.apache4;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

import dev.retryagent.engine.RetryEngine;
import dev.retryagent.engine.RetryEvent;
import dev.retryagent.policy.CircuitBreakerPolicy;
import dev.retryagent.policy.Mode;
import dev.retryagent.policy.TransportFailure;
import dev.retryagent.testing.FakeTime;
import dev.retryagent.testing.ScriptedHttpServer;
import dev.retryagent.testing.TestEngines;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import org.apache.http.HttpEntityEnclosingRequest;
import org.apache.http.HttpRequestInterceptor;
import org.apache.http.client.methods.CloseableHttpResponse;
import org.apache.http.client.methods.HttpPost;
import org.apache.http.client.methods.HttpPut;
import org.apache.http.config.RegistryBuilder;
import org.apache.http.conn.HttpHostConnectException;
import org.apache.http.conn.socket.ConnectionSocketFactory;
import org.apache.http.conn.socket.PlainConnectionSocketFactory;
import org.apache.http.entity.BufferedHttpEntity;
import org.apache.http.entity.ByteArrayEntity;
import org.apache.http.entity.InputStreamEntity;
import org.apache.http.impl.client.CloseableHttpClient;
import org.apache.http.impl.client.HttpClientBuilder;
import org.apache.http.impl.client.HttpClients;
import org.apache.http.impl.conn.PoolingHttpClientConnectionManager;
import org.apache.http.protocol.HttpContext;
import org.apache.http.util.EntityUtils;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;

/**
 * A POST of a non-repeatable entity that an application's request interceptor reads before the
 * connection is made (a body-logging interceptor buffers it), to a port that refuses the
 * connection, side by side: HttpClient 4.5 alone and wrapped. The application's entity is spent by
 * the first attempt's interceptor though nothing went out: a retry would send the interceptor's
 * copy of nothing (an empty POST the application takes for a success) or fail reading a closed
 * stream. It is never retried: the application gets the refusal, as without us.
 */
class InterceptorReadBodyTest {
  private static final String BODY = "{\"amount\":42}";

  /** How the interceptor reads the entity before the request is sent. */
  enum Reading {
    /** {@code new BufferedHttpEntity(entity)}: the entity writes itself ({@code writeTo}). */
    BUFFERED,
    /** {@code EntityUtils.toByteArray(entity)}: the entity's content stream read. */
    CONTENT
  }

  @ParameterizedTest
  @org.junit.jupiter.params.provider.EnumSource(Reading.class)
  void aNonRepeatableBodyAnInterceptorReadIsNeverResentAfterARefusedConnect(Reading reading)
      throws Exception {
    int port;
    try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      port = s.getLocalPort();
    }
    FakeTime time = new FakeTime();
    // The server comes up during the wait before a retry: a retry would reach it.
    ScriptedHttpServer[] late = new ScriptedHttpServer[1];
    RetryEngine engine =
        RetryEngine.builder()
            .clock(time)
            .sleeper(
                nanos -> {
                  if (late[0] == null) {
                    try {
                      late[0] = ScriptedHttpServer.onPort(port);
                    } catch (IOException e) {
                      throw new IllegalStateException(e);
                    }
                  }
                  time.sleep(nanos);
                })
            .build();
    String url = "http://127.0.0.1:" + port + "/v1/charges";
    try (CloseableHttpClient plain = builder(reading).build();
        CloseableHttpClient ours = RetryingCloseableHttpClient.wrap(builder(reading), engine)) {
      Throwable without = catchThrowable(() -> post(plain, url));
      assertThat(without).isInstanceOf(HttpHostConnectException.class);

      Throwable with = catchThrowable(() -> post(ours, url));
      // Before: one, an empty POST ("Content-Length: 0") answered 200, the caller's "success".
      assertThat(late[0] == null ? List.of() : late[0].requests())
          .extracting(r -> r.method + " [" + r.body + "]")
          .as("what the server got")
          .isEmpty();
      assertThat(with).isExactlyInstanceOf(without.getClass());
    } finally {
      if (late[0] != null) {
        late[0].close();
      }
    }
  }

  private static HttpClientBuilder builder(Reading reading) {
    HttpRequestInterceptor logging =
        (r, c) -> {
          if (r instanceof HttpEntityEnclosingRequest) {
            HttpEntityEnclosingRequest e = (HttpEntityEnclosingRequest) r;
            if (reading == Reading.BUFFERED) {
              e.setEntity(new BufferedHttpEntity(e.getEntity()));
            } else {
              e.setEntity(new ByteArrayEntity(EntityUtils.toByteArray(e.getEntity())));
            }
          }
        };
    return HttpClients.custom().addInterceptorFirst(logging);
  }

  private static String post(CloseableHttpClient client, String url) throws IOException {
    HttpPost post = new HttpPost(url);
    post.setEntity(
        new InputStreamEntity(
            new ByteArrayInputStream(BODY.getBytes(StandardCharsets.UTF_8)), BODY.length()));
    try (CloseableHttpResponse r = client.execute(post)) {
      return r.getStatusLine().getStatusCode() + " " + EntityUtils.toString(r.getEntity());
    }
  }

  /**
   * HttpClient's own resend, inside the attempt, of the copy the interceptor buffered: a PUT of a
   * non-repeatable entity whose first connection breaks as the request is written, before it was
   * sent (a stale pooled connection's broken pipe); the policy does not retry that failure.
   * HttpClient's default handler resends the request, whose entity is now the interceptor's
   * repeatable copy, and the call succeeds: with us too, as without us. The application's own
   * entity is spent, which only a retry of ours (it would send that entity) must heed.
   */
  @Test
  void httpClientsOwnResendOfTheInterceptorsCopyIsAllowedAsWithoutUs() throws Exception {
    List<RetryEvent> events = new ArrayList<>();
    RetryEngine engine =
        TestEngines.engine(
            new FakeTime(),
            Mode.ENFORCE,
            r -> r.maxAttempts(3).retryOnTransport(EnumSet.of(TransportFailure.CONNECT)),
            CircuitBreakerPolicy.defaults(),
            events);
    try (ScriptedHttpServer server = new ScriptedHttpServer();
        CloseableHttpClient plain = firstConnectionBreaks(Reading.BUFFERED).build();
        CloseableHttpClient ours =
            RetryingCloseableHttpClient.wrap(firstConnectionBreaks(Reading.BUFFERED), engine)) {
      server.otherwise(ScriptedHttpServer.Action.ok("done"));
      String url = server.url("/v1/items/7");

      assertThat(put(plain, url)).isEqualTo("200 done");
      // Before: SocketException (Broken pipe); the governed handler refused HttpClient's resend
      // (BODY_NOT_REPLAYABLE), the application's entity marked spent during the attempt.
      assertThat(put(ours, url)).isEqualTo("200 done");
      assertThat(server.requests())
          .extracting(r -> r.method + " [" + r.body + "]")
          .containsExactly("PUT [" + BODY + "]", "PUT [" + BODY + "]");
    }
  }

  /** {@link #builder}, whose first connection fails every write: a broken pipe. */
  private static HttpClientBuilder firstConnectionBreaks(Reading reading) {
    boolean[] made = new boolean[1];
    ConnectionSocketFactory sockets =
        new PlainConnectionSocketFactory() {
          @Override
          public Socket createSocket(HttpContext context) {
            if (made[0]) {
              return new Socket();
            }
            made[0] = true;
            return new Socket() {
              @Override
              public OutputStream getOutputStream() {
                return new OutputStream() {
                  @Override
                  public void write(int b) throws IOException {
                    throw new SocketException("Broken pipe");
                  }

                  @Override
                  public void write(byte[] b, int off, int len) throws IOException {
                    throw new SocketException("Broken pipe");
                  }
                };
              }
            };
          }
        };
    return builder(reading)
        .setConnectionManager(
            new PoolingHttpClientConnectionManager(
                RegistryBuilder.<ConnectionSocketFactory>create()
                    .register("http", sockets)
                    .build()));
  }

  private static String put(CloseableHttpClient client, String url) throws IOException {
    HttpPut put = new HttpPut(url);
    put.setEntity(
        new InputStreamEntity(
            new ByteArrayInputStream(BODY.getBytes(StandardCharsets.UTF_8)), BODY.length()));
    try (CloseableHttpResponse r = client.execute(put)) {
      return r.getStatusLine().getStatusCode() + " " + EntityUtils.toString(r.getEntity());
    }
  }
}
