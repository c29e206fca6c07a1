package dev.retryagent.it.apps;

import feign.Feign;
import feign.HeaderMap;
import feign.Param;
import feign.RequestLine;
import feign.Response;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Feign with its default client ({@code Client.Default}, on {@code HttpURLConnection}) and its
 * default retryer, as an application builds it.
 */
final class FeignCalls {
  private FeignCalls() {}

  interface Api {
    @RequestLine("GET {path}")
    Response get(
        @Param(value = "path", encoded = true) String path, @HeaderMap Map<String, Object> h);

    @RequestLine("POST {path}")
    Response post(
        @Param(value = "path", encoded = true) String path,
        @HeaderMap Map<String, Object> h,
        byte[] body);
  }

  static String[] call(UrlClientsApp.Request r) throws IOException {
    String base = r.uri().getScheme() + "://" + r.uri().getAuthority();
    Api api = Feign.builder().target(Api.class, base);
    Map<String, Object> headers = new LinkedHashMap<>();
    for (String h : r.headers()) {
      String[] kv = h.split("=", 2);
      headers.put(kv[0], kv[1]);
    }
    try (Response response =
        r.method().equals("GET")
            ? api.get(r.uri().getPath(), headers)
            : api.post(r.uri().getPath(), headers, r.body())) {
      String text = "";
      if (response.body() != null) {
        try (InputStream in = response.body().asInputStream()) {
          text = new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }
      }
      return new String[] {String.valueOf(response.status()), text};
    }
  }
}
