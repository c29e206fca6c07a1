package dev.retryagent.demo;

import dev.retryagent.demo.json.Json;
import java.io.IOException;
import okhttp3.HttpUrl;
import okhttp3.MediaType;
import okhttp3.OkHttpClient;
import okhttp3.Request;
import okhttp3.RequestBody;
import okhttp3.Response;
import okhttp3.ResponseBody;

/**
 * The service's billing call, over OkHttp: charge one order, once, with an {@code Idempotency-Key}
 * derived from the order so that the gateway can recognise a repeat. No retry.
 */
final class PaymentClient {
  private static final MediaType JSON = MediaType.get("application/json");

  private final OkHttpClient http;
  private final HttpUrl base;

  PaymentClient(OkHttpClient http, HttpUrl base) {
    this.http = http;
    this.base = base;
  }

  /** Charges the order and returns the charge id. */
  String charge(String order, long amountCents) throws IOException, ProviderException {
    String body =
        "{\"order\":"
            + Json.quote(order)
            + ",\"amount_cents\":"
            + amountCents
            + ",\"currency\":\"EUR\"}";
    Request request =
        new Request.Builder()
            .url(base.newBuilder().encodedPath("/v1/charges").build())
            .header("Idempotency-Key", "charge-" + order)
            .post(RequestBody.create(body, JSON))
            .build();
    try (Response response = http.newCall(request).execute()) {
      ResponseBody rb = response.body();
      String text = rb == null ? "" : rb.string();
      if (!response.isSuccessful()) {
        throw new ProviderException("charge", response.code(), "");
      }
      return Json.field(text, "id");
    }
  }
}
