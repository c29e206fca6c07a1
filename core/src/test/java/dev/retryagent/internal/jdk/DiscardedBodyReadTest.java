package dev.retryagent.internal.jdk;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayInputStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpHeaders;
import java.net.http.HttpRequest;
import java.net.http.HttpRequest.BodyPublisher;
import java.net.http.HttpRequest.BodyPublishers;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Flow;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * How a retried response's body is asked of the JDK ({@link DiscardedBody#onSubscribe}): one buffer
 * at a time, within the give-back limit, only while the call may still end with it (a teed request
 * body whose copy may be found not whole, so that the application's handler then gets the rest as
 * it asks for it); all at once otherwise, as before that hand-over existed.
 */
class DiscardedBodyReadTest {
  private static final URI URL = URI.create("http://127.0.0.1:9/v1/files/7");

  @TempDir Path dir;

  @Test
  void aResponseToAFileBodiedRequestIsReadAllAtOnce() throws Exception {
    // Before: one buffer at a time until 8 KiB, though a file (read again from disk) is always
    // fixed for the retry and such a response is never handed over.
    Path file = Files.write(dir.resolve("body"), "abcd".getBytes(StandardCharsets.US_ASCII));
    assertThat(requests(BodyPublishers.ofFile(file))).containsExactly(Long.MAX_VALUE);
  }

  @Test
  void aResponseToAStreamedRequestIsReadOneBufferAtATime() {
    BodyPublisher stream =
        BodyPublishers.ofInputStream(
            () -> new ByteArrayInputStream("abcd".getBytes(StandardCharsets.US_ASCII)));
    assertThat(requests(stream)).containsExactly(1L);
  }

  /** What a retried response's body asks of the JDK as it is subscribed, for this request body. */
  private static List<Long> requests(BodyPublisher publisher) {
    JdkRequest<String> call = new JdkRequest<>(HttpRequest.newBuilder(URL).PUT(publisher).build());
    ReplayableBody body = ReplayableBody.of(publisher, 1 << 20, call);
    List<Long> requests = new CopyOnWriteArrayList<>();
    try (HeldGraces graces = HeldGraces.hold()) { // its grace never runs: nothing in the back
      DiscardedBody<String> discarded =
          new DiscardedBody<>(info(), HttpResponse.BodyHandlers.ofString(), null, 0, body, call);
      discarded.onSubscribe(
          new Flow.Subscription() {
            @Override
            public void request(long n) {
              requests.add(n);
            }

            @Override
            public void cancel() {}
          });
      discarded.onComplete();
      assertThat(graces.held()).isEqualTo(1);
    }
    return requests;
  }

  private static HttpResponse.ResponseInfo info() {
    return new HttpResponse.ResponseInfo() {
      @Override
      public int statusCode() {
        return 503;
      }

      @Override
      public HttpHeaders headers() {
        return HttpHeaders.of(Map.of(), (k, v) -> true);
      }

      @Override
      public HttpClient.Version version() {
        return HttpClient.Version.HTTP_1_1;
      }
    };
  }
}
