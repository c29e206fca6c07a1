/** The startup benchmark's application: builds one HttpClient and exits. */
public class OneClient {
  public static void main(String[] args) {
    System.out.println(java.net.http.HttpClient.newHttpClient() != null);
  }
}
