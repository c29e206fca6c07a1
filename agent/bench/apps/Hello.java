/** A control application that never touches java.net.http. */
public class Hello {
  public static void main(String[] args) {
    System.out.println("hello");
  }
}
