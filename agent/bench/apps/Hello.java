/** A control application that never touches java.net.http; its last line as OneClient's. */
public class Hello {
  public static void main(String[] args) {
    System.out.println("hello");
    System.out.println("main-end " + System.currentTimeMillis());
  }
}
