package dev.retryagent.it.apps;

import com.sun.tools.attach.VirtualMachine;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;

/**
 * Creates its HttpClient first (so the JDK's client classes are already loaded), then attaches the
 * agent to itself, then makes one call with that client.
 *
 * <p>Arguments: {@code AGENT_JAR URL [ATTACHES]}; needs {@code -Djdk.attach.allowAttachSelf=true}.
 * Prints {@code status=} and {@code intercepted=}.
 */
public final class LateAttachApp {
  private LateAttachApp() {}

  public static void main(String[] args) throws Exception {
    HttpClient client = HttpClient.newHttpClient();
    int attaches = args.length > 2 ? Integer.parseInt(args[2]) : 1;
    for (int i = 0; i < attaches; i++) {
      VirtualMachine vm = VirtualMachine.attach(String.valueOf(ProcessHandle.current().pid()));
      try {
        vm.loadAgent(args[0]);
      } finally {
        vm.detach();
      }
    }
    HttpResponse<String> response =
        client.send(
            HttpRequest.newBuilder(URI.create(args[1])).build(),
            HttpResponse.BodyHandlers.ofString());
    System.out.println("status=" + response.statusCode());
    System.out.println("intercepted=" + AgentProbe.interceptedCalls());
  }
}
