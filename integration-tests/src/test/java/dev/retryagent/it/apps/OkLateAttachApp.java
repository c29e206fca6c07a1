package dev.retryagent.it.apps;

import com.sun.tools.attach.VirtualMachine;
import java.io.IOException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import okhttp3.Call;
import okhttp3.Callback;
import okhttp3.OkHttpClient;
import okhttp3.Request;
import okhttp3.Response;

/**
 * Loads OkHttp first (a client built, a call made and cancelled, so the builder and call classes
 * are loaded), then attaches the agent to itself, then uses a client built before the attach and
 * clients built after it.
 *
 * <p>Arguments: {@code AGENT_JAR URL}; needs {@code -Djdk.attach.allowAttachSelf=true}. Prints
 * {@code before.interceptors=}, {@code after.interceptors=}, {@code fromBefore.interceptors=}, then
 * {@code after.execute=}, {@code after.enqueue=} and {@code before.execute=} (status:body), and
 * {@code enqueuesTaken=} (the bridge's counter).
 */
public final class OkLateAttachApp {
  private OkLateAttachApp() {}

  public static void main(String[] args) throws Exception {
    OkHttpClient before = new OkHttpClient();
    before.newCall(new Request.Builder().url(args[1] + "/unused").build()).cancel();

    VirtualMachine vm = VirtualMachine.attach(String.valueOf(ProcessHandle.current().pid()));
    try {
      vm.loadAgent(args[0]);
    } finally {
      vm.detach();
    }

    OkHttpClient after = new OkHttpClient();
    OkHttpClient fromBefore = before.newBuilder().build();
    System.out.println("before.interceptors=" + OkVersions.interceptorNames(before));
    System.out.println("after.interceptors=" + OkVersions.interceptorNames(after));
    System.out.println("fromBefore.interceptors=" + OkVersions.interceptorNames(fromBefore));
    System.out.println("after.execute=" + execute(after, args[1] + "/a"));
    System.out.println("after.enqueue=" + enqueue(after, args[1] + "/b"));
    System.out.println("before.execute=" + execute(before, args[1] + "/c"));
    System.out.println("enqueuesTaken=" + AgentProbe.handled(AgentProbe.OKHTTP_ENQUEUE));
    System.exit(0);
  }

  private static String execute(OkHttpClient client, String url) throws IOException {
    try (Response r = client.newCall(new Request.Builder().url(url).build()).execute()) {
      return r.code() + ":" + r.body().string();
    }
  }

  private static String enqueue(OkHttpClient client, String url) throws Exception {
    CompletableFuture<String> f = new CompletableFuture<>();
    client
        .newCall(new Request.Builder().url(url).build())
        .enqueue(
            new Callback() {
              @Override
              public void onFailure(Call call, IOException e) {
                f.complete("failed:" + e);
              }

              @Override
              public void onResponse(Call call, Response response) {
                try (Response r = response) {
                  f.complete(r.code() + ":" + r.body().string());
                } catch (IOException e) {
                  f.complete("failed:" + e);
                }
              }
            });
    return f.get(20, TimeUnit.SECONDS);
  }
}
