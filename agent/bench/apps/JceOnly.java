/**
 * Never opens a URL, but uses JCE, whose start-up makes an {@code http:} URL object: the JDK loads
 * {@code sun.net.www.protocol.http.Handler}, which the HttpURLConnection hook patches.
 */
public final class JceOnly {
  private JceOnly() {}

  public static void main(String[] args) throws Exception {
    javax.crypto.Cipher.getInstance("AES/GCM/NoPadding");
    System.out.println("cipher ready");
  }
}
