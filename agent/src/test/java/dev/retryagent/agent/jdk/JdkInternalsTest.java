package dev.retryagent.agent.jdk;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retryagent.internal.jdk.ClientExecutor;
import java.lang.instrument.Instrumentation;
import java.lang.reflect.Proxy;
import java.net.http.HttpClient;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * A response given back after a late wait runs the application's handler on the client's executor,
 * for a client without one of the application's the JDK's own pool: the agent opens the package it
 * is in to itself ({@link JdkInternals}), then reaches it ({@link ClientExecutor}).
 */
class JdkInternalsTest {
  /** An Instrumentation that records its calls and does nothing. */
  private static Instrumentation recording(List<Object[]> calls) {
    return (Instrumentation)
        Proxy.newProxyInstance(
            Instrumentation.class.getClassLoader(),
            new Class<?>[] {Instrumentation.class},
            (proxy, method, args) -> {
              if (method.getName().equals("redefineModule")) {
                calls.add(args);
              }
              return null;
            });
  }

  @Test
  void asksToOpenTheInternalPackageToTheAgentOnlyWhereItIsClosed() {
    List<Object[]> calls = new java.util.ArrayList<>();
    Module http = HttpClient.class.getModule();
    Module closed = Object.class.getModule(); // java.base: the package is not open to it

    assertThat(JdkInternals.open(recording(calls), http, closed)).isTrue();
    assertThat(calls).hasSize(1);
    assertThat(calls.get(0))
        .containsExactly(
            http,
            Set.of(),
            Map.of(),
            Map.of("jdk.internal.net.http", Set.of(closed)),
            Set.of(),
            Map.of());

    // Open already (to itself), or no Instrumentation: nothing asked.
    assertThat(JdkInternals.open(recording(calls), http, http)).isFalse();
    assertThat(JdkInternals.open(null, http, closed)).isFalse();
    assertThat(calls).hasSize(1);
  }

  @Test
  void onceOpenTheClientsOwnPoolIsReachedAndRunsOnItsWorkers() throws Exception {
    // Opened to the tests' module by the build (--add-opens), as the agent opens it to its own.
    HttpClient client = HttpClient.newHttpClient();
    Executor pool = new ClientTransport(client, null).executor();
    assertThat(pool).isNotNull();
    CompletableFuture<String> ranOn = new CompletableFuture<>();
    pool.execute(() -> ranOn.complete(Thread.currentThread().getName()));
    assertThat(ranOn.get(20, TimeUnit.SECONDS)).matches("HttpClient-[0-9]+-Worker-[0-9]+");

    // The application's own executor: itself, public, nothing opened.
    Executor own = Runnable::run;
    assertThat(new ClientTransport(HttpClient.newBuilder().executor(own).build(), null).executor())
        .isSameAs(own);
  }
}
