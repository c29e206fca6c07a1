/**
 * The startup benchmark's application: builds one HttpClient and exits. Its last line is the wall
 * clock as {@code main} returns (startup.sh: the start-up without the JVM's exit, which may wait
 * up to 300 ms for the client's selector thread, in native code).
 */
public class OneClient {
  public static void main(String[] args) {
    System.out.println(java.net.http.HttpClient.newHttpClient() != null);
    System.out.println("main-end " + System.currentTimeMillis());
  }
}
