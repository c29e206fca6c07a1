import okhttp3.OkHttpClient;

/** Builds one OkHttpClient and exits: the agent's hook runs at the builder's constructor. */
public final class OkHttpOneClient {
  public static void main(String[] args) {
    OkHttpClient client = new OkHttpClient();
    System.out.println(client.interceptors().size());
  }
}
