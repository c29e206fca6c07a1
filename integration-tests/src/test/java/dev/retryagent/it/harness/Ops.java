package dev.retryagent.it.harness;

import dev.retryagent.it.apps.OpsApp;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;

/** Helpers of the operations tests: {@link OpsApp} started with the agent, its commands, files. */
public final class Ops {
  /** Settings that make a forked agent quick to observe: exporters at once, reload polls often. */
  public static final String[] FAST_AGENT = {
    "-Dretryagent.exporters.delayMillis=0", "-Dretryagent.reload.pollMillis=50"
  };

  private Ops() {}

  /** {@link OpsApp} with the agent reading {@code config}, started and ready. */
  public static ForkedJvm.Running start(Path jdk, Path config, String... jvmArgs) {
    ForkedJvm.Running app =
        ForkedJvm.builder(jdk)
            .agentArgs("config=" + config)
            .jvmArgs(FAST_AGENT)
            .jvmArgs(jvmArgs)
            .mainClass(OpsApp.class)
            .timeout(Duration.ofSeconds(120))
            .start();
    app.awaitValue("ready");
    return app;
  }

  /** Tells {@link OpsApp} to make a call with {@code send} and waits until it ended. */
  public static void call(
      ForkedJvm.Running app, String name, String method, URI uri, String headers, String body) {
    app.send("call " + String.join("|", name, method, uri.toString(), headers, body));
    app.awaitValue(name + ".done");
  }

  /** A GET without headers. */
  public static void get(ForkedJvm.Running app, String name, URI uri) {
    call(app, name, "GET", uri, "", "");
  }

  /** The live threads of {@link OpsApp}, comma-separated. */
  public static String threads(ForkedJvm.Running app, String name) {
    app.send("threads " + name);
    return app.awaitValue(name + ".threads");
  }

  /** Writes {@code yaml} to {@code file} in place, the way an editor or a redirect does. */
  public static Path write(Path file, String yaml) {
    try {
      return Files.writeString(file, yaml);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /**
   * A loopback port nothing listens on now (another process could take it before use: rare), and
   * never one this JVM handed out before: two taken before either is bound could come out equal.
   */
  public static int freePort() {
    synchronized (HANDED_OUT) {
      while (true) {
        try (ServerSocket s = new ServerSocket()) {
          s.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
          if (HANDED_OUT.add(s.getLocalPort())) {
            return s.getLocalPort();
          }
        } catch (IOException e) {
          throw new UncheckedIOException(e);
        }
      }
    }
  }

  private static final java.util.Set<Integer> HANDED_OUT = new java.util.HashSet<>();

  /**
   * {@code GET http://127.0.0.1:PORT/metrics} from the test JVM: the Prometheus text, or null when
   * nothing answers there.
   */
  public static String scrape(int port) {
    try {
      HttpResponse<String> r =
          HttpClient.newHttpClient()
              .send(
                  HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/metrics"))
                      .timeout(Duration.ofSeconds(5))
                      .build(),
                  HttpResponse.BodyHandlers.ofString());
      return r.statusCode() == 200 ? r.body() : null;
    } catch (IOException e) {
      return null;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }
}
