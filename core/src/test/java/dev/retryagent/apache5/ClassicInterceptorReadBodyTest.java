package dev.retryagent.apache5;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

import dev.retryagent.engine.RetryEngine;
import dev.retryagent.testing.FakeTime;
import dev.retryagent.testing.ScriptedHttpServer;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.hc.client5.http.HttpHostConnectException;
import org.apache.hc.client5.http.classic.ExecChainHandler;
import org.apache.hc.client5.http.classic.methods.HttpPost;
import org.apache.hc.client5.http.impl.classic.CloseableHttpClient;
import org.apache.hc.client5.http.impl.classic.HttpClientBuilder;
import org.apache.hc.client5.http.impl.classic.HttpClients;
import org.apache.hc.core5.http.ClassicHttpRequest;
import org.apache.hc.core5.http.ContentType;
import org.apache.hc.core5.http.HttpRequestInterceptor;
import org.apache.hc.core5.http.io.entity.BufferedHttpEntity;
import org.apache.hc.core5.http.io.entity.ByteArrayEntity;
import org.apache.hc.core5.http.io.entity.EntityUtils;
import org.apache.hc.core5.http.io.entity.InputStreamEntity;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * A POST of a non-repeatable entity that an application's request interceptor reads before the
 * connection is made (a body-logging interceptor copies it, on the request of the attempt), to a
 * port that refuses the connection, side by side: HttpClient 5 alone and with our handler. The
 * interceptor's copy is repeatable, but a retry sends a copy of the application's request, whose
 * entity the interceptor spent though nothing went out: its length declared, nothing written. It is
 * never retried: the application gets the refusal, as without us.
 */
class ClassicInterceptorReadBodyTest {
  private static final String BODY = "{\"amount\":42}";

  /** How the interceptor reads the entity before the request is sent. */
  enum Reading {
    /** {@code new BufferedHttpEntity(entity)}: reads nothing of an entity HttpClient can send. */
    BUFFERED,
    /** {@code EntityUtils.toByteArray(entity)}: the entity's content stream read. */
    CONTENT
  }

  @ParameterizedTest
  @EnumSource(Reading.class)
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
    AtomicInteger runs = new AtomicInteger();
    try (CloseableHttpClient plain = builder(reading, runs).build();
        CloseableHttpClient ours = RetryExecHandler.addTo(builder(reading, runs), engine).build()) {
      Throwable without = catchThrowable(() -> post(plain, url));
      assertThat(without).isInstanceOf(HttpHostConnectException.class);
      // HttpClient 5.1 runs request interceptors in ProtocolExec, before the connection; 5.2
      // and later in MainClientExec, after it: a refused attempt there never read the entity.
      boolean readBeforeConnect = runs.get() > 0;

      if (reading == Reading.BUFFERED || !readBeforeConnect) {
        // HttpClient's RequestEntityProxy says the entity is repeatable until it is read, so the
        // interceptor's BufferedHttpEntity reads nothing: the entity is whole, the retry sends it.
        assertThat(post(ours, url)).isEqualTo("200 ok");
        assertThat(late[0].requests())
            .extracting(r -> r.method + " [" + r.body + "]")
            .containsExactly("POST [" + BODY + "]");
        return;
      }
      Throwable with = catchThrowable(() -> post(ours, url));
      // Before: one began, the retry declaring 13 bytes and writing none (the server waited for
      // them, and the caller got NoHttpResponseException after its 10 s).
      assertThat(late[0] == null ? 0 : late[0].requestsStarted())
          .as("requests the server began to read")
          .isZero();
      assertThat(with).isExactlyInstanceOf(without.getClass());
    } finally {
      if (late[0] != null) {
        late[0].close();
      }
    }
  }

  private static HttpClientBuilder builder(Reading reading, AtomicInteger runs) {
    HttpRequestInterceptor logging =
        (r, entity, c) -> {
          runs.incrementAndGet();
          if (r instanceof ClassicHttpRequest && entity != null) {
            ClassicHttpRequest e = (ClassicHttpRequest) r;
            if (reading == Reading.BUFFERED) {
              e.setEntity(new BufferedHttpEntity(e.getEntity()));
            } else {
              e.setEntity(
                  new ByteArrayEntity(
                      EntityUtils.toByteArray(e.getEntity()), ContentType.APPLICATION_JSON));
            }
          }
        };
    return HttpClients.custom().addRequestInterceptorFirst(logging);
  }

  private static String post(CloseableHttpClient client, String url) throws IOException {
    HttpPost post = new HttpPost(url);
    post.setEntity(
        new InputStreamEntity(
            new ByteArrayInputStream(BODY.getBytes(StandardCharsets.UTF_8)),
            BODY.length(),
            ContentType.APPLICATION_JSON));
    return client.execute(post, r -> r.getCode() + " " + EntityUtils.toString(r.getEntity()));
  }

  /**
   * An exec interceptor of the application's above our handler (added first after it) reads the
   * application's non-repeatable entity and passes down a repeatable copy; the connection is
   * refused. Our handler sees only the copy, never read, but a retry sends a copy of the
   * application's request, whose entity the interceptor spent: chunked here, an empty POST the
   * server answers 200. It is never retried: the refusal, as without our handler.
   */
  @Test
  void aBodyAnOuterExecInterceptorReadIsNeverResentAfterARefusedConnect() throws Exception {
    int port;
    try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      port = s.getLocalPort();
    }
    FakeTime time = new FakeTime();
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
    ExecChainHandler logging =
        (request, scope, chain) -> {
          if (request.getEntity() != null) {
            request.setEntity(
                new ByteArrayEntity(
                    EntityUtils.toByteArray(request.getEntity()), ContentType.APPLICATION_JSON));
          }
          return chain.proceed(request, scope);
        };
    String url = "http://127.0.0.1:" + port + "/v1/charges";
    try (CloseableHttpClient plain =
            HttpClients.custom().addExecInterceptorFirst("logging", logging).build();
        CloseableHttpClient ours =
            RetryExecHandler.addTo(HttpClients.custom(), engine)
                .addExecInterceptorFirst("logging", logging)
                .build()) {
      Throwable without = catchThrowable(() -> postChunked(plain, url));
      assertThat(without).isInstanceOf(HttpHostConnectException.class);

      Throwable with = catchThrowable(() -> postChunked(ours, url));
      // Before: the retry reached the server, an empty chunked POST answered 200.
      assertThat(late[0] == null ? java.util.List.of() : late[0].requests())
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

  private static String postChunked(CloseableHttpClient client, String url) throws IOException {
    HttpPost post = new HttpPost(url);
    post.setEntity(
        new InputStreamEntity(
            new ByteArrayInputStream(BODY.getBytes(StandardCharsets.UTF_8)),
            -1,
            ContentType.APPLICATION_JSON));
    return client.execute(post, r -> r.getCode() + " " + EntityUtils.toString(r.getEntity()));
  }
}
