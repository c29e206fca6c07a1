import com.sun.net.httpserver.HttpServer;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import okhttp3.OkHttpClient;
import okhttp3.Request;
import okhttp3.Response;

/**
 * Builds one OkHttpClient, makes one GET (execute) to a loopback server in the same process that
 * answers 200, and exits: with the agent, the first call also builds the retry engine. Prints how
 * long building the client and making the first call took, in process.
 */
public final class OkHttpOneCall {
  public static void main(String[] args) throws Exception {
    HttpServer server =
        HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
    server.createContext(
        "/",
        exchange -> {
          byte[] body = "ok".getBytes();
          exchange.sendResponseHeaders(200, body.length);
          try (OutputStream out = exchange.getResponseBody()) {
            out.write(body);
          }
        });
    server.start();
    long t0 = System.nanoTime();
    OkHttpClient client = new OkHttpClient();
    long t1 = System.nanoTime();
    String url = "http://127.0.0.1:" + server.getAddress().getPort() + "/";
    try (Response r = client.newCall(new Request.Builder().url(url).build()).execute()) {
      r.body().string();
    }
    long t2 = System.nanoTime();
    // in-process split, printed for okhttp-startup.sh --split
    System.out.println(
        "client-ms=" + (t1 - t0) / 1_000_000 + " first-call-ms=" + (t2 - t1) / 1_000_000);
    server.stop(0);
    client.dispatcher().executorService().shutdown();
    client.connectionPool().evictAll();
    System.exit(0);
  }
}
