import java.io.InputStream;
import java.io.OutputStream;
import java.net.HttpURLConnection;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URL;
import java.nio.charset.StandardCharsets;

/** One GET through HttpURLConnection to a loopback socket answering 200, then exit. */
public final class OneUrl {
  private OneUrl() {}

  public static void main(String[] args) throws Exception {
    ServerSocket server = new ServerSocket(0, 1, InetAddress.getLoopbackAddress());
    Thread t =
        new Thread(
            () -> {
              try (Socket s = server.accept()) {
                InputStream in = s.getInputStream();
                byte[] buf = new byte[4096];
                int n = in.read(buf); // the request head fits
                OutputStream out = s.getOutputStream();
                out.write(
                    "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok"
                        .getBytes(StandardCharsets.ISO_8859_1));
                out.flush();
              } catch (Exception e) {
                e.printStackTrace();
              }
            });
    t.start();
    HttpURLConnection c =
        (HttpURLConnection)
            new URL("http://127.0.0.1:" + server.getLocalPort() + "/").openConnection();
    System.out.println(c.getResponseCode());
    t.join();
    server.close();
  }
}
