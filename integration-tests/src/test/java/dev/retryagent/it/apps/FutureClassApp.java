package dev.retryagent.it.apps;

import java.io.ByteArrayOutputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;

/**
 * An application that meets a class file from the future: it defines a class named like a class the
 * agent rewrites ({@code okhttp3.OkHttpClient$Builder}) whose class file version (200) no JVM or
 * rewriter of today reads, then makes one {@code java.net.http} call to {@code args[0]}. Prints
 * {@code defined=} (what defining the class gave) and {@code status=}, then {@code done=true}.
 */
public final class FutureClassApp {
  private FutureClassApp() {}

  public static void main(String[] args) throws Exception {
    String name = "okhttp3.OkHttpClient$Builder";
    byte[] bytes = emptyClass(name.replace('.', '/'), 200);
    Definer definer = new Definer(FutureClassApp.class.getClassLoader());
    try {
      System.out.println("defined=" + definer.define(name, bytes).getName());
    } catch (LinkageError e) {
      System.out.println("defined=" + e.getClass().getName() + ": " + e.getMessage());
    }
    HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
    HttpResponse<String> r =
        client.send(
            HttpRequest.newBuilder(URI.create(args[0])).timeout(Duration.ofSeconds(20)).build(),
            HttpResponse.BodyHandlers.ofString());
    System.out.println("status=" + r.statusCode());
    System.out.println("done=true");
  }

  /** A public class with no members, of class file major version {@code major}. */
  static byte[] emptyClass(String internalName, int major) throws IOException {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    DataOutputStream out = new DataOutputStream(bytes);
    out.writeInt(0xCAFEBABE);
    out.writeShort(0); // minor
    out.writeShort(major);
    out.writeShort(5); // constant pool count: 4 entries
    out.writeByte(7); // #1 Class #2
    out.writeShort(2);
    out.writeByte(1); // #2 Utf8
    out.writeUTF(internalName);
    out.writeByte(7); // #3 Class #4
    out.writeShort(4);
    out.writeByte(1); // #4 Utf8
    out.writeUTF("java/lang/Object");
    out.writeShort(0x0021); // public super
    out.writeShort(1); // this
    out.writeShort(3); // super
    out.writeShort(0); // interfaces
    out.writeShort(0); // fields
    out.writeShort(0); // methods
    out.writeShort(0); // attributes
    return bytes.toByteArray();
  }

  private static final class Definer extends ClassLoader {
    Definer(ClassLoader parent) {
      super(parent);
    }

    Class<?> define(String name, byte[] b) {
      return defineClass(name, b, 0, b.length);
    }
  }
}
