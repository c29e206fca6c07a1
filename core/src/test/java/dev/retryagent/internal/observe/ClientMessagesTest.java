package dev.retryagent.internal.observe;

import static org.assertj.core.api.Assertions.assertThat;

import com.sun.net.httpserver.HttpServer;
import dev.retryagent.config.PathMask;
import java.io.IOException;
import java.io.InputStream;
import java.net.HttpURLConnection;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.URL;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The text real clients put in the exceptions the agent writes (log lines, dead letters: both
 * through {@link Sanitizer#exception}), for requests and redirects that carry canary secrets: the
 * clients quote a URL they refused whole, blanks included, and the agent must write none of its
 * query, fragment, user-info, path parameters or masked segments.
 */
class ClientMessagesTest {
  private static final PathMask MASK = PathMask.of(List.of("tok_[a-z]+"));

  private HttpServer server;
  private String location;

  @BeforeEach
  void start() throws IOException {
    server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
    server.createContext(
        "/",
        x -> {
          if (x.getRequestURI().getPath().startsWith("/redirect")) {
            x.getResponseHeaders().add("Location", location);
            x.sendResponseHeaders(302, -1);
          } else {
            x.sendResponseHeaders(503, -1);
          }
          x.close();
        });
    server.start();
  }

  @AfterEach
  void stop() {
    server.stop(0);
  }

  private String base() {
    return "http://127.0.0.1:" + server.getAddress().getPort();
  }

  /** Every exception of the chain each client threw, as the agent writes it. */
  private List<String> written() throws Exception {
    URI uri = URI.create(base() + "/redirect");
    List<String> out = new ArrayList<>();
    HttpClient jdk = HttpClient.newBuilder().followRedirects(HttpClient.Redirect.NORMAL).build();
    collect(
        out,
        "java.net.http",
        () -> jdk.send(HttpRequest.newBuilder(uri).build(), HttpResponse.BodyHandlers.ofString()));
    try (org.apache.http.impl.client.CloseableHttpClient a4 =
        org.apache.http.impl.client.HttpClients.createDefault()) {
      collect(
          out,
          "Apache 4",
          () -> {
            a4.execute(new org.apache.http.client.methods.HttpGet(uri)).close();
            return null;
          });
    }
    try (org.apache.hc.client5.http.impl.classic.CloseableHttpClient a5 =
        org.apache.hc.client5.http.impl.classic.HttpClients.createDefault()) {
      collect(
          out,
          "Apache 5",
          () ->
              a5.execute(
                  new org.apache.hc.client5.http.classic.methods.HttpGet(uri), r -> r.getCode()));
    }
    return out;
  }

  private static void collect(List<String> out, String client, Callable<?> call) {
    try {
      call.call();
      out.add(client + ": no exception");
    } catch (Exception e) {
      for (Throwable t = e; t != null; t = t.getCause()) {
        out.add(client + ": " + Sanitizer.exception(t, true, null, MASK));
      }
    }
  }

  @Test
  void aRelativeRedirectTheClientRefusedLosesItsQueryFragmentAndMaskedSegments() throws Exception {
    location = "/r/my dir/tok_canary?sig=canaryq canaryq2#canaryf";

    List<String> written = written();

    assertThat(String.join("\n", written))
        .doesNotContain("canary")
        .contains("Illegal character in path at index 5: /r/my dir/<redacted>");
  }

  @Test
  void anAbsoluteRedirectWithABlankLosesItsPathParameterQueryAndMaskedSegments() throws Exception {
    location = "http://u:canarypass@h.example/r/my dir/tok_canary;jsessionid=canary s/x?q=canary q";

    List<String> written = written();

    assertThat(String.join("\n", written))
        .doesNotContain("canary")
        .contains("http://h.example/r/my dir/<redacted> /x");
  }

  @Test
  void aRedirectWithABlankInItsHostLosesItsMaskedSegmentsAndQuery() throws Exception {
    location = "http://bad host/tok_canary?sig=canaryq canaryq2";

    assertThat(String.join("\n", written())).doesNotContain("canary");
  }

  @Test
  void httpUrlConnectionsUrlInItsMessagesLosesUserInfoQueryFragmentAndMaskedSegments()
      throws Exception {
    URL url = new URL(base().replace("//", "//u:canarypass@") + "/p/tok_canary?k=canaryq#canaryf");
    List<String> out = new ArrayList<>();
    collect(
        out,
        "HttpURLConnection",
        () -> {
          HttpURLConnection c = (HttpURLConnection) url.openConnection();
          try (InputStream in = c.getInputStream()) {
            return in.readAllBytes();
          }
        });

    assertThat(String.join("\n", out))
        .doesNotContain("canary")
        .contains(
            "503 for URL: http://127.0.0.1:" + server.getAddress().getPort() + "/p/<redacted>");
  }
}
