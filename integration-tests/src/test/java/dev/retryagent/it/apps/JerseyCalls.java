package dev.retryagent.it.apps;

import jakarta.ws.rs.client.Client;
import jakarta.ws.rs.client.ClientBuilder;
import jakarta.ws.rs.client.Entity;
import jakarta.ws.rs.client.Invocation;
import jakarta.ws.rs.core.MediaType;
import jakarta.ws.rs.core.Response;
import org.glassfish.jersey.client.ClientProperties;
import org.glassfish.jersey.client.RequestEntityProcessing;

/**
 * A Jersey client with its default connector ({@code HttpUrlConnector}); {@code jersey-chunked}
 * asks for chunked request bodies ({@code ClientProperties.REQUEST_ENTITY_PROCESSING}).
 */
final class JerseyCalls {
  private JerseyCalls() {}

  static String[] call(UrlClientsApp.Request r) {
    Client client = ClientBuilder.newClient();
    try {
      client.property(ClientProperties.CONNECT_TIMEOUT, 10_000);
      client.property(ClientProperties.READ_TIMEOUT, 20_000);
      if (r.client().equals("jersey-chunked")) {
        client.property(
            ClientProperties.REQUEST_ENTITY_PROCESSING, RequestEntityProcessing.CHUNKED);
      }
      Invocation.Builder b = client.target(r.uri()).request();
      for (String h : r.headers()) {
        String[] kv = h.split("=", 2);
        b.header(kv[0], kv[1]);
      }
      try (Response response =
          r.body().length == 0
              ? b.method(r.method())
              : b.method(r.method(), Entity.entity(r.body(), MediaType.APPLICATION_OCTET_STREAM))) {
        return new String[] {
          String.valueOf(response.getStatus()), response.readEntity(String.class)
        };
      }
    } finally {
      client.close();
    }
  }
}
