package dev.retryagent.it.apps;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.Optional;
import java.util.TreeMap;

/**
 * An application that looks at {@code response.request()} of its {@code java.net.http} calls, as
 * one that logs it or sends it again does.
 *
 * <p>Arguments: {@code BASE_URL PATH...}. For each path, through {@code send} and {@code
 * sendAsync}, a POST with a header of its own, an idempotency key and a body; prints {@code
 * WAY.PATH.status=}, {@code WAY.PATH.request=} (what {@code response.request()} shows: method, URI
 * with {@code BASE_URL} written {@code BASE}, headers, timeout, version, expect-continue, whether
 * its body publisher is the application's own) and {@code WAY.PATH.previous=} (the same of {@code
 * previousResponse()}'s request, a redirect's; {@code none}). The same lines with and without the
 * agent are the point.
 */
public final class ResponseRequestApp {
  private ResponseRequestApp() {}

  public static void main(String[] args) throws Exception {
    String base = args[0];
    HttpClient client =
        HttpClient.newBuilder()
            .connectTimeout(Duration.ofSeconds(10))
            .version(HttpClient.Version.HTTP_1_1)
            .followRedirects(HttpClient.Redirect.NORMAL)
            .build();
    for (String way : new String[] {"send", "async"}) {
      for (int i = 1; i < args.length; i++) {
        String path = args[i];
        HttpRequest.BodyPublisher body = HttpRequest.BodyPublishers.ofString("{\"n\":1}");
        HttpRequest request =
            HttpRequest.newBuilder(URI.create(base + path + "?way=" + way))
                .timeout(Duration.ofSeconds(20))
                .header("X-App", "mine")
                .header("Idempotency-Key", way + path)
                .POST(body)
                .build();
        HttpResponse<String> response =
            way.equals("send")
                ? client.send(request, HttpResponse.BodyHandlers.ofString())
                : client.sendAsync(request, HttpResponse.BodyHandlers.ofString()).join();
        String key = way + "." + path;
        System.out.println(key + ".status=" + response.statusCode());
        System.out.println(key + ".request=" + describe(response.request(), base, body));
        Optional<HttpResponse<String>> previous = response.previousResponse();
        System.out.println(
            key
                + ".previous="
                + previous.map(p -> describe(p.request(), base, body)).orElse("none"));
      }
    }
  }

  private static String describe(HttpRequest r, String base, HttpRequest.BodyPublisher body) {
    return r.method()
        + " "
        + r.uri().toString().replace(base, "BASE")
        + " headers="
        + new TreeMap<>(r.headers().map())
        + " timeout="
        + r.timeout()
        + " version="
        + r.version()
        + " expectContinue="
        + r.expectContinue()
        + " applicationsPublisher="
        + r.bodyPublisher().map(p -> p == body);
  }
}
