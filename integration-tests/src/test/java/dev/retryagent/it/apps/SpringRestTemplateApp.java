package dev.retryagent.it.apps;

import java.util.List;
import org.springframework.http.HttpEntity;
import org.springframework.http.HttpHeaders;
import org.springframework.http.HttpMethod;
import org.springframework.http.ResponseEntity;
import org.springframework.http.client.HttpComponentsClientHttpRequestFactory;
import org.springframework.web.client.HttpStatusCodeException;
import org.springframework.web.client.RestTemplate;

/**
 * An application with no retry code that calls through Spring's {@code RestTemplate} on {@code
 * HttpComponentsClientHttpRequestFactory} (Apache HttpClient 5, made by the factory itself with
 * {@code HttpClients.createSystem()}), as most Spring services without Spring Boot do.
 *
 * <p>Arguments: calls {@code SCENARIO.NAME|exchange|METHOD|URL|HEADERS|BODY}. Prints {@code
 * NAME.status=} and {@code NAME.body=} (an error status, which {@code RestTemplate} throws as an
 * {@code HttpStatusCodeException}, included), or {@code NAME.error=}, then {@code NAME.millis=}; at
 * the end {@code factory.client=}, the class of the factory's HttpClient.
 */
public final class SpringRestTemplateApp {
  private SpringRestTemplateApp() {}

  public static void main(String[] args) throws Exception {
    HttpComponentsClientHttpRequestFactory factory = new HttpComponentsClientHttpRequestFactory();
    RestTemplate rest = new RestTemplate(factory);
    ScenarioCalls.run(
        List.of(args),
        (spec, out) -> {
          HttpHeaders headers = new HttpHeaders();
          for (String[] h : ScenarioCalls.headers(spec[4])) {
            headers.add(h[0], h[1]);
          }
          HttpEntity<String> entity = new HttpEntity<>(spec[5].isEmpty() ? null : spec[5], headers);
          try {
            ResponseEntity<String> r =
                rest.exchange(spec[3], HttpMethod.valueOf(spec[2]), entity, String.class);
            ScenarioCalls.line(out, spec[0] + ".status", r.getStatusCode().value());
            ScenarioCalls.line(out, spec[0] + ".body", r.getBody() == null ? "" : r.getBody());
          } catch (HttpStatusCodeException e) {
            ScenarioCalls.line(out, spec[0] + ".status", e.getStatusCode().value());
            ScenarioCalls.line(out, spec[0] + ".body", e.getResponseBodyAsString());
          }
        });
    System.out.println("factory.client=" + factory.getHttpClient().getClass().getName());
    factory.destroy();
  }
}
