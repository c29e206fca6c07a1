package dev.retryagent.it.apps;

import com.sun.tools.attach.VirtualMachine;
import java.io.InputStream;
import java.net.HttpURLConnection;
import java.net.URL;

/**
 * Makes one {@code HttpURLConnection} call first (so the JDK's handler, connection and client
 * classes are loaded), then attaches the agent to itself, then makes a second call with a new
 * connection. Arguments: {@code AGENT_JAR URL}; needs {@code -Djdk.attach.allowAttachSelf=true}.
 * Prints {@code before.status=}, {@code after.status=} and {@code after.class=}.
 */
public final class UrlLateAttachApp {
  private UrlLateAttachApp() {}

  public static void main(String[] args) throws Exception {
    System.out.println("before.status=" + call(args[1], "before"));
    VirtualMachine vm = VirtualMachine.attach(String.valueOf(ProcessHandle.current().pid()));
    try {
      vm.loadAgent(args[0]);
    } finally {
      vm.detach();
    }
    System.out.println("after.status=" + call(args[1], "after"));
  }

  private static int call(String url, String name) throws Exception {
    HttpURLConnection c = (HttpURLConnection) new URL(url).openConnection();
    int status = c.getResponseCode();
    try (InputStream in = status >= 400 ? c.getErrorStream() : c.getInputStream()) {
      if (in != null) {
        in.readAllBytes();
      }
    }
    System.out.println(name + ".class=" + c.getClass().getName());
    return status;
  }
}
