package dev.retryagent.it.apps;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.HttpURLConnection;
import java.net.URI;
import java.net.URL;
import java.net.URLConnection;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Arrays;

/**
 * An application with no retry code that makes the calls it is told to through {@code
 * HttpURLConnection}, or through what sits on it (Spring's {@code RestTemplate}, Feign, Jersey).
 * Run with the agent, or with {@code --by-hand CONFIG} to wire the library itself ({@code
 * RetryingUrlConnections}; the {@code url*} clients only).
 *
 * <p>Arguments: {@code [--by-hand CONFIG] [--mode MODE] CALL...}; each call is {@code
 * NAME|CLIENT|METHOD|URL|HEADERS|BODY}: headers as {@code Name=value;Name2=value2}, body as text or
 * {@code bytes:N} (N bytes), both may be empty. Clients: {@code url} (body buffered by the JDK),
 * {@code url-fixed} and {@code url-chunked} (the streaming modes), {@code url-connect} ({@code
 * connect()} first, as Spring does), {@code url-turn} (no method set: the JDK turns GET into POST),
 * {@code url-default-timeouts} (no timeout set: the JDK's defaults, {@code
 * sun.net.client.default...}), {@code spring-buffered}, {@code spring-streaming}, {@code feign},
 * {@code jersey}, {@code jersey-chunked}. For each call it prints {@code NAME.status=}, {@code
 * NAME.body=}, or {@code NAME.error=} (exception class), {@code NAME.cause=} (innermost cause) and
 * {@code NAME.message=}; then {@code NAME.class=} (the connection's class, {@code url*}) and {@code
 * NAME.millis=}.
 */
public final class UrlClientsApp {
  private static Object byHandEngine;

  private UrlClientsApp() {}

  public static void main(String[] args) throws Exception {
    int i = 0;
    Path byHand = null;
    String mode = null;
    while (i < args.length && args[i].startsWith("--")) {
      if (args[i].equals("--by-hand")) {
        byHand = Path.of(args[++i]);
      } else if (args[i].equals("--mode")) {
        mode = args[++i];
      }
      i++;
    }
    if (byHand != null) {
      // In its own class: with the agent, the library is not on the class path at all.
      byHandEngine = UrlByHandWiring.engine(byHand, mode);
    }
    for (; i < args.length; i++) {
      call(args[i].split("\\|", -1));
    }
  }

  /** A request as the row describes it. */
  record Request(
      String name, String client, String method, URI uri, String[] headers, byte[] body) {
    String header(String name) {
      for (String h : headers) {
        String[] kv = h.split("=", 2);
        if (kv[0].equalsIgnoreCase(name)) {
          return kv[1];
        }
      }
      return null;
    }
  }

  private static void call(String[] spec) {
    String body = spec[5];
    byte[] bytes =
        body.startsWith("bytes:")
            ? filled(Integer.parseInt(body.substring("bytes:".length())))
            : body.getBytes(StandardCharsets.UTF_8);
    Request r =
        new Request(
            spec[0],
            spec[1],
            spec[2],
            URI.create(spec[3]),
            spec[4].isEmpty() ? new String[0] : spec[4].split(";"),
            bytes);
    long start = System.nanoTime();
    try {
      String[] result;
      if (r.client().startsWith("url")) {
        result = viaUrlConnection(r);
      } else if (r.client().startsWith("spring")) {
        result = SpringCalls.call(r);
      } else if (r.client().equals("feign")) {
        result = FeignCalls.call(r);
      } else {
        result = JerseyCalls.call(r);
      }
      print(r.name() + ".status", result[0]);
      print(r.name() + ".body", result[1]);
      if (result.length > 2) {
        print(r.name() + ".class", result[2]);
      }
    } catch (Exception e) {
      Throwable root = e;
      while (root.getCause() != null && root.getCause() != root) {
        root = root.getCause();
      }
      print(r.name() + ".error", e.getClass().getName());
      print(r.name() + ".cause", root.getClass().getName());
      print(r.name() + ".message", String.valueOf(root.getMessage()));
    }
    print(r.name() + ".millis", String.valueOf((System.nanoTime() - start) / 1_000_000));
  }

  private static void print(String key, String value) {
    System.out.println(key + "=" + value.replace('\n', ' '));
  }

  private static byte[] filled(int n) {
    byte[] b = new byte[n];
    Arrays.fill(b, (byte) 'x');
    return b;
  }

  /** Plain {@code HttpURLConnection}, as legacy code writes it. */
  private static String[] viaUrlConnection(Request r) throws IOException {
    URL url = r.uri().toURL();
    URLConnection opened =
        byHandEngine == null ? url.openConnection() : UrlByHandWiring.open(url, byHandEngine);
    HttpURLConnection c = (HttpURLConnection) opened;
    if (!r.client().equals("url-default-timeouts")) {
      c.setConnectTimeout(10_000);
      c.setReadTimeout(20_000);
    }
    if (!r.client().equals("url-turn")) {
      c.setRequestMethod(r.method());
    }
    for (String h : r.headers()) {
      String[] kv = h.split("=", 2);
      c.setRequestProperty(kv[0], kv[1]);
    }
    if (r.body().length > 0) {
      c.setDoOutput(true);
      if (r.client().equals("url-fixed")) {
        c.setFixedLengthStreamingMode(r.body().length);
      } else if (r.client().equals("url-chunked")) {
        c.setChunkedStreamingMode(1024);
      }
      if (r.client().equals("url-connect")) {
        c.connect();
      }
      try (OutputStream out = c.getOutputStream()) {
        out.write(r.body());
      }
    } else if (r.client().equals("url-connect")) {
      c.connect();
    }
    int status = c.getResponseCode();
    InputStream in = status >= 400 ? c.getErrorStream() : c.getInputStream();
    String text = in == null ? "" : new String(in.readAllBytes(), StandardCharsets.UTF_8);
    if (in != null) {
      in.close();
    }
    return new String[] {String.valueOf(status), text, c.getClass().getName()};
  }
}
