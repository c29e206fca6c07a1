package dev.retryagent.config;

import static org.assertj.core.api.Assertions.assertThat;

import dev.retryagent.policy.Policy;
import java.lang.management.ManagementFactory;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** First match wins; no match gets defaults; every given list must match; no allocation. */
class RouteMatchingTest {
  private static AgentConfig config;

  @BeforeAll
  static void load() throws Exception {
    config =
        Yaml.load(
            "routes:",
            "  - name: payments",
            "    match:",
            "      hosts: [api.payments.example.com, '*.pay.internal:8443']",
            "      methods: [POST]",
            "      paths: ['/v1/charges/**']",
            "  - name: payments-read",
            "    match:",
            "      hosts: [api.payments.example.com]",
            "  - name: local",
            "    match: {hosts: ['[::1]:8080', 'localhost:8080']}",
            "  - name: health",
            "    match: {paths: [/health, '/*/health']}");
  }

  private static String route(String method, String host, int port, String path) {
    return config.resolve(method, host, port, path).routeName();
  }

  @Test
  void routesWithoutPathsNeedNoPath() throws Exception {
    assertThat(config.routesByPath()).isTrue();
    AgentConfig byHost =
        Yaml.load(
            "routes:",
            "  - name: payments",
            "    match: {hosts: [api.payments.example.com], methods: [POST]}");
    assertThat(byHost.routesByPath()).isFalse();
    assertThat(byHost.resolve("POST", "api.payments.example.com", 443, null).routeName())
        .isEqualTo("payments");
    assertThat(byHost.resolve("GET", "api.payments.example.com", 443, null))
        .isSameAs(byHost.defaultPolicy());
    assertThat(AgentConfig.defaults().routesByPath()).isFalse();
  }

  @Test
  void theFirstMatchingRouteWins() {
    assertThat(route("POST", "api.payments.example.com", 443, "/v1/charges")).isEqualTo("payments");
    assertThat(route("GET", "api.payments.example.com", 443, "/v1/charges"))
        .isEqualTo("payments-read");
  }

  @Test
  void aRequestNoRouteClaimsGetsTheDefaultPolicy() {
    assertThat(config.resolve("GET", "other.example.com", 443, "/"))
        .isSameAs(config.defaultPolicy());
    assertThat(route("GET", "other.example.com", 443, "/")).isEqualTo(Policy.DEFAULT_ROUTE);
  }

  @Test
  void everyGivenListMustMatch() {
    assertThat(route("POST", "x.pay.internal", 8443, "/v1/charges/ch_1")).isEqualTo("payments");
    assertThat(route("POST", "x.pay.internal", 443, "/v1/charges/ch_1")).isEqualTo("default");
    assertThat(route("POST", "x.pay.internal", 8443, "/v1/refunds")).isEqualTo("default");
    assertThat(route("PUT", "x.pay.internal", 8443, "/v1/charges")).isEqualTo("default");
  }

  @Test
  void matchesMethodsAndHostsInAnyCase() {
    assertThat(route("post", "API.Payments.Example.COM", 443, "/v1/charges/x"))
        .isEqualTo("payments");
  }

  @Test
  void matchesOnThePathWithoutItsQuery() {
    assertThat(route("POST", "api.payments.example.com", 443, "/v1/charges?expand=customer"))
        .isEqualTo("payments");
    assertThat(route("GET", "h", 80, "/health?verbose=1")).isEqualTo("health");
    assertThat(route("GET", "h", 80, "/api/health")).isEqualTo("health");
    assertThat(route("GET", "h", 80, "/api/v1/health")).isEqualTo("default");
  }

  @Test
  void matchesIpv6LiteralsWithOrWithoutBrackets() {
    assertThat(route("GET", "[::1]", 8080, "/")).isEqualTo("local");
    assertThat(route("GET", "::1", 8080, "/")).isEqualTo("local");
    assertThat(route("GET", "::1", 8081, "/")).isEqualTo("default");
    assertThat(route("GET", "localhost", 8080, "/x")).isEqualTo("local");
  }

  @Test
  void returnsTheSamePolicyObjectEveryTime() {
    Policy first = config.resolve("POST", "api.payments.example.com", 443, "/v1/charges");
    assertThat(config.resolve("POST", "api.payments.example.com", 443, "/v1/charges/2"))
        .isSameAs(first)
        .isSameAs(config.routes().get(0).policy());
  }

  @Test
  void routeMatchesCanBeAskedDirectly() {
    Route payments = config.routes().get(0);
    assertThat(payments.matches("POST", "a.pay.internal", 8443, "/v1/charges/1")).isTrue();
    assertThat(payments.matches(null, "a.pay.internal", 8443, "/v1/charges/1")).isFalse();
    assertThat(payments.matches("POST", null, 8443, "/v1/charges/1")).isFalse();
    assertThat(payments)
        .hasToString(
            "route payments {hosts=[api.payments.example.com, *.pay.internal:8443], methods=[POST],"
                + " paths=[/v1/charges/**]}");
  }

  @Test
  void resolvingAllocatesNothing() {
    com.sun.management.ThreadMXBean threads =
        (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
    long thread = Thread.currentThread().getId();
    String[][] requests = {
      {"POST", "x.pay.internal", "8443", "/v1/charges/ch_1?x=1"},
      {"GET", "API.PAYMENTS.EXAMPLE.COM", "443", "/v1/charges"},
      {"GET", "[::1]", "8080", "/"},
      {"GET", "nowhere.example", "443", "/a/b/c/health"},
      {"DELETE", "nowhere.example", "443", "/x/y/z"}
    };
    int[] ports = new int[requests.length];
    for (int i = 0; i < requests.length; i++) {
      ports[i] = Integer.parseInt(requests[i][2]);
    }
    int matched = 0;
    for (int i = 0; i < 20_000; i++) { // warm up so that the measurement sees compiled code
      String[] r = requests[i % requests.length];
      matched += config.resolve(r[0], r[1], ports[i % requests.length], r[3]).routeName().length();
    }
    long before = threads.getThreadAllocatedBytes(thread);
    for (int i = 0; i < 100_000; i++) {
      String[] r = requests[i % requests.length];
      matched += config.resolve(r[0], r[1], ports[i % requests.length], r[3]).routeName().length();
    }
    long allocated = threads.getThreadAllocatedBytes(thread) - before;
    assertThat(matched).isPositive();
    // 100k calls: one allocated object per call would be well over a megabyte.
    assertThat(allocated).isLessThan(64 * 1024);
  }
}
