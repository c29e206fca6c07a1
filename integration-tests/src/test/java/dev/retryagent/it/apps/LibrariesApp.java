package dev.retryagent.it.apps;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.Map;
import net.bytebuddy.ByteBuddy;
import net.bytebuddy.ClassFileVersion;
import net.bytebuddy.dynamic.loading.ClassLoadingStrategy;
import org.yaml.snakeyaml.Yaml;

/**
 * An application that carries its own (old) Byte Buddy and SnakeYAML, uses both, and makes one HTTP
 * call. Prints where each library was loaded from, what it produced, and the call's status.
 *
 * <p>Argument: the URL to GET.
 */
public final class LibrariesApp {
  private LibrariesApp() {}

  public static void main(String[] args) throws Exception {
    Class<?> generated =
        new ByteBuddy(ClassFileVersion.JAVA_V8)
            .subclass(Object.class)
            .name("dev.retryagent.it.apps.Generated")
            .make()
            .load(LibrariesApp.class.getClassLoader(), ClassLoadingStrategy.Default.WRAPPER)
            .getLoaded();
    System.out.println("bytebuddy.from=" + where(ByteBuddy.class));
    System.out.println("bytebuddy.made=" + generated.getName());
    System.out.println(
        "bytebuddy.nexus.property=" + System.getProperty("net.bytebuddy.nexus.disabled"));

    Map<String, Object> yaml = new Yaml().load("retries: 3\nname: app");
    System.out.println("snakeyaml.from=" + where(Yaml.class));
    System.out.println("snakeyaml.read=" + yaml);

    HttpResponse<String> response =
        HttpClient.newHttpClient()
            .send(
                HttpRequest.newBuilder(URI.create(args[0])).build(),
                HttpResponse.BodyHandlers.ofString());
    System.out.println("status=" + response.statusCode());
    System.out.println("intercepted=" + AgentProbe.interceptedCalls());
  }

  private static String where(Class<?> c) {
    return c.getProtectionDomain().getCodeSource().getLocation().getPath();
  }
}
