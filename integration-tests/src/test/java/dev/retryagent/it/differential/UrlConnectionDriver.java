package dev.retryagent.it.differential;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.HttpURLConnection;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.EnumSet;
import java.util.List;
import java.util.Set;

/**
 * {@code HttpURLConnection} as legacy code uses it: a new connection per call from {@code
 * URL.openConnection()}, the JDK's default settings but the action's timeouts, the body written
 * through {@code getOutputStream()} (buffered by the JDK; streamed with a fixed length when it
 * expects {@code 100 Continue}). Two APIs: {@code getResponseCode} (then the body from the input or
 * error stream) and {@code getInputStream} first (which throws for a status of 400 and above: the
 * JDK's own exception reaches the application). The application gives up on a call with {@code
 * disconnect()} from another thread; before the call that changes nothing, with or without the
 * agent.
 */
public final class UrlConnectionDriver implements Driver {
  @Override
  public List<Variant> variants() {
    return List.of(new Variant("url-connection", List.of()));
  }

  @Override
  public List<String> apis() {
    return List.of("getResponseCode", "getInputStream");
  }

  @Override
  public Set<Feature> features(String api) {
    return EnumSet.of(
        Feature.CONNECT_TIMEOUT,
        Feature.READ_TIMEOUT,
        Feature.CANCEL,
        Feature.CANCEL_BEFORE,
        Feature.EXPECT_CONTINUE,
        Feature.FAULT_MATRIX);
  }

  @Override
  public Exchange prepare(String api, Action a, URI server) throws IOException {
    HttpURLConnection c = (HttpURLConnection) server.resolve(a.path()).toURL().openConnection();
    if (a.connectTimeout() > 0) {
      c.setConnectTimeout(a.connectTimeout());
    }
    if (a.readTimeout() > 0) {
      c.setReadTimeout(a.readTimeout());
    }
    c.setRequestMethod(a.method());
    for (String h : a.headers()) {
      String[] nv = h.split(": ", 2);
      c.setRequestProperty(nv[0], nv[1]);
    }
    byte[] body =
        a.bodyBytes() > 0 ? new byte[a.bodyBytes()] : a.body().getBytes(StandardCharsets.UTF_8);
    return new Exchange() {
      @Override
      public void start(Delivery delivery) throws Exception {
        if (body.length > 0) {
          c.setDoOutput(true);
          if (a.expectsContinue()) {
            // The JDK waits for 100 Continue only in a streaming mode.
            c.setRequestProperty("Expect", "100-continue");
            c.setFixedLengthStreamingMode(body.length);
          }
          try (OutputStream out = c.getOutputStream()) {
            out.write(body);
          }
        }
        if (api.equals("getInputStream")) {
          drain(c.getInputStream());
          delivery.status(c.getResponseCode());
        } else {
          int status = c.getResponseCode();
          drain(status >= 400 ? c.getErrorStream() : c.getInputStream());
          delivery.status(status);
        }
      }

      @Override
      public void cancel(Action.Cancel how) {
        c.disconnect();
      }

      /** A new connection to the same server: the JDK's keep-alive cache has the pool's part. */
      @Override
      public String followUp() throws Exception {
        HttpURLConnection f =
            (HttpURLConnection)
                server
                    .resolve(dev.retryagent.it.harness.CountingServer.FOLLOW_UP_PATH)
                    .toURL()
                    .openConnection();
        f.setConnectTimeout(2_000);
        f.setReadTimeout(2_000);
        for (String h : a.headers()) {
          String[] nv = h.split(": ", 2);
          f.setRequestProperty(nv[0], nv[1]);
        }
        int status = f.getResponseCode();
        drain(status >= 400 ? f.getErrorStream() : f.getInputStream());
        return "status " + status;
      }
    };
  }

  private static void drain(InputStream in) throws IOException {
    if (in != null) {
      try (in) {
        in.readAllBytes();
      }
    }
  }
}
