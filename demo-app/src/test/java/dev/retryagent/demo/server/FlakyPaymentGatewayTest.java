package dev.retryagent.demo.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.retryagent.demo.json.Json;
import java.util.HashMap;
import java.util.Map;
import okhttp3.MediaType;
import okhttp3.OkHttpClient;
import okhttp3.Request;
import okhttp3.RequestBody;
import okhttp3.Response;
import org.junit.jupiter.api.Test;

class FlakyPaymentGatewayTest {
  private static final String ORDER =
      "{\"order\":\"order-1\",\"amount_cents\":100,\"currency\":\"EUR\"}";

  private static ServerReply charge(FlakyPaymentGateway g, String key, String body)
      throws InterruptedException {
    Map<String, String> headers = new HashMap<>();
    if (key != null) {
      headers.put("Idempotency-Key", key);
    }
    return g.handle(
        new ServerRequest("POST", FlakyPaymentGateway.CHARGES, headers, body.getBytes()));
  }

  private static String id(ServerReply r) {
    return Json.field(new String(r.body()), "id");
  }

  @Test
  void fails503TwiceThenSucceedsWithTheChargeTheSecondAttemptCommitted() throws Exception {
    FlakyPaymentGateway g = new FlakyPaymentGateway(2);

    ServerReply first = charge(g, "key-1", ORDER);
    int afterFirst = g.chargesCreated();
    ServerReply second = charge(g, "key-1", ORDER);
    int afterSecond = g.chargesCreated();
    ServerReply third = charge(g, "key-1", ORDER);

    assertThat(first.status()).isEqualTo(503);
    assertThat(afterFirst).isZero();
    assertThat(second.status()).isEqualTo(503);
    assertThat(afterSecond).isEqualTo(1); // committed, answer lost
    assertThat(third.status()).isEqualTo(200);
    assertThat(third.headers()).containsEntry("Idempotent-Replayed", "true");
    assertThat(id(third)).isEqualTo("ch_000001");
    assertThat(g.chargesCreated()).isEqualTo(1);
  }

  @Test
  void aRepeatedKeyReturnsTheStoredChargeAndNeverASecondOne() throws Exception {
    FlakyPaymentGateway g = new FlakyPaymentGateway(0);

    ServerReply first = charge(g, "key-1", ORDER);
    ServerReply[] repeats = new ServerReply[5];
    for (int i = 0; i < repeats.length; i++) {
      repeats[i] = charge(g, "key-1", ORDER);
    }
    ServerReply otherKey = charge(g, "key-2", ORDER);

    assertThat(first.status()).isEqualTo(200);
    assertThat(first.headers()).doesNotContainKey("Idempotent-Replayed");
    for (ServerReply r : repeats) {
      assertThat(r.status()).isEqualTo(200);
      assertThat(id(r)).isEqualTo(id(first));
    }
    assertThat(id(otherKey)).isNotEqualTo(id(first));
    assertThat(g.chargesCreated()).isEqualTo(2);
    assertThat(g.requests()).isEqualTo(7);
  }

  @Test
  void withoutAKeyARepeatedRequestChargesTwice() throws Exception {
    FlakyPaymentGateway g = new FlakyPaymentGateway(2);

    assertThat(charge(g, null, ORDER).status()).isEqualTo(503);
    assertThat(charge(g, null, ORDER).status()).isEqualTo(503);
    assertThat(charge(g, null, ORDER).status()).isEqualTo(200);

    assertThat(g.chargesCreated()).isEqualTo(2); // why the demo sends a key
  }

  @Test
  void refusesBadRequests() throws Exception {
    FlakyPaymentGateway g = new FlakyPaymentGateway(0);

    assertThat(charge(g, "k", "{\"order\":\"o\"}").status()).isEqualTo(400);
    assertThat(charge(g, "k", "{\"order\":\"o\",\"amount_cents\":-5}").status()).isEqualTo(400);
    assertThat(
            g.handle(new ServerRequest("GET", FlakyPaymentGateway.CHARGES, Map.of(), new byte[0]))
                .status())
        .isEqualTo(405);
    assertThat(g.handle(new ServerRequest("POST", "/v1/refunds", Map.of(), new byte[0])).status())
        .isEqualTo(404);
    assertThat(g.chargesCreated()).isZero();
    assertThatThrownBy(() -> new FlakyPaymentGateway(-1)).hasMessageContaining("failFirst");
  }

  @Test
  void servesOkHttpOverLoopback() throws Exception {
    FlakyPaymentGateway g = new FlakyPaymentGateway(2);
    OkHttpClient http = new OkHttpClient();
    try (MiniHttpServer server = MiniHttpServer.start("gateway-test", g)) {
      int[] codes = new int[3];
      for (int i = 0; i < 3; i++) {
        Request request =
            new Request.Builder()
                .url(server.baseUri() + FlakyPaymentGateway.CHARGES)
                .header("Idempotency-Key", "order-1")
                .post(RequestBody.create(ORDER, MediaType.get("application/json")))
                .build();
        try (Response r = http.newCall(request).execute()) {
          codes[i] = r.code();
        }
      }

      assertThat(codes).containsExactly(503, 503, 200);
      assertThat(g.requests()).isEqualTo(3); // OkHttp did not retry the 503s by itself
      assertThat(g.chargesCreated()).isEqualTo(1);
    } finally {
      http.connectionPool().evictAll();
    }
  }
}
