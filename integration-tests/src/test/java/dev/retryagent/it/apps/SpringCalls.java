package dev.retryagent.it.apps;

import java.io.ByteArrayInputStream;
import org.springframework.core.io.InputStreamResource;
import org.springframework.http.HttpEntity;
import org.springframework.http.HttpHeaders;
import org.springframework.http.HttpMethod;
import org.springframework.http.ResponseEntity;
import org.springframework.http.client.BufferingClientHttpRequestFactory;
import org.springframework.http.client.SimpleClientHttpRequestFactory;
import org.springframework.web.client.HttpStatusCodeException;
import org.springframework.web.client.RestTemplate;

/**
 * Spring's {@code RestTemplate} on its default {@code SimpleClientHttpRequestFactory}: {@code
 * spring-buffered} wraps it in a {@code BufferingClientHttpRequestFactory} (the body's length is
 * known: fixed-length streaming), {@code spring-streaming} sends a stream of unknown length
 * (chunked).
 */
final class SpringCalls {
  private SpringCalls() {}

  static String[] call(UrlClientsApp.Request r) {
    SimpleClientHttpRequestFactory simple = new SimpleClientHttpRequestFactory();
    simple.setConnectTimeout(10_000);
    simple.setReadTimeout(20_000);
    boolean buffered = r.client().equals("spring-buffered");
    RestTemplate rest =
        new RestTemplate(buffered ? new BufferingClientHttpRequestFactory(simple) : simple);
    HttpHeaders headers = new HttpHeaders();
    for (String h : r.headers()) {
      String[] kv = h.split("=", 2);
      headers.add(kv[0], kv[1]);
    }
    Object body = null;
    if (r.body().length > 0) {
      body = buffered ? r.body() : new InputStreamResource(new ByteArrayInputStream(r.body()));
    }
    try {
      ResponseEntity<String> response =
          rest.exchange(
              r.uri(),
              HttpMethod.valueOf(r.method()),
              new HttpEntity<>(body, headers),
              String.class);
      return new String[] {
        String.valueOf(response.getStatusCode().value()), String.valueOf(response.getBody())
      };
    } catch (HttpStatusCodeException e) {
      return new String[] {String.valueOf(e.getStatusCode().value()), e.getResponseBodyAsString()};
    }
  }
}
